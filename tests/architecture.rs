//! The layer rules of `docs/architecture.md`, checked on `src/`.
//!
//! Two rules, both read from the source text (no compiler internals):
//! 1. Between top-level modules, imports run one way: a module may use only modules of a
//!    lower layer. The layers are the table in `docs/architecture.md` (written down once,
//!    parsed here); a top-level module missing from the table is an error too. The crate
//!    root (`src/lib.rs` outside its `mod`s) sits on top: no module names its items.
//! 2. Between the files of one module, imports form no cycle. A module's `mod.rs` is its
//!    front (it declares and re-exports its files, and its files may use its items), so
//!    the rule is about sibling files.
//!
//! And the file table of the same document lists every file of `src/`'s module
//! directories and no other (`file_table`).
//!
//! Test code (`#[cfg(test)]` items) is left out: a unit test may start a mock engine.

// A module of this test binary; its file sits in a directory so that cargo does not take
// it for a test binary of its own.
#[path = "architecture/file_table.rs"]
mod file_table;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// One `src/` file: its module path (`["daemon", "engine"]`; `mod.rs` and `lib.rs` give
/// their directory's path) and its non-test text.
struct SourceFile {
    rel: String,
    module: Vec<String>,
    is_mod_root: bool,
    text: String,
}

fn read_tree(src: &Path) -> Vec<SourceFile> {
    let mut files = Vec::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let mut entries: Vec<PathBuf> = fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
            .map(|e| e.expect("dir entry").path())
            .collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(src).expect("under src").to_path_buf();
                let text = fs::read_to_string(&path).expect("read source");
                files.push(source_file(&rel, &text));
            }
        }
    }
    files.sort_by(|a, b| a.rel.cmp(&b.rel));
    files
}

fn source_file(rel: &Path, text: &str) -> SourceFile {
    let mut module: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    let last = module.last().cloned().unwrap_or_default();
    let is_mod_root = matches!(last.as_str(), "mod" | "lib" | "main");
    if is_mod_root {
        module.pop();
    }
    SourceFile {
        rel: rel.to_string_lossy().replace('\\', "/"),
        module,
        is_mod_root,
        text: strip_tests(&strip_comments_and_strings(text)),
    }
}

/// Blanks comments and string/char literals (keeping newlines), so that paths inside
/// them are not read as imports and their braces do not confuse `strip_tests`.
fn strip_comments_and_strings(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let keep_newlines = |s: &[u8], out: &mut String| {
        out.extend(s.iter().filter(|&&c| c == b'\n').map(|_| '\n'));
    };
    while i < b.len() {
        let rest = &b[i..];
        let end = if rest.starts_with(b"//") {
            i + rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len())
        } else if rest.starts_with(b"/*") {
            i + 2 + find(&rest[2..], b"*/").map_or(rest.len() - 2, |p| p + 2)
        } else if let Some(hashes) = raw_string_start(rest) {
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            let body = hashes + 2 + usize::from(rest[0] == b'b');
            i + body + find(&rest[body..], &close).map_or(rest.len() - body, |p| p + close.len())
        } else if rest[0] == b'"' {
            i + 1 + string_end(&rest[1..])
        } else if let Some(len) = char_literal_len(rest) {
            i + len
        } else {
            out.push(rest[0] as char);
            i += 1;
            continue;
        };
        keep_newlines(&b[i..end.min(b.len())], &mut out);
        out.push(' ');
        i = end.min(b.len());
    }
    out
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// `r"`, `r#"`, `br##"`…: the number of `#`s, when `s` starts a raw string.
fn raw_string_start(s: &[u8]) -> Option<usize> {
    let s = s.strip_prefix(b"b").unwrap_or(s);
    let s = s.strip_prefix(b"r")?;
    let hashes = s.iter().take_while(|&&c| c == b'#').count();
    (s.get(hashes) == Some(&b'"')).then_some(hashes)
}

/// Bytes up to and including the closing quote of a string whose opening quote is gone.
fn string_end(s: &[u8]) -> usize {
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    s.len()
}

