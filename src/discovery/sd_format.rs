//! Prometheus' target-group format, shared by file_sd and http_sd:
//! `[{"targets": ["host:port", ...], "labels": {"name": "value"}}]`, as JSON or YAML.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::DiscoveryError;
use super::replica::{Found, host_port};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TargetGroup {
    targets: Vec<String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
}

/// Which syntax a document is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    Json,
    Yaml,
}

/// Every target of a document, each with its group's labels. `origin` (a path or a URL)
/// names the document in errors.
pub fn parse(text: &str, syntax: Syntax, origin: &str) -> Result<Vec<Found>, DiscoveryError> {
    let format = |reason: String| DiscoveryError::Format {
        origin: origin.to_string(),
        reason,
    };
    let groups: Vec<TargetGroup> = match syntax {
        Syntax::Json => serde_json::from_str(text).map_err(|e| format(e.to_string()))?,
        // An empty YAML file is no groups, as Prometheus reads it.
        Syntax::Yaml if text.trim().is_empty() => Vec::new(),
        Syntax::Yaml => serde_yaml_ng::from_str(text).map_err(|e| format(e.to_string()))?,
    };
    let mut found = Vec::new();
    for group in groups {
        for target in group.targets {
            let host_port = host_port(&target, "target").map_err(|e| format(e.to_string()))?;
            found.push(Found {
                host_port,
                labels: group.labels.clone(),
            });
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_groups_give_each_target_its_group_labels() {
        let text = r#"[{"targets": ["10.0.0.5:8000", "10.0.0.6:8000"], "labels": {"zone": "a"}},
                       {"targets": ["[::1]:9000"]}]"#;
        let found = parse(text, Syntax::Json, "f.json").unwrap();
        assert_eq!(found.len(), 3);
        assert_eq!(found[1].host_port, "10.0.0.6:8000");
        assert_eq!(found[1].labels["zone"], "a");
        assert!(found[2].labels.is_empty());
    }

    #[test]
    fn yaml_groups_read_like_json() {
        let text = "- targets: ['a:1', 'b:2']\n  labels:\n    zone: z\n";
        let found = parse(text, Syntax::Yaml, "f.yml").unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].labels["zone"], "z");
        assert!(parse("", Syntax::Yaml, "f.yml").unwrap().is_empty());
    }

    #[test]
    fn bad_documents_are_errors_that_name_their_origin() {
        for (text, syntax) in [
            ("{", Syntax::Json),
            (r#"{"targets": []}"#, Syntax::Json),
            (r#"[{"targets": ["no-port"]}]"#, Syntax::Json),
            (r#"[{"targets": ["a:1"], "extra": 1}]"#, Syntax::Json),
            ("- targets: [a:0]", Syntax::Yaml),
        ] {
            let e = parse(text, syntax, "the/origin").unwrap_err();
            assert_eq!(e.reason(), "format", "{text}: {e}");
            assert!(e.to_string().starts_with("the/origin: "), "{e}");
        }
    }
}
