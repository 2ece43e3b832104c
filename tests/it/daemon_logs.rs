//! The daemon's logs as production reads them: no colour codes when stderr is not a
//! terminal, JSON lines as flat objects with the probe's fields, and a failing target
//! or answer check logged by state change (its first failure, a summary per interval,
//! its recovery) while `/metrics` counts every failure and debug level still shows
//! every probe.

use crate::support::daemon as daemon_support;

use std::net::SocketAddr;
use std::time::Duration;

use crate::support::process::{Process, llmprobe};
use daemon_support::*;
use serde_json::Value;

/// A daemon binary whose stderr lines are read as they come.
struct Daemon(Process);

impl std::ops::Deref for Daemon {
    type Target = Process;

    fn deref(&self) -> &Process {
        &self.0
    }
}

impl Daemon {
    fn spawn(args: &[&str]) -> Daemon {
        let mut cmd = llmprobe();
        cmd.args(args).env_remove("NO_COLOR").env_remove("RUST_LOG");
        Daemon(Process::daemon_from(cmd))
    }

    fn lines(&self) -> Vec<String> {
        self.stderr_lines()
    }

    /// Waits until the log so far satisfies `done`.
    async fn wait_for_log(&self, what: &str, done: impl Fn(&[String]) -> bool) {
        let limit = Duration::from_secs(60);
        let deadline = tokio::time::Instant::now() + limit;
        while !done(&self.lines()) {
            assert!(
                tokio::time::Instant::now() < deadline,
                "no {what} in the log within {limit:?}:\n{}",
                self.lines().join("\n")
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// SIGTERM; returns every stderr line.
    fn terminate(self) -> Vec<String> {
        let (ok, _, stderr) = self.0.stop();
        assert!(ok);
        stderr.lines().map(str::to_string).collect()
    }
}

/// The JSON objects of a log (panics on a line that is not one).
fn objects(lines: &[String]) -> Vec<serde_json::Map<String, Value>> {
    lines
        .iter()
        .map(|l| match serde_json::from_str(l) {
            Ok(Value::Object(o)) => o,
            _ => panic!("not a JSON object: {l}"),
        })
        .collect()
}

fn text<'a>(o: &'a serde_json::Map<String, Value>, key: &str) -> &'a str {
    o.get(key).and_then(Value::as_str).unwrap_or("")
}

fn number(o: &serde_json::Map<String, Value>, key: &str) -> f64 {
    o.get(key)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("no number {key} in {o:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirected_logs_carry_no_colour_codes() {
    let d = Daemon::spawn(&[
        "daemon",
        "--mock",
        "--listen",
        "127.0.0.1:0",
        "--mock-fault",
        "http_500:0.5",
    ]);
    // Half the probes fail: chat-short's first failure comes soon, whichever scenario's
    // comes first.
    d.wait_for_log("probe failed", |l| {
        l.iter().any(|l| {
            l.contains("WARN") && l.contains("probe failed") && l.contains("scenario=chat-short")
        })
    })
    .await;
    let lines = d.terminate();
    let escapes: Vec<&String> = lines.iter().filter(|l| l.contains('\x1b')).collect();
    assert!(escapes.is_empty(), "escape codes in {escapes:?}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains(" WARN ") && l.contains("scenario=chat-short")),
        "{lines:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_lines_are_flat_objects_with_the_probe_fields() {
    let d = Daemon::spawn(&[
        "--log-format",
        "json",
        "daemon",
        "--mock",
        "--listen",
        "127.0.0.1:0",
        "--mock-fault",
        "http_500:0.5",
    ]);
    d.wait_for_log("probe failed", |l| {
        l.iter().any(|l| l.contains("\"probe failed\""))
    })
    .await;
    let lines = d.terminate();
    let all = objects(&lines);
    for o in &all {
        for key in ["timestamp", "level", "message"] {
            assert!(o.contains_key(key), "no {key} in {o:?}");
        }
    }
    let failed = all
        .iter()
        .find(|o| text(o, "message") == "probe failed")
        .unwrap();
    assert_eq!(text(failed, "level"), "WARN");
    assert!(text(failed, "target").starts_with("mock"), "{failed:?}");
    assert!(!text(failed, "scenario").is_empty(), "{failed:?}");
    assert_eq!(text(failed, "reason"), "http_5xx");
    assert!(
        failed.get("probe_id").is_some_and(Value::is_u64),
        "{failed:?}"
    );
    assert!(text(failed, "error").contains("HTTP 500"), "{failed:?}");
    // No replicas yet: no replica field, and no `fields` wrapper.
    assert!(!failed.contains_key("replica") && !failed.contains_key("fields"));
}

/// A port nothing listens on (until the test starts the mock there).
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_logs_its_start_a_summary_per_interval_and_its_end() {
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let (_dir, path) = config_file(&format!(
        "engine_scrape_interval: 100ms
failure_summary_interval: 1s
self_check: {{enabled: false}}
targets:
  - name: down
    base_url: {base}
    model: mock-llm
    rate: 20/s
    engine_metrics_url: {base}/metrics
    timeouts: {{connect: 2s}}
    scenarios: [{{name: s, input_tokens: 16, output_tokens: 2}}]
"
    ));
    let d = Daemon::spawn(&[
        "--log-format",
        "json",
        "--log-level",
        "info,llmprobe=debug",
        "daemon",
        "--listen",
        "127.0.0.1:0",
        "--config",
        path.to_str().unwrap(),
    ]);
    // Summaries of the probes carry their scenario, the engine scraper's none.
    let summaries = |lines: &[String], probes: bool| {
        lines
            .iter()
            .filter(|l| {
                l.contains("failed with connect in the last")
                    && l.contains("\"scenario\":\"s\"") == probes
            })
            .count()
    };
    d.wait_for_log("two summaries of each", |l| {
        summaries(l, true) >= 2 && summaries(l, false) >= 2
    })
    .await;
    let mock = llmprobe::mock::start(
        llmprobe::mock::MockConfig::default(),
        SocketAddr::from(([127, 0, 0, 1], port)),
    )
    .await
    .unwrap();
    d.wait_for_log("recoveries", |l| {
        l.iter().any(|l| l.contains("probe recovered after"))
            && l.iter()
                .any(|l| l.contains("engine scrape recovered after"))
    })
    .await;
    let metrics = scrape(d.addr).await;
    let lines = d.terminate();
    mock.shutdown().await;
    let all = objects(&lines);
    let failures = sum(
        &metrics,
        "llmprobe_request_failures_total",
        &[("target", "down")],
    );
    let of = |message: &str| -> Vec<&serde_json::Map<String, Value>> {
        all.iter()
            .filter(|o| text(o, "target") == "down" && text(o, "message").contains(message))
            .collect()
    };
    // A summary: a WARN line over a span, for the probes (`scenario`) or the scraper.
    let summaries_of = |probes: bool| -> Vec<&serde_json::Map<String, Value>> {
        all.iter()
            .filter(|o| {
                text(o, "target") == "down"
                    && text(o, "level") == "WARN"
                    && o.contains_key("over_seconds")
                    && o.contains_key("scenario") == probes
            })
            .collect()
    };
    let at = |level: &str, list: &[&serde_json::Map<String, Value>]| {
        list.iter().filter(|o| text(o, "level") == level).count()
    };

    // Probes: one WARN for the first failure, then summaries at least an interval
    // apart, then one recovery that counts every failure /metrics counted.
    let failed = of("probe failed");
    assert_eq!(at("WARN", &failed), 1, "{failed:?}");
    let first = failed.iter().find(|o| text(o, "level") == "WARN").unwrap();
    assert_eq!(
        (text(first, "scenario"), text(first, "reason")),
        ("s", "connect")
    );
    assert!(first.get("probe_id").is_some_and(Value::is_u64));
    let repeated = summaries_of(true);
    assert!(repeated.len() >= 2);
    for o in &repeated {
        assert_eq!(text(o, "reason"), "connect");
        assert!(number(o, "over_seconds") >= 1.0, "{o:?}");
    }
    let recovered = of("probe recovered after");
    assert_eq!(recovered.len(), 1, "{recovered:?}");
    assert_eq!(text(recovered[0], "level"), "INFO");
    assert_eq!(number(recovered[0], "failures"), failures);
    assert!(failures >= 3.0, "{failures}");
    // Debug level shows every failed probe, each once: its WARN or a debug line.
    assert_eq!(failed.len() as f64, failures);
    assert!(
        of("probe failed")
            .iter()
            .all(|o| text(o, "reason") == "connect")
    );

    // Engine scrapes: the same rule.
    let scrape_failed = of("engine scrape failed");
    assert_eq!(at("WARN", &scrape_failed), 1, "{scrape_failed:?}");
    let repeated = summaries_of(false);
    assert!(repeated.len() >= 2);
    for o in &repeated {
        assert_eq!(text(o, "reason"), "connect");
        assert!(number(o, "over_seconds") >= 1.0, "{o:?}");
    }
    let scrape_recovered = of("engine scrape recovered after");
    assert_eq!(scrape_recovered.len(), 1);
    assert_eq!(
        number(scrape_recovered[0], "failures"),
        scrape_failed.len() as f64
    );

    // What the default level shows: a handful of lines, not one per probe.
    let shown = all
        .iter()
        .filter(|o| text(o, "target") == "down" && text(o, "level") != "DEBUG")
        .count();
    assert!(
        (shown as f64) < failures / 2.0,
        "{shown} lines for {failures} failures"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_answer_check_is_logged_once_then_summarised() {
    let mock = llmprobe::mock::start(
        llmprobe::mock::MockConfig::default(),
        SocketAddr::from(([127, 0, 0, 1], 0)),
    )
    .await
    .unwrap();
    let (_dir, path) = config_file(&format!(
        "failure_summary_interval: 1s
self_check: {{enabled: false}}
targets:
  - name: wrong
    base_url: {}
    model: mock-llm
    rate: 20/s
    scenarios:
      - {{name: s, output_tokens: 4, checks: {{expect_regex: '^never$', expect_model: mock-llm}}}}
",
        mock.base_url()
    ));
    let d = Daemon::spawn(&[
        "--log-format",
        "json",
        "daemon",
        "--listen",
        "127.0.0.1:0",
        "--config",
        path.to_str().unwrap(),
    ]);
    d.wait_for_log("two summaries", |l| {
        l.iter()
            .filter(|l| l.contains("answer checks failed with expect_regex"))
            .count()
            >= 2
    })
    .await;
    let all = objects(&d.terminate());
    mock.shutdown().await;
    let checks: Vec<_> = all
        .iter()
        .filter(|o| text(o, "target") == "wrong" && o.contains_key("check"))
        .collect();
    let failed: Vec<_> = checks
        .iter()
        .filter(|o| text(o, "message") == "answer check failed")
        .collect();
    assert_eq!(failed.len(), 1, "{checks:?}");
    assert_eq!(
        (text(failed[0], "check"), text(failed[0], "reason")),
        ("expect_regex", "expect_regex")
    );
    assert!(text(failed[0], "error").contains("^never$"), "{failed:?}");
    assert!(failed[0].get("probe_id").is_some_and(Value::is_u64));
    // The passing check never logs; the failing one is summarised an interval apart.
    assert!(checks.iter().all(|o| text(o, "check") == "expect_regex"));
    for o in checks.iter().filter(|o| o.contains_key("over_seconds")) {
        assert_eq!(text(o, "level"), "WARN");
        assert!(number(o, "over_seconds") >= 1.0, "{o:?}");
    }
}
