//! `bench --lora-split` against its in-process mock serving the adapters: each request
//! names a model drawn from the seed, every one is answered, and the table and
//! `--json-out` carry a row per model built from exactly that model's records.

use std::collections::BTreeMap;

use crate::support::bench as bench_support;
use bench_support::{args, bench, jsonl};

#[test]
fn the_split_sends_each_model_its_share_and_reports_a_row_per_model() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("summary.jsonl");
    let records = dir.path().join("records.jsonl");
    let n = 400u64;
    let assert = bench()
        .args(args(&format!(
            "--mock --mock-ttft-ms 1 --mock-itl-ms 1 --rate inf --max-concurrency 16 \
             --num-requests {n} --input-len 16 --output-len 2 --seed 7 \
             --lora-split ad1=0.25,ad2=0.125"
        )))
        .arg("--json-out")
        .arg(&out)
        .arg("--records")
        .arg(&records)
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&assert.get_output().stdout).to_string();
    for row in ["  mock-llm ", "  ad1 ", "  ad2 "] {
        assert!(stdout.contains(row), "no {row:?} row in\n{stdout}");
    }
    let s = &jsonl(&out)[0];
    assert_eq!(s["completed"], n);
    let rows = s["by_model"].as_array().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r["model"].as_str().unwrap()).collect();
    assert_eq!(names, ["mock-llm", "ad1", "ad2"]);
    // The mock echoes the model each request named: records say which went where.
    let mut by_record: BTreeMap<String, u64> = BTreeMap::new();
    for r in jsonl(&records)
        .iter()
        .filter(|r| r.get("outcome").is_some())
    {
        assert_eq!(r["outcome"], "ok");
        *by_record
            .entry(r["model"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    for (row, share) in rows.iter().zip([0.625, 0.25, 0.125]) {
        let model = row["model"].as_str().unwrap();
        let count = row["completed"].as_u64().unwrap();
        assert_eq!(row["failed"], 0);
        assert_eq!(by_record[model], count, "{model}");
        // A seeded multinomial draw (the same every run): within 5 standard deviations.
        let (mean, sd) = (n as f64 * share, (n as f64 * share * (1.0 - share)).sqrt());
        assert!(
            (count as f64 - mean).abs() < 5.0 * sd,
            "{model}: {count} for {mean}"
        );
    }
    assert_eq!(
        rows.iter()
            .map(|r| r["completed"].as_u64().unwrap())
            .sum::<u64>(),
        n
    );
}

#[test]
fn a_bad_split_is_a_usage_error() {
    for (split, says) in [
        (
            "ad1=1.5",
            "--lora-split (item 1): weight 1.5 is outside (0, 1]",
        ),
        ("ad1=0.6,ad2=0.6", "add up to"),
        ("mock-llm=0.5", "is the base model"),
        ("ad1", "is not NAME=WEIGHT"),
    ] {
        bench()
            .args(args(&format!(
                "--mock --rate 1 --num-requests 1 --lora-split {split}"
            )))
            .assert()
            .code(2)
            .stderr(predicates::str::contains(says));
    }
    // A hosted API serves no engine's adapters; nor do Gemini's requests carry images.
    for (flags, says) in [
        (
            "--mock --provider bedrock --aws-region us-east-1 --model m --rate 1 --lora-split ad1=0.5",
            "not with --provider bedrock",
        ),
        (
            "--mock --provider gemini --model g --api-key k --rate 1 --images 1",
            "--provider: provider gemini (chat) sends no image parts",
        ),
    ] {
        bench()
            .args(args(flags))
            .assert()
            .code(2)
            .stderr(predicates::str::contains(says));
    }
}
