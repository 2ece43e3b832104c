//! Finds the line and column of a node in a YAML document by its path
//! (`targets[2].name`), so errors found after parsing (duplicate names, conflicting
//! fields) point at the right place like parse errors do.
//!
//! It walks the document with the YAML deserializer itself and fails on purpose at the
//! node: the deserializer stamps its own error with the node's position.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// One step of a path into the document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    Key(String),
    Index(usize),
    /// A line and column (1-based) inside the scalar at the path: where in a value
    /// (a regex) the problem is. Printed as nothing.
    Within(usize, usize),
}

/// A path into the config document, printed like serde_yaml_ng prints paths
/// (`targets[0].scenarios[1].name`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Path(pub Vec<Seg>);

impl Path {
    pub fn root() -> Self {
        Path(Vec::new())
    }

    pub fn key(&self, k: &str) -> Path {
        let mut p = self.clone();
        p.0.push(Seg::Key(k.to_string()));
        p
    }

    pub fn index(&self, i: usize) -> Path {
        let mut p = self.clone();
        p.0.push(Seg::Index(i));
        p
    }

    /// The place at `line`, `column` (1-based) inside this path's scalar value.
    pub fn within(&self, line: usize, column: usize) -> Path {
        let mut p = self.clone();
        p.0.push(Seg::Within(line, column));
        p
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str(".");
        }
        for (i, s) in self.0.iter().enumerate() {
            match s {
                Seg::Key(k) if i == 0 => f.write_str(k)?,
                Seg::Key(k) => write!(f, ".{k}")?,
                Seg::Index(n) => write!(f, "[{n}]")?,
                Seg::Within(..) => {}
            }
        }
        Ok(())
    }
}

const FOUND: &str = "\u{0}llmprobe-locate";

/// Line and column (1-based) of the node at `path`, or of its deepest existing parent.
pub fn locate(text: &str, path: &Path) -> Option<(usize, usize)> {
    if let Some((Seg::Within(line, column), node)) = path.0.split_last() {
        let at = locate(text, &Path(node.to_vec()))?;
        return Some(inside(text, at, (*line, *column)));
    }
    let de = serde_yaml_ng::Deserializer::from_str(text);
    let err = match (Walk { rest: &path.0 }).deserialize(de) {
        Ok(()) => return None,
        Err(e) => e,
    };
    let loc = err.location()?;
    Some((loc.line(), loc.column()))
}

/// The file position of `(line, column)` of the value of the scalar node that starts at
/// `node`: exact for a literal block (`|`, one value line per file line) and for a
/// one-line plain or quoted value without escapes; else the node itself.
fn inside(text: &str, node: (usize, usize), (line, column): (usize, usize)) -> (usize, usize) {
    let lines: Vec<&str> = text.lines().collect();
    let Some(first) = lines.get(node.0 - 1) else {
        return node;
    };
    let start: String = first.chars().skip(node.1 - 1).collect();
    if start.starts_with('|') {
        // Every line of the block is indented like its first one, which is stripped.
        let Some(content) = lines.get(node.0) else {
            return node;
        };
        let indent = content.chars().take_while(|c| *c == ' ').count();
        return (node.0 + line, indent + column);
    }
    if line != 1 || start.starts_with(['>', '\\']) {
        return node;
    }
    let quoted = start.starts_with(['"', '\'']);
    let before: String = start
        .chars()
        .skip(usize::from(quoted))
        .take(column - 1)
        .collect();
    if before.contains(['\\', '"', '\'']) {
        return node;
    }
    (node.0, node.1 + usize::from(quoted) + column - 1)
}

struct Walk<'a> {
    rest: &'a [Seg],
}

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML node")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Some((Seg::Key(want), rest)) = self.rest.split_first() else {
            return Err(de::Error::custom(FOUND));
        };
        while let Some(key) = map.next_key::<String>()? {
            if &key == want {
                return map.next_value_seed(Walk { rest });
            }
            map.next_value::<IgnoredAny>()?;
        }
        // The key is missing: point at the mapping that should hold it.
        Err(de::Error::custom(FOUND))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Some((Seg::Index(want), rest)) = self.rest.split_first() else {
            return Err(de::Error::custom(FOUND));
        };
        for _ in 0..*want {
            if seq.next_element::<IgnoredAny>()?.is_none() {
                return Err(de::Error::custom(FOUND));
            }
        }
        match seq.next_element_seed(Walk { rest })? {
            Some(()) => Ok(()),
            None => Err(de::Error::custom(FOUND)),
        }
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Err(E::custom(FOUND))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Err(E::custom(FOUND))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Err(E::custom(FOUND))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Err(E::custom(FOUND))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Err(E::custom(FOUND))
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Err(E::custom(FOUND))
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Err(E::custom(FOUND))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "listen: 0.0.0.0:9464\ntargets:\n  - name: a\n    model: m\n  - name: b\n    scenarios:\n      - name: s1\n      - name: s2\n";

    #[test]
    fn finds_nested_nodes() {
        let p = Path::root().key("targets").index(1).key("name");
        assert_eq!(p.to_string(), "targets[1].name");
        assert_eq!(locate(DOC, &p), Some((5, 11)));
        let p = Path::root()
            .key("targets")
            .index(1)
            .key("scenarios")
            .index(1)
            .key("name");
        assert_eq!(locate(DOC, &p), Some((8, 15)));
        assert_eq!(locate(DOC, &Path::root().key("listen")), Some((1, 9)));
    }

    #[test]
    fn a_missing_node_points_at_its_parent() {
        let p = Path::root().key("targets").index(0).key("base_url");
        assert_eq!(locate(DOC, &p), Some((3, 5)));
    }
}
