//! `llmprobe capacity` end to end: JSON contract, lists, errors and exit codes.

use assert_cmd::Command;
use predicates::prelude::*;

fn capacity() -> Command {
    let mut cmd = Command::cargo_bin("llmprobe").unwrap_or_else(|e| panic!("{e}"));
    cmd.arg("capacity");
    cmd
}

fn json(args: &[&str]) -> serde_json::Value {
    let out = capacity()
        .args(args)
        .arg("--json")
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn json_has_the_contract_keys_as_numbers() {
    let v = json(&["--preset", "llama-3.1-8b"]);
    for key in [
        "weight_bytes_per_gpu",
        "kv_bytes_per_token_per_gpu",
        "kv_pool_bytes_per_gpu",
        "kv_pool_tokens",
        "max_concurrent_sequences",
        "max_running_sequences",
        "decode_tokens_per_second_per_sequence",
        "decode_tokens_per_second_aggregate",
        "cost_per_million_output_tokens",
    ] {
        assert!(v[key].is_number(), "{key} = {}", v[key]);
    }
    assert_eq!(v["kv_bytes_per_token_per_gpu"], 131_072.0);
    assert_eq!(v["params_total"], 8_030_261_248u64);
    assert_eq!(v["max_running_sequences"], 51);
    // The inputs it used.
    assert_eq!(v["inputs"]["gpu"]["name"], "h100");
    assert_eq!(v["inputs"]["tp"], 1);
    assert_eq!(v["inputs"]["context"], 8192);
    assert_eq!(v["inputs"]["util"], 0.9);
    assert_eq!(v["inputs"]["block_size"], 16);
    assert_eq!(v["inputs"]["max_num_seqs"], 256);
    // A dense model has no expert bytes: 0, never -0.0.
    assert_eq!(v["decode_terms"]["expert_bytes_per_gpu"].to_string(), "0.0");
}

#[test]
fn deepseek_readme_case() {
    let v = json(&[
        "--preset",
        "deepseek-v3",
        "--gpu",
        "h200",
        "--tp",
        "8",
        "--weight-bytes",
        "1",
        "--kv-bytes",
        "1",
        "--context",
        "32768",
    ]);
    assert_eq!(v["kv_bytes_per_token_per_gpu"], 35_136.0);
    assert_eq!(v["inputs"]["gpu"]["memory_gib"], 139.8);
    let per_gpu = v["weight_bytes_per_gpu"].as_f64().unwrap_or_default();
    assert!((per_gpu - 671.026_419_2e9 / 8.0).abs() < 1.0, "{per_gpu}");
}

#[test]
fn hf_config_and_preset_share_the_parser() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/presets/models/mixtral-8x7b/config.json"
    );
    let a = json(&["--hf-config", path, "--tp", "2"]);
    let b = json(&["--preset", "mixtral-8x7b", "--tp", "2"]);
    assert_eq!(a["params_total"], b["params_total"]);
    assert_eq!(a["max_concurrent_sequences"], b["max_concurrent_sequences"]);
}

#[test]
fn human_output_shows_units_table_and_explain() {
    capacity()
        .args(["--preset", "llama-3.1-8b", "--explain"])
        .assert()
        .success()
        .stdout(predicate::str::contains("51.43 GiB"))
        .stdout(predicate::str::contains("GB = 10^9 bytes"))
        .stdout(predicate::str::contains("tok/s total"))
        .stdout(predicate::str::contains("crossover"))
        .stdout(predicate::str::contains(
            "kv/token/GPU   = attention layers 32 × 2 (K,V) × max(1, kv_heads 8 / tp 1) = 8 × head_dim 128 × 2 B = 131,072 B",
        ));
}

#[test]
fn list_presets_and_gpus() {
    let presets = capacity().arg("--list-presets").assert().success();
    let out = String::from_utf8_lossy(&presets.get_output().stdout).to_string();
    for name in [
        "llama-3.1-8b",
        "llama-3.1-70b",
        "llama-3.1-405b",
        "qwen3-8b",
        "qwen3-32b",
        "qwen3-235b-a22b",
        "mixtral-8x7b",
        "deepseek-v3",
        "gpt-oss-20b",
        "gpt-oss-120b",
        "gemma-3-27b",
        "qwen3-next-80b-a3b",
        "jamba-mini-1.5",
        "nemotron-h-8b",
    ] {
        assert!(out.contains(name), "{name} missing from\n{out}");
    }
    capacity()
        .arg("--list-gpus")
        .assert()
        .success()
        .stdout(predicate::str::contains("mi355x"))
        .stdout(predicate::str::contains("a100-40gb"));
}

fn fails_with(args: &[&str], message: &str) {
    capacity()
        .args(args)
        .assert()
        .code(2)
        .stderr(predicate::str::contains(message))
        .stderr(predicate::str::contains("panicked").not());
}