/// The length of a char literal (`'a'`, `'\n'`, `'{'`) at the start of `s`; `None` for a
/// lifetime (`'a`), which has no closing quote.
fn char_literal_len(s: &[u8]) -> Option<usize> {
    if s.first() != Some(&b'\'') {
        return None;
    }
    if s.get(1) == Some(&b'\\') {
        return s[2..].iter().position(|&c| c == b'\'').map(|p| p + 3);
    }
    let ch_len = std::str::from_utf8(&s[1..s.len().min(5)])
        .or_else(|e| std::str::from_utf8(&s[1..1 + e.valid_up_to()]))
        .ok()
        .and_then(|t| t.chars().next())
        .map(char::len_utf8)?;
    (s.get(1 + ch_len) == Some(&b'\'')).then_some(ch_len + 2)
}

/// Drops every item marked `#[cfg(test)]` (through its matching closing brace, or its
/// `;`). Expects comments and strings already blanked.
fn strip_tests(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let item = &rest[at..];
        let mut depth = 0usize;
        let mut end = item.len();
        for (i, c) in item.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = i + 1;
                    break;
                }
                _ => {}
            }
        }
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

/// Every path a file names through `crate::`, `super::`, `self::` or a child module
/// (`mod x;` then `x::…`), resolved to an absolute path (`["daemon", "engine", "scrub"]`).
/// `super` and `self` count from the inline `mod x { … }` a path sits in, if any.
fn imports(file: &SourceFile) -> BTreeSet<Vec<String>> {
    let children: BTreeSet<&str> = file
        .text
        .split(';')
        .filter_map(|s| {
            let s = s.trim();
            let s = s.strip_prefix("pub ").unwrap_or(s);
            let s = s.strip_prefix("pub(crate) ").unwrap_or(s);
            s.strip_prefix("mod ").map(str::trim)
        })
        .filter(|name| name.chars().all(|c| c.is_alphanumeric() || c == '_'))
        .collect();
    let inline = inline_modules(&file.text);
    let mut out = BTreeSet::new();
    for (at, path) in path_words(&file.text) {
        let mut here = file.module.clone();
        let mut nested = false;
        for (start, end, name) in &inline {
            if (*start..*end).contains(&at) {
                here.push(name.clone());
                nested = true;
            }
        }
        let first = path[0].as_str();
        let resolved: Vec<String> = match first {
            "crate" => path[1..].to_vec(),
            "super" => {
                let mut base = here.clone();
                let mut segs = &path[..];
                // In `a/b.rs`, `super` is `a`; in `a/b/mod.rs` (module a::b) too.
                while segs.first().is_some_and(|s| s == "super") {
                    base.pop();
                    segs = &segs[1..];
                }
                base.extend(segs.iter().cloned());
                base
            }
            "self" => here.iter().chain(&path[1..]).cloned().collect(),
            name if file.is_mod_root && !nested && children.contains(name) => {
                here.iter().chain(&path).cloned().collect()
            }
            _ => continue,
        };
        if !resolved.is_empty() {
            out.insert(resolved);
        }
    }
    out
}

/// The inline modules of a text (`mod x { … }`, test modules already gone): the byte
/// span of each body and its name, outer ones first.
fn inline_modules(text: &str) -> Vec<(usize, usize, String)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(p) = text[from..].find("mod ") {
        let at = from + p;
        from = at + 4;
        if at > 0 && is_ident(text.as_bytes()[at - 1]) {
            continue;
        }
        let rest = text[at + 4..].trim_start();
        let name: String = rest
            .bytes()
            .take_while(|&c| is_ident(c))
            .map(char::from)
            .collect();
        if name.is_empty() || !rest[name.len()..].trim_start().starts_with('{') {
            continue;
        }
        let open = at + 4 + text[at + 4..].find('{').expect("seen above");
        let mut depth = 0usize;
        let mut end = text.len();
        for (i, c) in text[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.push((open, end, name));
    }
    out
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Each path in the text with its byte offset: `a::b::c`, and each path of a `use`
/// group at any depth (`a::{b::{c, d}, e}` is `a::b::c`, `a::b::d` and `a::e`; `self`
/// and `*` in a group stand for its prefix). Single words are left out.
fn path_words(text: &str) -> Vec<(usize, Vec<String>)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !is_ident(bytes[i]) || (i > 0 && (is_ident(bytes[i - 1]) || bytes[i - 1] == b':')) {
            i += 1;
            continue;
        }
        let mut paths = Vec::new();
        let end = read_path(bytes, i, &[], &mut paths);
        out.extend(paths.into_iter().filter(|p| p.len() > 1).map(|p| (i, p)));
        i = end.max(i + 1);
    }
    out
}

