//! The `llmprobe daemon` binary: `--config.check` exit codes, the listening line,
//! `--mock` showing live data within seconds, SIGHUP reload, SIGTERM shutdown, and a
//! canary API key that never appears in /config, /metrics, the status page, logs or
//! errors.

use crate::support::daemon as daemon_support;
use crate::support::process::{Process, llmprobe};

use std::net::SocketAddr;
use std::time::Duration;

use daemon_support::*;

#[test]
fn config_check_exits_0_or_2_with_the_error() {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = llmprobe()
        .args(["daemon", "--config.check", "--config"])
        .arg(format!("{root}/examples/daemon-minimal.yaml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("OK (1 targets, 1 scenarios)"));

    let bad = format!("{root}/tests/fixtures/config/bad/duplicate_target.yaml");
    let out = llmprobe()
        .args(["daemon", "--config.check", "--config", &bad])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "Error: {bad}:5:11: targets[1].name: duplicate target name \"prod\""
        )),
        "{err}"
    );
    // A bad config without --config.check fails the same way before binding anything.
    let out = llmprobe()
        .args(["daemon", "--listen", "127.0.0.1:0", "--config", &bad])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    // --mock and --config exclude each other; one of them is required.
    assert_eq!(
        llmprobe().args(["daemon"]).output().unwrap().status.code(),
        Some(2)
    );
}