#[test]
fn bad_input_exits_2_with_a_clear_message() {
    fails_with(&["--preset", "llama-9b"], "valid presets: llama-3.1-8b");
    fails_with(
        &["--preset", "llama-3.1-8b", "--gpu", "v100"],
        "valid GPUs: h100, h100-pcie",
    );
    fails_with(
        &["--preset", "llama-3.1-8b", "--tp", "0"],
        "invalid --tp 0: must be at least 1",
    );
    fails_with(
        &["--preset", "llama-3.1-8b", "--util", "1.5"],
        "invalid --util 1.5: must be in (0, 1]",
    );
    fails_with(
        &["--preset", "llama-3.1-8b", "--util", "0"],
        "must be in (0, 1]",
    );
    fails_with(
        &["--preset", "llama-3.1-8b", "--weight-bytes", "-1"],
        "invalid --weight-bytes -1",
    );
    fails_with(
        &["--preset", "llama-3.1-8b", "--kv-bytes", "-0.5"],
        "invalid --kv-bytes -0.5",
    );
    fails_with(
        &["--preset", "llama-3.1-405b"],
        "the weights do not fit: 755.96 GiB",
    );
    fails_with(
        &["--preset", "llama-3.1-8b", "--context", "1000000"],
        "the KV pool cannot hold one sequence of 1000000 tokens: pool 51.432 GiB per GPU, one sequence needs 122.070 GiB",
    );
    fails_with(
        &["--preset", "nemotron-h-8b", "--tp", "3"],
        "invalid --tp 3 for this model: Mamba-2 conv width",
    );
    fails_with(&[], "no model given");
    fails_with(
        &["--hf-config", "/nonexistent/config.json"],
        "cannot read /nonexistent/config.json",
    );
}

#[test]
fn a_config_with_a_missing_field_names_it() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("config.json");
    std::fs::write(&path, r#"{"model_type": "llama", "hidden_size": 64}"#)
        .unwrap_or_else(|e| panic!("{e}"));
    let p = path.display().to_string();
    fails_with(&["--hf-config", &p], "has no field \"num_hidden_layers\"");
}

#[test]
fn context_beyond_max_position_embeddings_warns_but_succeeds() {
    capacity()
        .args(["--preset", "qwen3-8b", "--context", "65536"])
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "warning: --context 65536 is larger than the model's max_position_embeddings 40960",
        ));
}

#[test]
fn mamba_hybrids_through_hf_config_match_their_presets() {
    for (preset, tp) in [("jamba-mini-1.5", "2"), ("nemotron-h-8b", "1")] {
        let path = format!(
            "{}/presets/models/{preset}/config.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let a = json(&["--hf-config", &path, "--tp", tp]);
        let b = json(&["--preset", preset, "--tp", tp]);
        assert_eq!(a["params_total"], b["params_total"], "{preset}");
        assert_eq!(
            a["state_bytes_per_sequence_per_gpu"], b["state_bytes_per_sequence_per_gpu"],
            "{preset}"
        );
        assert!(
            b["state_bytes_per_sequence_per_gpu"]
                .as_f64()
                .unwrap_or_default()
                > 0.0
        );
    }
    capacity()
        .args(["--preset", "nemotron-h-8b", "--explain"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "recurrent state per sequence per GPU     49.41 MiB",
        ))
        .stdout(predicate::str::contains(
            "state/seq/GPU  = 24 Mamba-2 layers × 2,158,592 B = 51,806,208 B",
        ));
}

fn stdout(args: &[&str]) -> String {
    let out = capacity()
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap_or_else(|e| panic!("{e}"))
}

const DEEPSEEK_CASE: &[&str] = &[
    "--preset",
    "deepseek-v3",
    "--gpu",
    "h200",
    "--tp",
    "8",
    "--weight-bytes",
    "1",
    "--kv-bytes",
    "1",
    "--context",
    "32768",
];

/// Snapshots of what users and scripts read: any formatting or number change shows up
/// as a diff to review (`INSTA_UPDATE=always cargo test --test it capacity_cli::`, then
/// read the .snap diff before committing).
#[test]
fn snapshot_llama_3_1_8b_human_and_json() {
    insta::assert_snapshot!(
        "llama_3_1_8b_human",
        stdout(&["--preset", "llama-3.1-8b", "--explain"])
    );
    insta::assert_json_snapshot!("llama_3_1_8b_json", json(&["--preset", "llama-3.1-8b"]));
}

#[test]
fn snapshot_deepseek_v3_human_and_json() {
    let mut explain = DEEPSEEK_CASE.to_vec();
    explain.push("--explain");
    insta::assert_snapshot!("deepseek_v3_h200_tp8_fp8_human", stdout(&explain));
    insta::assert_json_snapshot!("deepseek_v3_h200_tp8_fp8_json", json(DEEPSEEK_CASE));
}

#[test]
fn snapshot_nemotron_h_human() {
    insta::assert_snapshot!(
        "nemotron_h_8b_human",
        stdout(&["--preset", "nemotron-h-8b", "--explain"])
    );
}