/// Reads the path (or `use` tree) at `i` below `prefix` into `out`; returns where it ends.
fn read_path(b: &[u8], mut i: usize, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
    let mut segs = prefix.to_vec();
    loop {
        let start = i;
        while i < b.len() && is_ident(b[i]) {
            i += 1;
        }
        let seg = String::from_utf8_lossy(&b[start..i]).into_owned();
        if seg == "self" && !segs.is_empty() {
            out.push(segs);
            return i;
        }
        segs.push(seg);
        if !b[i..].starts_with(b"::") {
            out.push(segs);
            return i;
        }
        i = skip_space(b, i + 2);
        match b.get(i) {
            Some(&c) if is_ident(c) => {}
            Some(b'{') => return read_group(b, i, &segs, out),
            Some(b'*') => {
                out.push(segs);
                return i + 1;
            }
            _ => {
                out.push(segs);
                return i;
            }
        }
    }
}

/// Reads the group `{…}` opening at `i` below `prefix`; returns the index after its `}`.
fn read_group(b: &[u8], mut i: usize, prefix: &[String], out: &mut Vec<Vec<String>>) -> usize {
    i += 1;
    loop {
        i = skip_space(b, i);
        match b.get(i) {
            None => return i,
            Some(b'}') => return i + 1,
            Some(b',') => i += 1,
            Some(b'{') => i = read_group(b, i, prefix, out),
            Some(b'*') => {
                out.push(prefix.to_vec());
                i += 1;
            }
            Some(&c) if is_ident(c) => {
                i = read_path(b, i, prefix, out);
                // `x as y`: the alias names nothing new.
                let j = skip_space(b, i);
                if b[j..].starts_with(b"as") && b.get(j + 2).is_some_and(|&c| !is_ident(c)) {
                    i = skip_space(b, j + 2);
                    while i < b.len() && is_ident(b[i]) {
                        i += 1;
                    }
                }
            }
            // Not a `use` tree (a macro body, say): stop reading it as one.
            Some(_) => return i,
        }
    }
}

fn skip_space(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

/// The layer table of `docs/architecture.md`: rows `| N | `module` … |` (a row may name
/// several modules, which then share the layer and may not import each other).
fn layers(doc: &str) -> BTreeMap<String, u32> {
    let mut out = BTreeMap::new();
    for line in doc.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 4 {
            continue;
        }
        let Ok(layer) = cells[1].parse::<u32>() else {
            continue;
        };
        for name in cells[2].split(',') {
            let name = name
                .trim()
                .trim_matches('`')
                .trim_end_matches(".rs")
                .trim_end_matches('/');
            if !name.is_empty() {
                out.insert(name.to_string(), layer);
            }
        }
    }
    out
}

/// Upward or sideways imports between top-level modules, imports of crate-root items,
/// and modules missing from the table, one line each.
///
/// The crate root (`src/lib.rs` outside its `mod`s) sits on top, so a module may not
/// name an item defined (or re-exported) there; such an item belongs in a module of its
/// layer. A `#[macro_export]` macro is named from the root but belongs to the module
/// that defines it.
fn layer_violations(files: &[SourceFile], layers: &BTreeMap<String, u32>) -> Vec<String> {
    let top: BTreeSet<String> = files
        .iter()
        .filter_map(|f| f.module.first().cloned())
        .collect();
    let macros = exported_macros(files);
    let mut out = Vec::new();
    for name in &top {
        if !layers.contains_key(name) {
            out.push(format!(
                "src/{name}: not in the layer table of docs/architecture.md"
            ));
        }
    }
    for file in files {
        let Some(from) = file.module.first() else {
            continue;
        };
        let Some(&from_layer) = layers.get(from) else {
            continue;
        };
        for path in imports(file) {
            let head = &path[0];
            let to = if top.contains(head) {
                head
            } else if let Some(module) = macros.get(head) {
                module
            } else {
                out.push(format!(
                    "src/{}: imports `{}` from the crate root (src/lib.rs), which sits on top; move it into a module of its layer",
                    file.rel,
                    path.join("::"),
                ));
                continue;
            };
            if to == from {
                continue;
            }
            let Some(&to_layer) = layers.get(to) else {
                continue;
            };
            if to_layer >= from_layer {
                out.push(format!(
                    "src/{}: imports `{}` ({to}, layer {to_layer}) from {from} (layer {from_layer})",
                    file.rel,
                    path.join("::"),
                ));
            }
        }
    }
    out
}

