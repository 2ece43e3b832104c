//! Golden files of what users and Prometheus see, so a refactor that changes none of it
//! proves so: for a fixed seed, `bench --mock`'s table, `--json-out` and `--records`
//! (measured times masked, everything else exact), and the daemon's `/metrics` names,
//! help texts, types, label sets and bucket boundaries (values masked).
//!
//! Regenerate after an intended change with `LLMPROBE_GOLDEN_WRITE=1 cargo test --test it
//! golden_behaviour::`, and review the diff of `tests/fixtures/golden/`.

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::process::Process;
use serde_json::Value;

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/golden")
}

/// Compares `actual` with the golden file `name`, or writes it when asked to.
fn check_golden(name: &str, actual: &str) {
    let path = golden_dir().join(name);
    if std::env::var_os("LLMPROBE_GOLDEN_WRITE").is_some() {
        std::fs::create_dir_all(golden_dir()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (LLMPROBE_GOLDEN_WRITE=1 writes it)",
            path.display()
        )
    });
    if want != actual {
        let first = want
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(want.lines().count().min(actual.lines().count()));
        panic!(
            "{name} differs from its golden file at line {}:\n  golden: {:?}\n  actual: {:?}",
            first + 1,
            want.lines().nth(first),
            actual.lines().nth(first)
        );
    }
}

/// Fields that name the moment or place of a run, say whether this machine kept up, or
/// are random (a request's trace and span IDs).
const VARYING_KEYS: [&str; 6] = [
    "run",
    "started_at",
    "base_url",
    "client_behind",
    "trace_id",
    "span_id",
];

/// Floats (measured times, rates, ratios computed from them) and the `VARYING_KEYS`
/// become `<f>`; integers, strings, booleans, nulls and the shape stay exact.
fn mask_floats(v: &Value) -> Value {
    match v {
        Value::Number(n) if n.is_f64() => Value::String("<f>".into()),
        Value::Array(a) => Value::Array(a.iter().map(mask_floats).collect()),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| {
                    let masked = if VARYING_KEYS.contains(&k.as_str()) {
                        Value::String("<f>".into())
                    } else {
                        mask_floats(v)
                    };
                    (k.clone(), masked)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

fn masked_jsonl(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = String::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line).unwrap();
        out.push_str(&serde_json::to_string(&mask_floats(&v)).unwrap());
        out.push('\n');
    }
    out
}

/// The table with every number as `#`, runs of blanks as one space (the column widths
/// follow the numbers' widths), and without what this machine's speed decides: the
/// client-behind warning and its `!` mark.
fn masked_table(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines().filter(|l| !l.starts_with("WARNING")) {
        let mut masked = String::new();
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            if c.is_ascii_digit()
                && !masked.ends_with(|p: char| p.is_ascii_alphanumeric() || p == '_')
            {
                while let Some(&d) = chars.peek() {
                    if d.is_ascii_digit() || d == '.' {
                        chars.next();
                    } else {
                        break;
                    }
                }
                masked.push('#');
                if chars.peek() == Some(&'!') {
                    chars.next();
                }
            } else {
                masked.push(c);
            }
        }
        if !masked.is_empty() && masked.chars().all(|c| c == '-') {
            masked = "---".into(); // a rule as wide as the columns
        }
        let squeezed: Vec<&str> = masked.split_whitespace().collect();
        out.push_str(&squeezed.join(" "));
        out.push('\n');
    }
    out
}

