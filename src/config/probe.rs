//! A scenario as a [`ProbeSpec`]: the YAML's spelling of each part, and where an error
//! about it points (FILE:LINE:COL comes from the path).

use super::locate::Path;
use super::schema::{Config, Scenario, Target};
use crate::probe::{Part, ProbeSpec, Syntax};

/// The daemon's YAML keys.
struct Yaml;

impl Syntax for Yaml {
    fn name(&self, part: Part) -> String {
        match part {
            Part::Endpoint => "endpoint".into(),
            Part::InputTokens => "input_tokens".into(),
            Part::OutputTokens => "output_tokens".into(),
            Part::SharedPrefix => "shared_prefix_tokens".into(),
            Part::NoStream => "stream: false".into(),
            Part::Objective(l) => format!("slo.{}", l.name()),
            Part::Check(kind) => format!("checks.{kind}"),
            Part::StructuredOutput => "checks.structured_output".into(),
            Part::Messages => "messages".into(),
            Part::Turns => "turns".into(),
            Part::Golden => "golden".into(),
        }
    }
}

/// Scenario `s` (at `sp`) of target `t` (at `tp`) as a probe, checked by the rules
/// every probe follows.
pub fn check_probe(
    cfg: &Config,
    t: &Target,
    s: &Scenario,
    tp: &Path,
    sp: &Path,
) -> Result<ProbeSpec, (Path, String)> {
    let spec = ProbeSpec {
        endpoint: t.endpoint,
        input_tokens: s.input_tokens,
        output_tokens: s.output_tokens,
        shared_prefix_tokens: s.shared_prefix_tokens,
        stream: s.stream,
        slo: s.slo.or(cfg.defaults.slo).0,
        checks: s.checks.kinds(),
        structured_output: s.checks.structured_output,
        message_list: s.messages.is_some(),
        turns: s.turns,
        golden: s.golden.is_some(),
    };
    spec.validate(&Yaml).map_err(|refusal| {
        let at = match refusal.part {
            // The objective may come from `defaults.slo`: the scenario is where it
            // applies, so the message names it.
            Part::Objective(_) => {
                return (
                    sp.clone(),
                    format!(
                        "{} (it may come from defaults.slo; set it per scenario instead)",
                        refusal.message(&Yaml)
                    ),
                );
            }
            Part::Endpoint => tp.key("endpoint"),
            Part::InputTokens => sp.key("input_tokens"),
            Part::OutputTokens => sp.key("output_tokens"),
            Part::SharedPrefix => sp.key("shared_prefix_tokens"),
            Part::NoStream => sp.key("stream"),
            Part::Check(kind) => sp.key("checks").key(kind.as_str()),
            Part::StructuredOutput => sp.key("checks").key("structured_output"),
            Part::Messages => sp.key("messages"),
            Part::Turns => sp.key("turns"),
            Part::Golden => sp.key("golden"),
        };
        (at, refusal.reason)
    })?;
    Ok(spec)
}