/// `#[macro_export]` macros (named `crate::name`) → the top-level module defining each.
fn exported_macros(files: &[SourceFile]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for file in files {
        let Some(module) = file.module.first() else {
            continue;
        };
        for (at, _) in file.text.match_indices("#[macro_export]") {
            let rest = &file.text[at..];
            let Some(p) = rest.find("macro_rules!") else {
                continue;
            };
            let name: String = rest[p + "macro_rules!".len()..]
                .trim_start()
                .bytes()
                .take_while(|&c| is_ident(c))
                .map(char::from)
                .collect();
            out.insert(name, module.clone());
        }
    }
    out
}

/// Cycles among the sibling files of each module, one line each.
fn file_cycles(files: &[SourceFile]) -> Vec<String> {
    // Sibling files: non-root files (`a/b.rs`, or `a/b/mod.rs` as a unit) of one parent.
    let units: BTreeSet<Vec<String>> = files.iter().map(|f| f.module.clone()).collect();
    let mut edges: BTreeMap<Vec<String>, BTreeSet<Vec<String>>> = BTreeMap::new();
    for file in files {
        if file.module.is_empty() {
            continue;
        }
        let parent = &file.module[..file.module.len() - 1];
        for path in imports(file) {
            // The longest module prefix of the path that is a sibling unit of this file.
            let target = (1..=path.len())
                .rev()
                .map(|n| path[..n].to_vec())
                .find(|p| units.contains(p));
            let Some(target) = target else { continue };
            let sibling =
                target.len() == file.module.len() && target[..target.len() - 1] == *parent;
            if sibling && target != file.module {
                edges.entry(file.module.clone()).or_default().insert(target);
            }
        }
    }
    let mut out = Vec::new();
    for (from, tos) in &edges {
        for to in tos {
            if from < to && reaches(&edges, to, from) {
                out.push(format!(
                    "src/{}  <->  src/{}: files of one module import each other",
                    from.join("/"),
                    to.join("/")
                ));
            }
        }
    }
    out
}