/// Secrets only the deployment has: an error listing them all, or with
/// --config.check.allow-missing-secrets a note on stderr and exit 0; stdout keeps its
/// one OK line.
#[test]
fn config_check_lists_the_secrets_not_on_this_machine() {
    let example = format!("{}/examples/daemon.yaml", env!("CARGO_MANIFEST_DIR"));
    let check = |allow: bool| {
        let mut c = llmprobe();
        c.args(["daemon", "--config.check", "--config", &example])
            .env_remove("STAGING_API_KEY");
        if allow {
            c.arg("--config.check.allow-missing-secrets");
        }
        c.output().unwrap()
    };
    let located = [
        ":30:19: targets[0].api_key_file: reading secret file /etc/llmprobe/keys/prod: ",
        ":33:24: targets[0].headers.X-Gateway-Token: reading secret file /etc/llmprobe/keys/gateway: ",
        ":35:16: targets[0].tls.ca_file: cannot read /etc/llmprobe/ca.pem: ",
        ":67:18: targets[1].api_key_env: environment variable STAGING_API_KEY is not set or empty",
    ];
    let out = check(false);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    for l in located {
        assert!(err.contains(&format!("{example}{l}")), "{err}");
    }
    assert!(
        err.contains("4 secrets cannot be read on this machine"),
        "{err}"
    );
    assert!(out.stdout.is_empty());

    let out = check(true);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("{example}: OK (2 targets, 3 scenarios)\n")
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with(
            "4 secrets not on this machine, allowed by --config.check.allow-missing-secrets"
        ),
        "{err}"
    );
    for l in located {
        assert!(err.contains(&format!("  {example}{l}")), "{err}");
    }
    // The flag belongs to the check.
    let out = llmprobe()
        .args([
            "daemon",
            "--config.check.allow-missing-secrets",
            "--config",
            &example,
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mock_mode_shows_live_data_within_seconds() {
    let child = Process::daemon(&[
        "daemon",
        "--mock",
        "--listen",
        "127.0.0.1:0",
        "--mock-fault",
        "http_500:0.2",
    ]);
    let addr = child.addr;
    // The demo probes 5 times a second: ten probes, a failure and an engine scrape take
    // two or three seconds; the deadline is ten times that. A good probe (within the
    // demo's SLOs, twice the mock's timing) is waited for too: a busy machine can make
    // a few probes miss them.
    let s = wait_for(Duration::from_secs(30), || async {
        let s = scrape(addr).await;
        let ok = sum(&s, "llmprobe_requests_total", &[]) >= 10.0
            && sum(
                &s,
                "llmprobe_request_failures_total",
                &[("reason", "http_5xx")],
            ) >= 1.0
            && value(&s, "llmprobe_engine_scrape_success", &[]) == Some(1.0)
            && sum(&s, "llmprobe_goodput_requests_total", &[]) >= 1.0;
        ok.then_some(s)
    })
    .await;
    assert!(
        value(
            &s,
            "llmprobe_capacity_max_concurrent_sequences",
            &[("target", "mock")]
        )
        .is_some()
    );
    let (ok, _, _) = child.stop();
    assert!(ok, "SIGTERM must end the daemon cleanly");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_over_http_needs_the_lifecycle_flag() {
    for (flag, want) in [(None, 403), (Some("--web.enable-lifecycle"), 200)] {
        let mut args = vec!["daemon", "--mock", "--listen", "127.0.0.1:0"];
        args.extend(flag);
        let child = Process::daemon(&args);
        let addr = child.addr;
        let r = http()
            .post(format!("http://{addr}/-/reload"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), want, "{flag:?}");
        let (ok, _, _) = child.stop();
        assert!(ok);
    }
}

#[test]
fn version_names_the_commit_and_completions_and_man_pages_print() {
    let out = llmprobe().arg("--version").output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let commit = text
        .trim()
        .strip_prefix(concat!("llmprobe ", env!("CARGO_PKG_VERSION"), " (commit "))
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or_else(|| panic!("{text:?}"));
    assert!(
        commit == "unknown" || (commit.len() >= 7 && commit.bytes().all(|b| b.is_ascii_hexdigit())),
        "{text:?}"
    );
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let out = llmprobe().args(["completions", shell]).output().unwrap();
        assert!(out.status.success(), "{shell}");
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("web.config.file"),
            "{shell}"
        );
    }
    assert_eq!(
        llmprobe()
            .args(["completions", "tcsh"])
            .output()
            .unwrap()
            .status
            .code(),
        Some(2)
    );
    let out = llmprobe().arg("man").output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains(".TH llmprobe 1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_reloads_and_a_bad_file_flips_the_gauge() {
    let m = llmprobe::mock::start(
        llmprobe::mock::MockConfig::default(),
        SocketAddr::from(([127, 0, 0, 1], 0)),
    )
    .await
    .unwrap();
    let base = m.base_url();
    let t = |name: &str| {
        format!("  - name: {name}\n    base_url: {base}\n    model: mock-llm\n    rate: 10/s\n")
    };
    let (_dir, path) = config_file(&format!("grace_period: 1s\ntargets:\n{}", t("one")));
    let child = Process::daemon(&[
        "daemon",
        "--listen",
        "127.0.0.1:0",
        "--config",
        path.to_str().unwrap(),
    ]);
    let addr = child.addr;
    wait_for(Duration::from_secs(10), || async {
        value(
            &scrape(addr).await,
            "llmprobe_requests_total",
            &[("target", "one")],
        )
        .filter(|v| *v >= 1.0)
    })
    .await;
    std::fs::write(
        &path,
        format!("grace_period: 1s\ntargets:\n{}{}", t("one"), t("two")),
    )
    .unwrap();
    child.signal("HUP");
    wait_for(Duration::from_secs(10), || async {
        value(
            &scrape(addr).await,
            "llmprobe_requests_total",
            &[("target", "two")],
        )
        .filter(|v| *v >= 1.0)
    })
    .await;
    std::fs::write(&path, "targets: [").unwrap();
    child.signal("HUP");
    wait_for(Duration::from_secs(10), || async {
        let s = scrape(addr).await;
        (value(&s, "llmprobe_config_last_reload_successful", &[]) == Some(0.0)).then_some(())
    })
    .await;
    assert_eq!(
        value(&scrape(addr).await, "llmprobe_targets", &[]),
        Some(2.0)
    );
    let (ok, _, stderr) = child.stop();
    assert!(ok);
    assert!(stderr.contains("reload failed"), "{stderr}");
    m.shutdown().await;
}

/// A server that rejects every request with a 401 whose body echoes the
/// Authorization header it got (some gateways do).
async fn echoing_server() -> SocketAddr {
    use axum::http::{HeaderMap, StatusCode};
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(|headers: HeaderMap| async move {
            let auth = headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string();
            (
                StatusCode::UNAUTHORIZED,
                format!("invalid credentials: {auth}"),
            )
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canary_key_never_leaks() {
    const KEY: &str = "sk-canary-file-0d6f1b2e";
    const ENV_KEY: &str = "sk-canary-env-7a3c9e11";
    const HEADER: &str = "canary-header-55e2a0";
    const YAML_CANARY: &str = "sk-canary-yaml-3b9d04";
    let m = llmprobe::mock::start(
        llmprobe::mock::MockConfig {
            api_key: Some(KEY.to_string()),
            ..Default::default()
        },
        SocketAddr::from(([127, 0, 0, 1], 0)),
    )
    .await
    .unwrap();
    let echo = echoing_server().await;
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("key");
    std::fs::write(&key_file, format!("{KEY}\n")).unwrap();
    let text = format!(
        "grace_period: 1s\ntargets:\n\
         - name: authed\n  base_url: {}\n  model: mock-llm\n  rate: 10/s\n  api_key_file: {}\n  headers: {{X-Canary: {HEADER}}}\n\
         - name: echo\n  base_url: http://{echo}\n  model: m\n  rate: 10/s\n  api_key_env: LLMPROBE_TEST_CANARY\n",
        m.base_url(),
        key_file.display()
    );
    let path = dir.path().join("daemon.yaml");
    std::fs::write(&path, &text).unwrap();
    let mut cmd = llmprobe();
    cmd.args([
        "--log-level",
        "debug",
        "daemon",
        "--web.enable-lifecycle",
        "--listen",
        "127.0.0.1:0",
        "--config",
        path.to_str().unwrap(),
    ])
    .env("LLMPROBE_TEST_CANARY", ENV_KEY);
    let child = Process::daemon_from(cmd);
    let addr = child.addr;
    let s = wait_for(Duration::from_secs(10), || async {
        let s = scrape(addr).await;
        let ok = value(
            &s,
            "llmprobe_goodput_requests_total",
            &[("target", "authed")],
        )? >= 2.0
            && value(
                &s,
                "llmprobe_request_failures_total",
                &[("target", "echo"), ("reason", "http_4xx")],
            )? >= 2.0;
        ok.then_some(s)
    })
    .await;
    assert!(!s.is_empty());
    let mut seen = String::new();
    for path in ["/metrics", "/config", "/", "/-/ready"] {
        seen.push_str(&get(&format!("http://{addr}{path}")).await.1);
    }
    // The status page shows the echoed error, scrubbed.
    assert!(
        seen.contains("invalid credentials: Bearer &lt;secret&gt;"),
        "{seen}"
    );
    // A reload error does not print secrets either.
    std::fs::write(&path, format!("{text}  rat: 1\n")).unwrap();
    let r = http()
        .post(format!("http://{addr}/-/reload"))
        .send()
        .await
        .unwrap();
    seen.push_str(&r.text().await.unwrap());
    // Nor one whose parse error would quote a secret pasted in the wrong place.
    std::fs::write(
        &path,
        format!(
            "{text}- name: pasted\n  base_url: http://127.0.0.1:1\n  model: m\n  headers: \"Bearer {YAML_CANARY}\"\n"
        ),
    )
    .unwrap();
    let r = http()
        .post(format!("http://{addr}/-/reload"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 500);
    let body = r.text().await.unwrap();
    assert!(
        body.contains("headers") && body.contains("<value>"),
        "{body}"
    );
    seen.push_str(&body);
    let (ok, _, stderr) = child.stop();
    assert!(ok);
    seen.push_str(&stderr);
    // And neither does --config.check on a config whose key file holds the canary.
    let out = llmprobe()
        .args([
            "daemon",
            "--config.check",
            "--config",
            path.to_str().unwrap(),
        ])
        .env("LLMPROBE_TEST_CANARY", ENV_KEY)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    seen.push_str(&String::from_utf8_lossy(&out.stderr));
    assert!(
        stderr.contains("probe failed"),
        "the logs were captured: {stderr}"
    );
    assert!(
        stderr.contains("reload failed"),
        "the reload errors were logged: {stderr}"
    );
    for canary in [KEY, ENV_KEY, HEADER, YAML_CANARY] {
        assert!(!seen.contains(canary), "{canary} leaked");
    }
    m.shutdown().await;
}
