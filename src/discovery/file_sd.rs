//! The `file_sd` source, its block and its finder: Prometheus file_sd files matched by
//! a pattern, re-read on each refresh. As in Prometheus, a pattern (`*`, `?`) may only be in the file name, and
//! the syntax follows the extension (`.json`, `.yml`, `.yaml`). Writers replace a file
//! by renaming a new one over it, so each read sees one whole version.

use std::path::{Path, PathBuf};
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::DiscoveryError;
use super::replica::Found;
use super::sd_format::{self, Syntax};
use super::source::{BlockError, Discoverer, Finding, Needs, SourceKind, Step};

/// `file_sd: PATTERN` or `file_sd: {files: PATTERN, interval}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged, expecting = "file_sd: a file pattern or {files, interval}")]
pub enum FileSdFrom {
    Pattern(String),
    Full(FileSdFull),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FileSdFull {
    pub files: String,
    /// How often the files are read again (default 30s).
    #[serde(
        default,
        with = "crate::duration::opt_human",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub interval: Option<Duration>,
}

impl FileSdFrom {
    /// The pattern, and where in the block it is.
    fn pattern(&self) -> (&str, &'static [Step]) {
        match self {
            FileSdFrom::Pattern(p) => (p, &[]),
            FileSdFrom::Full(f) => (&f.files, &[Step::Key("files")]),
        }
    }
}

impl SourceKind for FileSdFrom {
    const NAME: &'static str = "file_sd";
    const HELP: &'static str = "Prometheus file_sd files: a pattern (`*`, `?` in the file \
        name only; `.json`,\n`.yml` or `.yaml`), or `{files: PATTERN, interval}` (default 30s).";
    const LABELS: bool = true;

    fn interval(&self) -> Option<Duration> {
        match self {
            FileSdFrom::Full(f) => f.interval,
            FileSdFrom::Pattern(_) => None,
        }
    }

    fn check(&self, _scheme: &str) -> Result<(), BlockError> {
        let (pattern, at) = self.pattern();
        FileSd::new(pattern).map_err(|e| BlockError::at(at, e))?;
        Ok(())
    }

    fn build(&self, _needs: Needs<'_>) -> Result<Box<dyn Discoverer>, DiscoveryError> {
        Ok(Box::new(FileSd::new(self.pattern().0)?))
    }
}

/// A directory and a file-name pattern in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSd {
    dir: PathBuf,
    name_pattern: String,
}

impl FileSd {
    pub fn new(pattern: &str) -> Result<Self, DiscoveryError> {
        let bad = |reason: &str| {
            DiscoveryError::input(format!("{}: {pattern:?}", FileSdFrom::NAME), reason)
        };
        let path = Path::new(pattern);
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| bad("no file name"))?;
        let dir = match path.parent() {
            Some(d) if d.as_os_str().is_empty() => PathBuf::from("."),
            Some(d) => d.to_path_buf(),
            None => return Err(bad("no file name")),
        };
        if dir.to_string_lossy().contains(['*', '?']) {
            return Err(bad("a pattern may only be in the file name"));
        }
        syntax_of(name).map_err(|_| bad("the file name must end in .json, .yml or .yaml"))?;
        Ok(FileSd {
            dir,
            name_pattern: name.to_string(),
        })
    }

    /// Every matching file, read whole, in name order. An unreadable directory or file,
    /// or a bad one, fails the whole refresh (the last good set is kept).
    pub fn read(&self) -> Result<Vec<Found>, DiscoveryError> {
        let read = |path: &Path, source| DiscoveryError::Read {
            path: path.to_path_buf(),
            source,
        };
        let mut paths = Vec::new();
        for entry in std::fs::read_dir(&self.dir).map_err(|e| read(&self.dir, e))? {
            let entry = entry.map_err(|e| read(&self.dir, e))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if matches_pattern(&self.name_pattern, name) && syntax_of(name).is_ok() {
                paths.push(entry.path());
            }
        }
        paths.sort();
        let mut found = Vec::new();
        for path in paths {
            let text = std::fs::read_to_string(&path).map_err(|e| read(&path, e))?;
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            let syntax = syntax_of(name)?;
            found.extend(sd_format::parse(
                &text,
                syntax,
                &path.display().to_string(),
            )?);
        }
        Ok(found)
    }
}

impl Discoverer for FileSd {
    fn kind(&self) -> &'static str {
        FileSdFrom::NAME
    }

    fn find(&self, _timeout: Duration) -> Finding<'_> {
        Box::pin(async move { self.read() })
    }
}

fn syntax_of(name: &str) -> Result<Syntax, DiscoveryError> {
    if name.ends_with(".json") {
        Ok(Syntax::Json)
    } else if name.ends_with(".yml") || name.ends_with(".yaml") {
        Ok(Syntax::Yaml)
    } else {
        Err(DiscoveryError::input(name, "not .json, .yml or .yaml"))
    }
}

/// Shell-style matching of one file name: `*` any run of characters, `?` one.
/// Hidden files (a leading `.`, such as a writer's temporary file) match only a pattern
/// that starts with `.`.
fn matches_pattern(pattern: &str, name: &str) -> bool {
    if name.starts_with('.') && !pattern.starts_with('.') {
        return false;
    }
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    // Iterative matching with one backtrack point for the last `*`.
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ni));
            pi += 1;
        } else if let Some((sp, sn)) = star {
            pi = sp + 1;
            ni = sn + 1;
            star = Some((sp, sn + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_like_a_shell() {
        assert!(matches_pattern("*.json", "a.json"));
        assert!(matches_pattern("r-?.json", "r-1.json"));
        assert!(matches_pattern("*", "x.yml"));
        assert!(!matches_pattern("*.json", "a.json.tmp"));
        assert!(!matches_pattern("*.json", ".a.json"));
        assert!(!matches_pattern("r-?.json", "r-12.json"));
    }

    #[test]
    fn patterns_outside_the_file_name_and_unknown_extensions_are_refused() {
        assert!(FileSd::new("/etc/*/r.json").is_err());
        assert!(FileSd::new("/etc/r/*.txt").is_err());
        assert!(FileSd::new("/").is_err());
        assert!(FileSd::new("/etc/r/*.yaml").is_ok());
    }

    #[test]
    fn files_are_read_in_name_order_and_a_missing_directory_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.json"), r#"[{"targets": ["b:1"]}]"#).unwrap();
        std::fs::write(dir.path().join("a.json"), r#"[{"targets": ["a:1"]}]"#).unwrap();
        std::fs::write(dir.path().join("c.yml"), "- targets: ['c:1']\n").unwrap();
        let sd = FileSd::new(&format!("{}/*.json", dir.path().display())).unwrap();
        let got: Vec<_> = sd
            .read()
            .unwrap()
            .into_iter()
            .map(|f| f.host_port)
            .collect();
        assert_eq!(got, ["a:1", "b:1"]);
        let yaml = FileSd::new(&format!("{}/*.yml", dir.path().display())).unwrap();
        assert_eq!(yaml.read().unwrap()[0].host_port, "c:1");

        let gone = FileSd::new(&format!("{}/nope/*.json", dir.path().display())).unwrap();
        assert_eq!(gone.read().unwrap_err().reason(), "read");
    }
}