fn reaches(
    edges: &BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
    from: &[String],
    to: &[String],
) -> bool {
    let mut seen = BTreeSet::new();
    let mut stack = vec![from.to_vec()];
    while let Some(node) = stack.pop() {
        if node == to {
            return true;
        }
        if seen.insert(node.clone()) {
            stack.extend(edges.get(&node).into_iter().flatten().cloned());
        }
    }
    false
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn imports_between_modules_run_down_the_layers() {
    let doc =
        fs::read_to_string(repo().join("docs/architecture.md")).expect("docs/architecture.md");
    let layers = layers(&doc);
    assert!(
        layers.len() >= 10,
        "layer table not found in docs/architecture.md: {layers:?}"
    );
    let violations = layer_violations(&read_tree(&repo().join("src")), &layers);
    assert!(
        violations.is_empty(),
        "imports against the layers:\n{}",
        violations.join("\n")
    );
}

#[test]
fn files_of_one_module_import_one_way() {
    let cycles = file_cycles(&read_tree(&repo().join("src")));
    assert!(
        cycles.is_empty(),
        "file-level import cycles:\n{}",
        cycles.join("\n")
    );
}

// --- The checker on small fake trees: it must catch what it claims to catch. ---

fn fake_tree(files: &[(&str, &str)]) -> Vec<SourceFile> {
    files
        .iter()
        .map(|(rel, text)| source_file(Path::new(rel), text))
        .collect()
}

fn fake_layers() -> BTreeMap<String, u32> {
    layers(
        "| layer | module | job |\n|---|---|---|\n| 0 | `exit` | e |\n| 1 | `record` | r |\n| 2 | `client`, `schedule` | c |\n| 3 | `bench` | b |\n",
    )
}

#[test]
fn checker_accepts_downward_imports() {
    let tree = fake_tree(&[
        ("record.rs", "pub struct R;"),
        (
            "client/mod.rs",
            "mod http;\nuse crate::record::R;\npub use http::get;",
        ),
        (
            "client/http.rs",
            "use super::super::record::R;\npub fn get() {}",
        ),
        ("bench/mod.rs", "use crate::{client::get, record::R};"),
    ]);
    assert_eq!(
        layer_violations(&tree, &fake_layers()),
        Vec::<String>::new()
    );
    assert_eq!(file_cycles(&tree), Vec::<String>::new());
}

#[test]
fn checker_fails_on_an_upward_import() {
    let tree = fake_tree(&[
        ("record.rs", "use crate::bench::Gate;\npub struct R;"),
        ("bench/mod.rs", "use crate::record::R;\npub struct Gate;"),
    ]);
    let v = layer_violations(&tree, &fake_layers());
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(
        v[0].contains("src/record.rs") && v[0].contains("bench::Gate"),
        "{v:?}"
    );
}

#[test]
fn checker_fails_on_a_sideways_import_and_an_unknown_module() {
    let tree = fake_tree(&[
        ("client/mod.rs", "fn f() { crate::schedule::next(); }"),
        ("schedule.rs", "pub fn next() {}"),
        ("newthing.rs", ""),
    ]);
    let v = layer_violations(&tree, &fake_layers());
    assert_eq!(v.len(), 2, "{v:?}");
    assert!(
        v.iter()
            .any(|l| l.contains("src/newthing: not in the layer table")),
        "{v:?}"
    );
    assert!(
        v.iter()
            .any(|l| l.contains("src/client/mod.rs") && l.contains("schedule::next")),
        "{v:?}"
    );
}

#[test]
fn checker_finds_a_cycle_between_sibling_files() {
    let tree = fake_tree(&[
        ("daemon/mod.rs", "mod engine;\nmod target;"),
        ("daemon/engine.rs", "use super::target::scrub;"),
        (
            "daemon/target.rs",
            "use super::engine::{TtftWindow, scrape_loop};\npub fn scrub() {}",
        ),
    ]);
    let c = file_cycles(&tree);
    assert_eq!(
        c,
        vec!["src/daemon/engine  <->  src/daemon/target: files of one module import each other"]
    );
}

#[test]
fn checker_ignores_tests_comments_and_strings() {
    let tree = fake_tree(&[
        (
            "record.rs",
            "// uses crate::bench::Gate\nconst S: &str = \"crate::bench::Gate\";\nconst R: &str = r#\"{ crate::bench::X }\"#;\n#[cfg(test)]\nmod tests { use crate::bench::Gate; fn f() { let c = '{'; } }\npub struct R;",
        ),
        ("bench/mod.rs", "pub struct Gate;"),
    ]);
    assert_eq!(
        layer_violations(&tree, &fake_layers()),
        Vec::<String>::new()
    );
}

#[test]
fn path_words_expand_groups_at_any_depth() {
    let words = path_words("use a::{b::{c, d::{e as f, self}}, g, h::*};\nuse i::{\n    j,\n};");
    let got: Vec<String> = words.iter().map(|(_, w)| w.join("::")).collect();
    assert_eq!(
        got,
        ["a::b::c", "a::b::d::e", "a::b::d", "a::g", "a::h", "i::j"]
    );
}

#[test]
fn checker_fails_on_an_import_in_a_nested_group() {
    // `bench` is named after a nested group has closed, and inside one two levels deep.
    for text in [
        "use crate::{record::{R, S}, bench::Gate};",
        "use crate::{record::R, client::{get, x::{y, z}}, bench::{plan::{Gate}}};",
    ] {
        let tree = fake_tree(&[
            ("record.rs", "pub struct R;"),
            ("client/mod.rs", text),
            ("bench/mod.rs", "pub struct Gate;"),
        ]);
        let v = layer_violations(&tree, &fake_layers());
        assert_eq!(v.len(), 1, "{text}: {v:?}");
        assert!(
            v[0].contains("src/client/mod.rs")
                && v[0].contains("bench")
                && v[0].contains("(bench, layer 3)"),
            "{text}: {v:?}"
        );
    }
}

#[test]
fn checker_finds_a_cycle_through_a_nested_group() {
    let tree = fake_tree(&[
        ("daemon/mod.rs", "mod engine;\nmod shared;\nmod target;"),
        ("daemon/shared.rs", "pub struct A;"),
        (
            "daemon/engine.rs",
            "use super::{shared::{A}, target::scrub};",
        ),
        (
            "daemon/target.rs",
            "use super::{engine::{x::{Y}}};\npub fn scrub() {}",
        ),
    ]);
    assert_eq!(
        file_cycles(&tree),
        vec!["src/daemon/engine  <->  src/daemon/target: files of one module import each other"]
    );
}

#[test]
fn checker_fails_on_an_item_of_the_crate_root() {
    // The root sits on top: whichever way a module names a root item, it is an import
    // from above.
    for (file, text) in [
        ("record.rs", "pub fn f() { crate::install(); }"),
        ("record.rs", "use super::install;"),
        ("client/mod.rs", "use crate::{record::R, install};"),
        ("client/http.rs", "fn f() { super::super::install() }"),
    ] {
        let tree = fake_tree(&[
            (
                "lib.rs",
                "pub mod client;\npub mod record;\npub fn install() {}",
            ),
            ("record.rs", "pub struct R;"),
            ("client/mod.rs", "mod http;"),
            (file, text),
        ]);
        let v = layer_violations(&tree, &fake_layers());
        assert_eq!(v.len(), 1, "{file}: {text}: {v:?}");
        assert!(
            v[0].contains(&format!("src/{file}"))
                && v[0].contains("`install`")
                && v[0].contains("crate root"),
            "{file}: {text}: {v:?}"
        );
    }
}

#[test]
fn checker_reads_a_fake_src_dir_with_a_root_item() {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path();
    for (f, text) in [
        (
            "lib.rs",
            "pub mod bench;\npub mod exit;\npub fn install() {}\npub fn run() { bench::go(); install(); }",
        ),
        ("main.rs", "fn main() { llmprobe::install(); }"),
        ("exit.rs", "pub struct Usage;"),
        ("bench/mod.rs", "pub fn go() { crate::install(); }"),
    ] {
        let path = src.join(f);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, text).expect("write");
    }
    let v = layer_violations(&read_tree(src), &fake_layers());
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(
        v[0].starts_with("src/bench/mod.rs: imports `install`"),
        "{v:?}"
    );
}

