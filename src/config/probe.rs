//! A scenario as a [`ProbeSpec`]: the YAML's spelling of each part, and where an error
//! about it points (FILE:LINE:COL comes from the path).

use super::schema::{Config, Scenario, Target};
use crate::probe::{Origin, Part, ProbeSpec, PromptSource, Syntax};
use crate::yaml_locate::Path;

/// The daemon's YAML keys.
pub(crate) struct Yaml;

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
            Part::Prompt => "prompt".into(),
            Part::PromptFile => "prompt_file".into(),
            Part::Messages => "messages".into(),
            Part::Dataset => "dataset".into(),
            Part::DatasetPath => "dataset_path".into(),
            Part::Trace => "trace".into(),
            Part::NoNonce => "nonce: false".into(),
            Part::Turns => "turns".into(),
            Part::Golden => "golden".into(),
            Part::Documents => "documents".into(),
            Part::Images => "images".into(),
        }
    }

    fn offers(&self, part: Part) -> bool {
        // A scenario has no dataset or trace of its own.
        !matches!(part, Part::Dataset | Part::DatasetPath | Part::Trace)
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
        stream: s.stream,
        slo: s.slo.or(cfg.defaults.slo).0,
        checks: s.checks.kinds(),
        structured_output: s.checks.structured_output,
        prompt: prompt_source(s),
        turns: s.turns,
        documents: s.documents.len(),
        top_document: s.checks.expect_top_document,
        images: s.images.is_some() || s.image_file.is_some(),
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
            Part::Prompt => sp.key("prompt"),
            Part::PromptFile => sp.key("prompt_file"),
            Part::Messages => sp.key("messages"),
            Part::NoNonce => sp.key("nonce"),
            Part::Turns => sp.key("turns"),
            Part::Golden => sp.key("golden"),
            Part::Documents => sp.key("documents"),
            Part::Images if s.image_file.is_some() => sp.key("image_file"),
            Part::Images => sp.key("images"),
            // Not offered: never refused here.
            Part::Dataset | Part::DatasetPath | Part::Trace => sp.clone(),
        };
        (at, refusal.reason)
    })?;
    Ok(spec)
}

/// Where scenario `s` asks its prompts to come from, every origin named, in the order a
/// refusal names them.
fn prompt_source(s: &Scenario) -> PromptSource {
    let given = [
        (Origin::Prompt, s.prompt.is_some()),
        (Origin::PromptFile, s.prompt_file.is_some()),
        (Origin::Messages, s.messages.is_some()),
        (Origin::Golden, s.golden.is_some()),
    ];
    PromptSource {
        given: given
            .into_iter()
            .filter_map(|(origin, set)| set.then_some(origin))
            .collect(),
        nonce: s.nonce,
        shared_prefix_tokens: s.shared_prefix_tokens,
    }
}

#[cfg(test)]
mod tests {
    use crate::config::plan::load_str;

    fn scenario(lines: &str) -> String {
        format!(
            "targets:\n  - name: t\n    base_url: http://127.0.0.1:1\n    model: m\n    endpoint: chat\n    scenarios:\n      - name: s\n{lines}"
        )
    }

    #[test]
    fn a_prompt_refusal_points_at_the_key_it_names() {
        let both = scenario("        prompt: hi\n        prompt_file: q.txt\n");
        assert_eq!(
            load_str(&both, "c.yaml").unwrap_err().to_string(),
            "c.yaml:9:22: targets[0].scenarios[0].prompt_file: set prompt, prompt_file or messages, not two of them"
        );
        // A fixed question is sent whole after the prefix, whatever input_tokens says.
        let prefixed = scenario(
            "        prompt: hi\n        nonce: false\n        shared_prefix_tokens: 500\n",
        );
        assert!(load_str(&prefixed, "c.yaml").is_ok());
    }
}