#[test]
fn bench_mock_outputs_keep_their_shape() {
    let dir = tempfile::tempdir().unwrap();
    let json_out = dir.path().join("summary.jsonl");
    let records = dir.path().join("records.jsonl");
    let out = Command::new(env!("CARGO_BIN_EXE_llmprobe"))
        .args(
            "bench --mock --mock-ttft-ms 20 --mock-itl-ms 2 --mock-batch-slowdown 0 \
             --sweep 20,40 --num-requests 12 --warmup 2 --input-len 32 --output-len 6 \
             --seed 11 --no-progress --gate ttft-p99<=5000ms --gate success-ratio>=0.9"
                .split_whitespace(),
        )
        .arg("--json-out")
        .arg(&json_out)
        .arg("--records")
        .arg(&records)
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    check_golden(
        "bench_table.txt",
        &masked_table(&String::from_utf8_lossy(&out.stdout)),
    );
    check_golden("bench_json_out.jsonl", &masked_jsonl(&json_out));
    // Records arrive in completion order, which timing decides: sort them by id.
    let mut recs: Vec<String> = masked_jsonl(&records).lines().map(str::to_string).collect();
    recs.sort_by_key(|l| {
        let v: Value = serde_json::from_str(l).unwrap();
        (
            v["rate"].to_string(),
            v["id"].as_u64().unwrap_or(u64::MAX),
            l.clone(),
        )
    });
    check_golden("bench_records.jsonl", &(recs.join("\n") + "\n"));
}

fn http_get(addr: &str, path: &str) -> String {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).unwrap();
    body.split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default()
}

/// `# HELP`/`# TYPE` lines as they are; each sample as `name{labels}` without its value
/// (bucket boundaries are the `le` label, so they stay), sorted and de-duplicated;
/// process_* series, which depend on the OS, only by name; the cgroup series, present
/// only where the cgroup's `cpu.stat` is readable, not at all.
fn metric_shape(text: &str) -> String {
    let mut lines = BTreeSet::new();
    for line in text
        .lines()
        .filter(|l| !l.is_empty() && !l.contains("llmprobe_cgroup_"))
    {
        if line.starts_with('#') {
            lines.insert(line.to_string());
        } else if line.starts_with("process_") {
            lines.insert(line.split(['{', ' ']).next().unwrap().to_string());
        } else {
            lines.insert(mask_replica_port(line.rsplit_once(' ').unwrap().0));
        }
    }
    lines.into_iter().map(|l| l + "\n").collect()
}

/// The demo's replicas listen on ports picked at start: the shape keeps `replica`
/// with the port masked (both replicas then share their lines).
fn mask_replica_port(series: &str) -> String {
    const KEY: &str = "replica=\"127.0.0.1:";
    match series.split_once(KEY) {
        Some((head, rest)) => {
            let tail = rest.trim_start_matches(|c: char| c.is_ascii_digit());
            format!("{head}{KEY}PORT{tail}")
        }
        None => series.to_string(),
    }
}

#[test]
fn daemon_mock_metrics_keep_their_names_labels_and_buckets() {
    // Killed when dropped: a failed assertion leaves no daemon behind.
    let daemon = Process::daemon(&["daemon", "--mock", "--listen", "127.0.0.1:0"]);
    let addr = daemon.addr.to_string();
    // Every demo series exists once each scenario has answered and the engine view has
    // been scraped (twice, for the rates); wait for that, bounded. When checking, the
    // shape is polled until it is the golden one (a busy machine answers and scrapes
    // later, never differently), and the last one is compared at the deadline.
    let writing = std::env::var_os("LLMPROBE_GOLDEN_WRITE").is_some();
    let golden = std::fs::read_to_string(golden_dir().join("daemon_mock_metrics.txt"));
    let deadline = Instant::now() + Duration::from_secs(60);
    let shape = loop {
        let text = http_get(&addr, "/metrics");
        let done = text
            .lines()
            .filter(|l| l.starts_with("llmprobe_requests_total{"))
            .all(|l| !l.ends_with(" 0"));
        // The fleet's cost needs two scrape rounds with tokens generated between them.
        let ready = done
            && text.contains("llmprobe_engine_")
            && text.contains("llmprobe_requests_total{")
            && text.contains("llmprobe_fleet_cost_per_million_output_tokens_dollars{");
        if ready && writing {
            std::thread::sleep(Duration::from_secs(2));
            break metric_shape(&http_get(&addr, "/metrics"));
        }
        let shape = metric_shape(&text);
        if ready && golden.as_deref().is_ok_and(|g| *g == shape) {
            break shape;
        }
        if Instant::now() >= deadline {
            assert!(
                ready,
                "the demo's series did not all appear in 60 s:\n{text}"
            );
            break shape;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    check_golden("daemon_mock_metrics.txt", &shape);
}
