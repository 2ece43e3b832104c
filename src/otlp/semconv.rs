//! Which GenAI conventions' names the export emits: v1.41.0's (the last in the main
//! semantic-conventions repository), semantic-conventions-genai v0.1.0's, or both,
//! chosen as OpenTelemetry instrumentations choose during a migration: by
//! `OTEL_SEMCONV_STABILITY_OPT_IN`, read once when the daemon starts.

/// The environment variable and the values of it that llmprobe reads.
pub const OPT_IN_VAR: &str = "OTEL_SEMCONV_STABILITY_OPT_IN";
pub const OPT_IN_LATEST: &str = "gen_ai_latest_experimental";
pub const OPT_IN_DUP: &str = "gen_ai_latest_experimental/dup";

/// The names emitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Semconv {
    /// v1.41.0's names (no opt-in).
    #[default]
    V1_41,
    /// semantic-conventions-genai v0.1.0's names (`gen_ai_latest_experimental`).
    Genai,
    /// Both, for a backend in the middle of its move (`gen_ai_latest_experimental/dup`).
    Both,
}

impl Semconv {
    /// The choice of an `OTEL_SEMCONV_STABILITY_OPT_IN` value: a comma-separated list
    /// whose other entries (other domains' opt-ins) are ignored; `/dup` wins over the
    /// plain value when both are listed.
    pub fn from_opt_in(value: Option<&str>) -> Semconv {
        let entries: Vec<&str> = value
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .collect();
        if entries.contains(&OPT_IN_DUP) {
            Semconv::Both
        } else if entries.contains(&OPT_IN_LATEST) {
            Semconv::Genai
        } else {
            Semconv::V1_41
        }
    }

    /// v1.41.0's names are emitted.
    pub fn emits_old(self) -> bool {
        matches!(self, Semconv::V1_41 | Semconv::Both)
    }

    /// v0.1.0's names are emitted.
    pub fn emits_new(self) -> bool {
        matches!(self, Semconv::Genai | Semconv::Both)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_opt_in_is_read_as_the_migration_convention_says() {
        for (value, want) in [
            (None, Semconv::V1_41),
            (Some(""), Semconv::V1_41),
            (Some("http"), Semconv::V1_41),
            (Some("gen_ai_latest_experimental"), Semconv::Genai),
            (Some("http/dup, gen_ai_latest_experimental"), Semconv::Genai),
            (Some("gen_ai_latest_experimental/dup"), Semconv::Both),
            (
                Some("gen_ai_latest_experimental,gen_ai_latest_experimental/dup"),
                Semconv::Both,
            ),
            (Some("gen_ai_latest_experimentalx"), Semconv::V1_41),
        ] {
            assert_eq!(Semconv::from_opt_in(value), want, "{value:?}");
        }
        assert!(Semconv::Both.emits_old() && Semconv::Both.emits_new());
        assert!(!Semconv::Genai.emits_old() && !Semconv::V1_41.emits_new());
    }
}
