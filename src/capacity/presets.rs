//! Built-in model presets: the real `config.json` of each public model, embedded from
//! `presets/models/` and parsed by the same parser as `--hf-config`.

use super::error::CapacityError;
use super::model::{ModelSpec, parse_hf_config};

/// (preset name, Hugging Face repository, config.json text)
const PRESETS: &[(&str, &str, &str)] = &[
    (
        "llama-3.1-8b",
        "meta-llama/Llama-3.1-8B-Instruct",
        include_str!("../../presets/models/llama-3.1-8b/config.json"),
    ),
    (
        "llama-3.1-70b",
        "meta-llama/Llama-3.1-70B-Instruct",
        include_str!("../../presets/models/llama-3.1-70b/config.json"),
    ),
    (
        "llama-3.1-405b",
        "meta-llama/Llama-3.1-405B-Instruct",
        include_str!("../../presets/models/llama-3.1-405b/config.json"),
    ),
    (
        "qwen3-8b",
        "Qwen/Qwen3-8B",
        include_str!("../../presets/models/qwen3-8b/config.json"),
    ),
    (
        "qwen3-32b",
        "Qwen/Qwen3-32B",
        include_str!("../../presets/models/qwen3-32b/config.json"),
    ),
    (
        "qwen3-235b-a22b",
        "Qwen/Qwen3-235B-A22B",
        include_str!("../../presets/models/qwen3-235b-a22b/config.json"),
    ),
    (
        "qwen3-next-80b-a3b",
        "Qwen/Qwen3-Next-80B-A3B-Instruct",
        include_str!("../../presets/models/qwen3-next-80b-a3b/config.json"),
    ),
    (
        "mixtral-8x7b",
        "mistralai/Mixtral-8x7B-Instruct-v0.1",
        include_str!("../../presets/models/mixtral-8x7b/config.json"),
    ),
    (
        "deepseek-v3",
        "deepseek-ai/DeepSeek-V3",
        include_str!("../../presets/models/deepseek-v3/config.json"),
    ),
    (
        "gpt-oss-20b",
        "openai/gpt-oss-20b",
        include_str!("../../presets/models/gpt-oss-20b/config.json"),
    ),
    (
        "gpt-oss-120b",
        "openai/gpt-oss-120b",
        include_str!("../../presets/models/gpt-oss-120b/config.json"),
    ),
    (
        "gemma-3-27b",
        "google/gemma-3-27b-it",
        include_str!("../../presets/models/gemma-3-27b/config.json"),
    ),
    (
        "jamba-mini-1.5",
        "ai21labs/AI21-Jamba-Mini-1.5",
        include_str!("../../presets/models/jamba-mini-1.5/config.json"),
    ),
    (
        "nemotron-h-8b",
        "nvidia/Nemotron-H-8B-Base-8K",
        include_str!("../../presets/models/nemotron-h-8b/config.json"),
    ),
];

/// Preset names with their Hugging Face repositories, in table order.
pub fn list() -> Vec<(&'static str, &'static str)> {
    PRESETS.iter().map(|(n, repo, _)| (*n, *repo)).collect()
}

/// Valid preset names, for error messages.
pub fn names() -> Vec<&'static str> {
    PRESETS.iter().map(|p| p.0).collect()
}

/// Parses the named preset (case-insensitive).
pub fn load(name: &str) -> Result<ModelSpec, CapacityError> {
    let Some((n, _, json)) = PRESETS
        .iter()
        .find(|p| p.0.eq_ignore_ascii_case(name.trim()))
    else {
        return Err(CapacityError::UnknownPreset {
            name: name.to_string(),
            valid: names().join(", "),
        });
    };
    parse_hf_config(n, json)
}
