//! The file table of `docs/architecture.md` ("Inside the modules") checked against
//! `src/`: every file of a module directory is listed in its module's row, and every
//! listed file exists, so the table cannot drift from the tree.
//!
//! A row is `| `module` | `file.rs` (what it owns), `sub/file.rs`, … |`: each
//! backticked name outside parentheses is a file path below `src/<module>/`; text in
//! parentheses describes the file before it and may name anything.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// The heading the file table sits under; the table ends at the next heading.
const SECTION: &str = "## Inside the modules";

/// Module → the files its row lists (paths below `src/<module>/`).
pub fn table(doc: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let section = doc
        .lines()
        .skip_while(|l| l.trim() != SECTION)
        .skip(1)
        .take_while(|l| !l.starts_with('#'));
    for line in section {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 4 {
            continue;
        }
        let module = cells[1];
        let Some(module) = module.strip_prefix('`').and_then(|m| m.strip_suffix('`')) else {
            continue; // the header and the |---| line
        };
        out.entry(module.to_string())
            .or_default()
            .extend(listed_files(cells[2]));
    }
    out
}

/// The backticked names of a files cell that stand outside parentheses.
fn listed_files(cell: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut name: Option<String> = None;
    for c in cell.chars() {
        match (c, &mut name) {
            ('`', Some(n)) => {
                if depth == 0 {
                    out.push(std::mem::take(n));
                }
                name = None;
            }
            (c, Some(n)) => n.push(c),
            ('`', None) => name = Some(String::new()),
            ('(', None) => depth += 1,
            (')', None) => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    out
}

/// Every file inside a module directory of `src/` (`client/protocol/chat.rs`), leaving
/// out insta's `snapshots/` (test data); files directly in `src/` are modules of their
/// own, in the layer table instead.
pub fn module_files(src: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = fs::read_dir(&dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("dir entry").path();
            let rel = path.strip_prefix(src).expect("under src");
            if path.is_dir() {
                if !rel.ends_with("snapshots") {
                    stack.push(path);
                }
            } else if rel.components().count() > 1 {
                out.insert(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    out
}

/// Files missing from the table and listed files that do not exist, one line each.
pub fn mismatches(
    files: &BTreeSet<String>,
    table: &BTreeMap<String, BTreeSet<String>>,
) -> Vec<String> {
    let mut out = Vec::new();
    for file in files {
        let (module, rest) = file.split_once('/').expect("a file inside a module");
        if !table.get(module).is_some_and(|l| l.contains(rest)) {
            out.push(format!(
                "src/{file}: not in the `{module}` row of the file table of docs/architecture.md"
            ));
        }
    }
    for (module, listed) in table {
        for rest in listed {
            if !files.contains(&format!("{module}/{rest}")) {
                out.push(format!(
                    "docs/architecture.md: the `{module}` row lists `{rest}`, but src/{module}/{rest} does not exist"
                ));
            }
        }
    }
    out
}

#[test]
fn every_module_file_is_in_the_file_table_and_every_listed_file_exists() {
    let doc = fs::read_to_string(super::repo().join("docs/architecture.md"))
        .expect("docs/architecture.md");
    let table = table(&doc);
    assert!(
        table.len() >= 10,
        "file table not found under {SECTION:?} in docs/architecture.md: {table:?}"
    );
    let bad = mismatches(&module_files(&super::repo().join("src")), &table);
    assert!(
        bad.is_empty(),
        "the file table has drifted:\n{}",
        bad.join("\n")
    );
}

// --- The check on small fake tables: it must catch what it claims to catch. ---

const FAKE_DOC: &str = "## Layers\n\n| 1 | `record` | r |\n\n## Inside the modules\n\n\
| module | files |\n|---|---|\n\
| `client` | `mod.rs` (sends; see `other.rs`), `sse.rs`, `protocol/chat.rs` (the `Chat` (one) API) |\n\
| `web` | `tls.rs` |\n\n## Where each definition lives\n\n| `src/x.rs` | `y.rs` |\n";

fn fake_files(files: &[&str]) -> BTreeSet<String> {
    files.iter().map(|f| f.to_string()).collect()
}

#[test]
fn table_reads_names_outside_parentheses_in_its_section_only() {
    let t = table(FAKE_DOC);
    assert_eq!(t.keys().collect::<Vec<_>>(), ["client", "web"]);
    assert_eq!(
        t["client"].iter().collect::<Vec<_>>(),
        ["mod.rs", "protocol/chat.rs", "sse.rs"]
    );
}

#[test]
fn check_accepts_a_table_that_matches_the_tree() {
    let files = fake_files(&[
        "client/mod.rs",
        "client/sse.rs",
        "client/protocol/chat.rs",
        "web/tls.rs",
    ]);
    assert_eq!(mismatches(&files, &table(FAKE_DOC)), Vec::<String>::new());
}

#[test]
fn check_fails_on_a_file_missing_from_the_table() {
    let files = fake_files(&[
        "client/mod.rs",
        "client/sse.rs",
        "client/protocol/chat.rs",
        "client/protocol/embeddings.rs",
        "web/tls.rs",
        "mock/server.rs",
    ]);
    let bad = mismatches(&files, &table(FAKE_DOC));
    assert_eq!(bad.len(), 2, "{bad:?}");
    assert!(
        bad[0].starts_with("src/client/protocol/embeddings.rs: not in the `client` row"),
        "{bad:?}"
    );
    assert!(
        bad[1].starts_with("src/mock/server.rs: not in the `mock` row"),
        "{bad:?}"
    );
}

#[test]
fn check_fails_on_a_listed_file_that_does_not_exist() {
    let files = fake_files(&["client/mod.rs", "client/protocol/chat.rs", "web/tls.rs"]);
    let bad = mismatches(&files, &table(FAKE_DOC));
    assert_eq!(
        bad,
        [
            "docs/architecture.md: the `client` row lists `sse.rs`, but src/client/sse.rs does not exist"
        ]
    );
}

#[test]
fn module_files_leave_out_top_level_files_and_snapshots() {
    let dir = tempfile::tempdir().expect("temp dir");
    let src = dir.path();
    for f in [
        "lib.rs",
        "a/mod.rs",
        "a/b/c.rs",
        "a/page.css",
        "a/snapshots/x.snap",
    ] {
        let path = src.join(f);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, "").expect("write");
    }
    assert_eq!(
        module_files(src).into_iter().collect::<Vec<_>>(),
        ["a/b/c.rs", "a/mod.rs", "a/page.css"]
    );
}
