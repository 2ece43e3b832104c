//! The latencies measured on every request, listed once: [`Latency`] names each one and
//! its row of the catalogue (`catalogue.rs`) says everything else about it — its names
//! in summaries, reports and flags, its histogram, its OTLP instrument, whether an
//! objective may bound it and whether it needs a streamed answer. Aggregation, reports,
//! gates, the exporter, the OTLP export, both front ends' validation and [`Slo`] derive
//! from that table; the value a record takes for each latency is
//! `RequestRecord::samples` (the definitions live with the record). Adding a latency is
//! one variant, one row and its definition in the record. Definitions:
//! docs/measurement.md.

mod catalogue;
mod slo;

use std::fmt;
use std::str::FromStr;

pub use catalogue::{Histogram, Objective, Otlp, Row, UserName};
pub use slo::Slo;

/// One latency distribution of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Latency {
    /// Time to first token, t_first − t_send.
    Ttft,
    /// Time to first answer token, t_first_answer − t_send (equals TTFT when the model
    /// does not reason).
    Ttfa,
    /// Time per output token after the first, vLLM's definition.
    Tpot,
    /// Per-token inter-token latency (a gap shared among the tokens of its chunk),
    /// weighted by tokens.
    Itl,
    /// Gaps between content chunks (what vLLM calls ITL).
    ChunkGap,
    /// End-to-end latency, t_last − t_send.
    E2e,
    /// t_first − t_sched.
    TtftFromSched,
    /// t_last − t_sched.
    E2eFromSched,
    /// t_send − t_sched, over every dispatched request whatever its outcome.
    DispatchLag,
}

impl Latency {
    /// Every latency, in the order the summaries list them (the catalogue's order).
    pub const ALL: [Latency; 9] = [
        Latency::Ttft,
        Latency::Ttfa,
        Latency::Tpot,
        Latency::Itl,
        Latency::ChunkGap,
        Latency::E2e,
        Latency::TtftFromSched,
        Latency::E2eFromSched,
        Latency::DispatchLag,
    ];

    /// Number of latencies (the length of [`Latency::ALL`]).
    pub const COUNT: usize = Latency::ALL.len();

    /// Position in [`Latency::ALL`], for arrays indexed by latency.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Its row of the catalogue.
    pub const fn row(self) -> &'static Row {
        &catalogue::ROWS[self.index()]
    }

    /// The name of its field in the aggregation summary and of its `sli` label value
    /// (`ttft`, `chunk_gap`, …).
    pub const fn name(self) -> &'static str {
        self.row().name
    }

    /// The key of its distribution in reports, in ms (`ttft_ms`, `e2el_ms`).
    pub const fn report_key(self) -> &'static str {
        self.row().report_key
    }

    /// Whether its summaries, report figures and histogram cover every dispatched
    /// request (dispatch lag), rather than successful requests only (every other
    /// latency). The OTLP export says its own: [`Otlp::failed_probes`].
    pub const fn covers_failures(self) -> bool {
        self.row().covers_failures
    }

    /// Whether only a streamed answer has it (a whole answer has only an end-to-end
    /// latency).
    pub const fn needs_streaming(self) -> bool {
        self.row().needs_streaming
    }

    /// The name users type for it, if they may name it.
    pub const fn user(self) -> Option<&'static UserName> {
        self.row().user.as_ref()
    }

    /// What an objective on it means, if one may bound it.
    pub const fn objective(self) -> Option<&'static Objective> {
        self.row().objective.as_ref()
    }

    /// Its histogram family, if the daemon exports one.
    pub const fn histogram(self) -> Option<&'static Histogram> {
        self.row().histogram.as_ref()
    }

    /// Its histogram in the OTLP export, if it has one.
    pub const fn otlp(self) -> Option<&'static Otlp> {
        self.row().otlp.as_ref()
    }

    /// Whether its histogram's buckets carry exemplars (the newest probe of each).
    pub const fn exemplars(self) -> bool {
        matches!(self.histogram(), Some(h) if h.exemplars)
    }

    /// Whether vLLM's benchmark names it too (its `--percentile-metrics`, `--goodput`).
    fn is_vllms(self) -> bool {
        self.user().is_some_and(|u| u.vllm)
    }

    /// The latencies users may name, vLLM's first (in their catalogue order), then
    /// llmprobe's own.
    pub fn named() -> impl Iterator<Item = Latency> {
        let named = |vllm: bool| {
            Latency::ALL
                .into_iter()
                .filter(move |l| l.user().is_some_and(|u| u.vllm == vllm))
        };
        named(true).chain(named(false))
    }

    /// vLLM's `--percentile-metrics` names: the default set of the bench table.
    pub fn vllm_metrics() -> impl Iterator<Item = Latency> {
        Latency::ALL.into_iter().filter(|l| l.is_vllms())
    }

    /// The latencies an objective may bound, vLLM's first, then llmprobe's own: the
    /// order reports write objectives in.
    pub fn objectives() -> impl Iterator<Item = Latency> {
        Latency::named().filter(|l| l.objective().is_some())
    }

    /// The name users type for it (`e2el`), else its summary name.
    pub fn user_name(self) -> &'static str {
        self.user().map_or(self.name(), |u| u.name)
    }

    /// The table column title of a latency users name (`TTFT ms`).
    pub fn title(self) -> &'static str {
        self.user().map_or(self.row().report_key, |u| u.title)
    }
}

/// Its user name where it has one, else its summary name.
impl fmt::Display for Latency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.user_name())
    }
}

/// Parses a name users type (`ttft`, `e2el` or `e2e`, …), case-insensitively.
impl FromStr for Latency {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Latency, String> {
        let want = s.trim().to_ascii_lowercase();
        Latency::named()
            .find(|l| {
                l.user()
                    .is_some_and(|u| u.name == want || u.aliases.contains(&want.as_str()))
            })
            .ok_or_else(|| {
                let names: Vec<&str> = Latency::named()
                    .filter_map(|l| l.user())
                    .map(|u| u.name)
                    .collect();
                format!(
                    "unknown metric {s:?}: expected {}",
                    crate::exit::listed(&names, "or")
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_is_in_index_order_and_the_catalogue_follows_it() {
        for (i, l) in Latency::ALL.iter().enumerate() {
            assert_eq!(l.index(), i);
            assert_eq!(l.row().latency, *l);
        }
        assert_eq!(Latency::COUNT, 9);
    }

    #[test]
    fn user_names_parse_back_and_errors_list_them() {
        for l in Latency::named() {
            assert_eq!(l.to_string().parse::<Latency>(), Ok(l));
        }
        let vllm: Vec<String> = Latency::vllm_metrics().map(|l| l.to_string()).collect();
        assert_eq!(vllm, ["ttft", "tpot", "itl", "e2el"]);
        assert_eq!("E2E".parse::<Latency>(), Ok(Latency::E2e));
        assert_eq!(
            "chunk_gap".parse::<Latency>(),
            Err("unknown metric \"chunk_gap\": expected ttft, tpot, itl, e2el or ttfa".into())
        );
    }

    #[test]
    fn objectives_are_vllms_then_llmprobes_own() {
        let names: Vec<&str> = Latency::objectives().map(Latency::name).collect();
        assert_eq!(names, ["ttft", "tpot", "e2e", "ttfa"]);
    }
}