#[test]
fn checker_accepts_exported_macros_and_inline_modules() {
    // A `#[macro_export]` macro is named from the root but belongs to its module; inside
    // an inline `mod`, `super` is the file's module, not the root.
    let tree = fake_tree(&[
        ("lib.rs", "pub mod exit;\npub mod record;\npub fn run() {}"),
        (
            "exit.rs",
            "#[macro_export]\nmacro_rules! bail { () => { $crate::exit::Usage } }\npub struct Usage;",
        ),
        (
            "record.rs",
            "fn parse() {}\npub mod secs {\n    pub fn f() { super::parse(); crate::bail!(); self::g() }\n    fn g() {}\n}",
        ),
    ]);
    assert_eq!(
        layer_violations(&tree, &fake_layers()),
        Vec::<String>::new()
    );
}

#[test]
fn checker_fails_on_an_exported_macro_of_a_higher_module() {
    let tree = fake_tree(&[
        ("record.rs", "fn f() { crate::gate!(); }"),
        (
            "bench/mod.rs",
            "#[macro_export]\nmacro_rules! gate { () => {} }",
        ),
    ]);
    let v = layer_violations(&tree, &fake_layers());
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(
        v[0].contains("src/record.rs")
            && v[0].contains("`gate`")
            && v[0].contains("(bench, layer 3)"),
        "{v:?}"
    );
}
