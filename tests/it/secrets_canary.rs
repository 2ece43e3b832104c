//! Secrets canary: unique canary values are put in every place a secret can
//! come from — the daemon's `api_key_file`, `api_key_env`, header values from a file,
//! from the environment and literal; bench's `--api-key`, `OPENAI_API_KEY` and
//! `--header`; the mock's `--api-key` — and the binaries run at `--log-level trace`
//! with `--log-format json`. Everything they print or serve is collected (stdout,
//! stderr, `/config`, `/metrics`, `/`, reload errors, `--config.check`, bench's
//! `--records` and `--json-out` files) and searched for every canary. Wrong keys take
//! the 401 path, both the mock's own 401 and a gateway that echoes the Authorization
//! header back in its error body.
//!
//! The search is proven able to fail: each test plants a canary in a copy of what it
//! collected and checks that the search reports it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::support::process::{Process, llmprobe};

/// A canary unique to this process and call, so no fixture or earlier run can hold it.
fn canary(kind: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("cnry-{kind}-{}-{nanos:x}", std::process::id())
}

/// Every (output name, canary) pair where the canary occurs in the output.
fn leaks(canaries: &[String], outputs: &[(String, String)]) -> Vec<String> {
    let mut found = Vec::new();
    for (name, text) in outputs {
        for c in canaries {
            if text.contains(c.as_str()) {
                found.push(format!("{c} in {name}"));
            }
        }
    }
    found
}

/// Asserts no canary leaked, after proving that the search finds each one planted
/// into what was collected (in the middle of the largest output, JSON-escaped
/// context around it).
fn assert_no_leaks(canaries: &[String], outputs: &[(String, String)]) {
    for c in canaries {
        let mut planted = outputs.to_vec();
        let big = planted
            .iter_mut()
            .max_by_key(|(_, t)| t.len())
            .expect("outputs");
        let mid = big.1.len() / 2;
        let mid = (0..=mid)
            .rev()
            .find(|&i| big.1.is_char_boundary(i))
            .unwrap_or(0);
        big.1
            .insert_str(mid, &format!("{{\"authorization\":\"Bearer {c}\"}}"));
        assert!(
            !leaks(canaries, &planted).is_empty(),
            "self-check: the search missed a planted {c}"
        );
    }
    let found = leaks(canaries, outputs);
    assert!(found.is_empty(), "secrets leaked:\n{}", found.join("\n"));
}

/// SIGTERM, wait, and (stdout, stderr).
fn stop(server: Process) -> (String, String) {
    let (_, stdout, stderr) = server.stop();
    (stdout, stderr)
}

fn http() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("client")
}

async fn get(url: &str) -> String {
    match http().get(url).send().await {
        Ok(r) => r.text().await.unwrap_or_default(),
        Err(e) => format!("GET {url}: {e}"),
    }
}

/// A gateway that rejects every request with a 401 whose body echoes the
/// Authorization header and every other header it got (the worst case for scrubbing).
async fn echoing_gateway() -> SocketAddr {
    use axum::http::{HeaderMap, StatusCode};
    let echo = |headers: HeaderMap| async move {
        let all: Vec<String> = headers
            .iter()
            .map(|(k, v)| format!("{k}: {}", v.to_str().unwrap_or("?")))
            .collect();
        (
            StatusCode::UNAUTHORIZED,
            format!(
                "{{\"error\":{{\"message\":\"invalid credentials; you sent {}\"}}}}",
                all.join("; ")
            ),
        )
    };
    let app = axum::Router::new()
        .route("/v1/chat/completions", axum::routing::post(echo))
        .route("/v1/completions", axum::routing::post(echo))
        .route("/v1/messages", axum::routing::post(echo))
        // Every hosted API's path (Azure, Gemini, Vertex, Bedrock).
        .fallback(echo);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

fn start_mock(key: &str) -> Process {
    let mut cmd = llmprobe();
    cmd.args([
        "--log-level",
        "trace",
        "--log-format",
        "json",
        "mock",
        "--listen",
        "127.0.0.1:0",
        "--ttft-ms",
        "5",
        "--itl-ms",
        "1",
        "--api-key",
        key,
    ]);
    Process::spawn(cmd, "llmprobe mock listening on http://")
}

fn read(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| format!("reading {}: {e}", path.display()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_never_shows_a_key_or_header_value() {
    let key = canary("bench-key");
    let env_key = canary("bench-env");
    let header = canary("bench-header");
    let canaries = vec![key.clone(), env_key.clone(), header.clone()];
    let mock = start_mock(&key);
    let gateway = echoing_gateway().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut outputs: Vec<(String, String)> = Vec::new();

    // (name, base url, --api-key?, OPENAI_API_KEY?, whether every request must succeed,
    // endpoint: `messages` sends the key as `x-api-key`)
    type Run<'a> = (
        &'a str,
        String,
        Option<&'a str>,
        Option<&'a str>,
        bool,
        &'a str,
    );
    let runs: Vec<Run> = vec![
        (
            "flag",
            format!("http://{}", mock.addr),
            Some(&key),
            None,
            true,
            "chat",
        ),
        (
            "messages",
            format!("http://{}", mock.addr),
            Some(&key),
            None,
            true,
            "messages",
        ),
        (
            "env",
            format!("http://{}", mock.addr),
            None,
            Some(&key),
            true,
            "chat",
        ),
        // Wrong key: the mock's 401.
        (
            "wrong",
            format!("http://{}", mock.addr),
            None,
            Some(&env_key),
            false,
            "chat",
        ),
        // A gateway that echoes every header in its 401 body.
        (
            "echo",
            format!("http://{gateway}"),
            Some(&key),
            None,
            false,
            "chat",
        ),
        (
            "echo-messages",
            format!("http://{gateway}"),
            Some(&key),
            None,
            false,
            "messages",
        ),
    ];
    for (name, base, flag_key, env, all_ok, endpoint) in runs {
        let records = dir.path().join(format!("{name}-records.jsonl"));
        let summary = dir.path().join(format!("{name}-summary.jsonl"));
        let mut cmd = llmprobe();
        cmd.args([
            "--log-level",
            "trace",
            "--log-format",
            "json",
            "bench",
            "--base-url",
            &base,
            "--model",
            "mock-llm",
            "--endpoint",
            endpoint,
            "--rate",
            "inf",
            "--num-requests",
            "4",
            "--input-len",
            "16",
            "--output-len",
            "4",
            "--timeout",
            "10s",
            "--no-progress",
            "--header",
            &format!("X-Canary-Header:{header}"),
        ])
        .arg("--records")
        .arg(&records)
        .arg("--json-out")
        .arg(&summary)
        .env_remove("OPENAI_API_KEY");
        if let Some(k) = flag_key {
            cmd.args(["--api-key", k]);
        }
        if let Some(k) = env {
            cmd.env("OPENAI_API_KEY", k);
        }
        let out = cmd.output().expect("bench runs");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let recs = read(&records);
        let n_records = recs.lines().filter(|l| l.contains("\"outcome\"")).count();
        assert_eq!(n_records, 4, "{name}: records\n{recs}\n{stderr}");
        let ok = recs.matches("\"outcome\":\"ok\"").count();
        if all_ok {
            assert_eq!(ok, 4, "{name}: the key did not work\n{recs}");
        } else {
            assert_eq!(ok, 0, "{name}: a wrong key succeeded\n{recs}");
            assert!(
                recs.contains("\"http_status\":401"),
                "{name}: not the 401 path\n{recs}"
            );
        }
        // Trace logging was really on (so the test looked at the most verbose output).
        assert!(
            stderr.contains("TRACE") || stderr.contains("DEBUG"),
            "{name}: {stderr}"
        );
        outputs.push((format!("bench {name} stdout"), stdout));
        outputs.push((format!("bench {name} stderr"), stderr));
        outputs.push((format!("bench {name} --records"), recs));
        outputs.push((format!("bench {name} --json-out"), read(&summary)));
    }
    let (mock_out, mock_err) = stop(mock);
    outputs.push(("mock stdout".into(), mock_out));
    outputs.push(("mock stderr".into(), mock_err));
    assert_no_leaks(&canaries, &outputs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_never_shows_a_key_or_header_value() {
    let key = canary("key-file");
    let env_key = canary("key-env");
    let h_file = canary("header-file");
    let h_env = canary("header-env");
    let h_lit = canary("header-literal");
    let canaries = vec![
        key.clone(),
        env_key.clone(),
        h_file.clone(),
        h_env.clone(),
        h_lit.clone(),
    ];
    let mock = start_mock(&key);
    let gateway = echoing_gateway().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let key_file = dir.path().join("api-key");
    std::fs::write(&key_file, format!("{key}\n")).expect("write");
    let header_file = dir.path().join("header");
    std::fs::write(&header_file, format!("{h_file}\n")).expect("write");
    let text = format!(
        "grace_period: 1s
targets:
  - name: authed
    base_url: http://{mock}
    model: mock-llm
    rate: 10/s
    api_key_file: {key_file}
    headers:
      X-From-File: {{file: {header_file}}}
      X-From-Env: {{env: CANARY_HEADER_ENV}}
      X-Literal: {h_lit}
    scenarios: [{{name: s, input_tokens: 16, output_tokens: 4}}]
  - name: wrong-key
    base_url: http://{mock}
    model: mock-llm
    rate: 10/s
    api_key_env: CANARY_KEY_ENV
    scenarios: [{{name: s, input_tokens: 16, output_tokens: 4}}]
  - name: echo
    base_url: http://{gateway}
    model: m
    rate: 10/s
    api_key_file: {key_file}
    headers:
      X-From-File: {{file: {header_file}}}
      X-From-Env: {{env: CANARY_HEADER_ENV}}
      X-Literal: {h_lit}
    scenarios: [{{name: s, input_tokens: 16, output_tokens: 4}}]
",
        mock = mock.addr,
        key_file = key_file.display(),
        header_file = header_file.display(),
    );
    let config = dir.path().join("daemon.yaml");
    std::fs::write(&config, &text).expect("write");
    let envs = [
        ("CANARY_KEY_ENV", env_key.as_str()),
        ("CANARY_HEADER_ENV", h_env.as_str()),
    ];
    let mut cmd = llmprobe();
    cmd.args([
        "--log-level",
        "trace",
        "--log-format",
        "json",
        "daemon",
        "--web.enable-lifecycle",
        "--listen",
        "127.0.0.1:0",
        "--config",
    ])
    .arg(&config)
    .envs(envs);
    let daemon = Process::daemon_from(cmd);
    let base = format!("http://{}", daemon.addr);

    // Wait until each target has probed: authed succeeded (so the key from the file
    // was sent), wrong-key and echo failed with a 4xx.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let metrics = loop {
        let m = get(&format!("{base}/metrics")).await;
        let count = |target: &str, name: &str, extra: &str| -> f64 {
            m.lines()
                .filter(|l| {
                    l.starts_with(name)
                        && l.contains(&format!("target=\"{target}\""))
                        && l.contains(extra)
                })
                .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
                .sum()
        };
        let good = count("authed", "llmprobe_goodput_requests_total", "");
        let wrong = count(
            "wrong-key",
            "llmprobe_request_failures_total",
            "reason=\"http_4xx\"",
        );
        let echo = count(
            "echo",
            "llmprobe_request_failures_total",
            "reason=\"http_4xx\"",
        );
        if good >= 2.0 && wrong >= 2.0 && echo >= 2.0 {
            break m;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "targets did not probe as expected (good {good}, wrong {wrong}, echo {echo}):\n{m}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let mut outputs = vec![("/metrics".to_string(), metrics)];
    for path in ["/config", "/", "/-/ready", "/-/healthy"] {
        outputs.push((path.to_string(), get(&format!("{base}{path}")).await));
    }
    assert!(
        outputs[1].1.contains("X-From-File") || outputs[1].1.contains("x-from-file"),
        "/config shows the headers (as secrets): {}",
        outputs[1].1
    );

    // A bad reload (an unknown field next to the literal header) must not quote it.
    std::fs::write(
        &config,
        text.replace("    rate: 10/s\n", "    rate: 10/s\n    bogus: 1\n"),
    )
    .expect("write");
    let reload = match http().post(format!("{base}/-/reload")).send().await {
        Ok(r) => r.text().await.unwrap_or_default(),
        Err(e) => format!("reload: {e}"),
    };
    assert!(reload.contains("bogus"), "the reload failed: {reload}");
    outputs.push(("reload error".into(), reload));

    // A reload that fails only when resolving secrets (the key file is gone) names the
    // file, line and field, and keeps the old config: the old key keeps working.
    std::fs::write(&config, &text).expect("write");
    std::fs::remove_file(&key_file).expect("remove key file");
    let goodput = |m: &str| -> f64 {
        m.lines()
            .filter(|l| {
                l.starts_with("llmprobe_goodput_requests_total") && l.contains("target=\"authed\"")
            })
            .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
            .sum()
    };
    let before = goodput(&get(&format!("{base}/metrics")).await);
    let (status, reload) = match http().post(format!("{base}/-/reload")).send().await {
        Ok(r) => (r.status().as_u16(), r.text().await.unwrap_or_default()),
        Err(e) => (0, format!("reload: {e}")),
    };
    assert_eq!(status, 500, "{reload}");
    let key_line = text
        .lines()
        .position(|l| l.contains("api_key_file"))
        .map(|i| i + 1)
        .unwrap_or(0);
    let want = format!("{}:{key_line}:", config.display());
    assert!(
        reload.contains(&want) && reload.contains("targets[0].api_key_file"),
        "the error names file:line ({want}) and field: {reload}"
    );
    outputs.push(("reload error (missing key file)".into(), reload));
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let m = get(&format!("{base}/metrics")).await;
        if goodput(&m) >= before + 3.0 {
            assert!(
                m.contains("llmprobe_config_last_reload_successful 0"),
                "the failed reload is reported"
            );
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the old key stopped working after a failed reload:\n{m}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let out = llmprobe()
        .args(["daemon", "--config.check", "--config"])
        .arg(&config)
        .envs(envs)
        .output()
        .expect("config check");
    outputs.push((
        "--config.check".into(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    ));
    // A key file that cannot be a header value: the error names the field, not the key.
    std::fs::write(&key_file, format!("{key}\nsecond line {key}\n")).expect("write");
    std::fs::write(&config, &text).expect("write");
    let out = llmprobe()
        .args(["daemon", "--config.check", "--config"])
        .arg(&config)
        .envs(envs)
        .output()
        .expect("config check");
    outputs.push((
        "--config.check with a two-line key file".into(),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    ));

    let (stdout, stderr) = stop(daemon);
    assert!(
        stderr.contains("TRACE") || stderr.contains("DEBUG"),
        "trace logging was on: {stderr}"
    );
    outputs.push(("daemon stdout".into(), stdout));
    outputs.push(("daemon stderr".into(), stderr));
    let (mock_out, mock_err) = stop(mock);
    outputs.push(("mock stdout".into(), mock_out));
    outputs.push(("mock stderr".into(), mock_err));
    assert_no_leaks(&canaries, &outputs);
}

/// The web config's secrets: the basic-auth passwords (right and wrong), the bcrypt
/// hash, an inline TLS private key, and a plaintext password pasted where a hash
/// belongs (a reload the daemon must refuse without quoting it). None may reach the
/// logs, `/config`, `/metrics`, `/` or a reply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_web_config_never_shows_a_password_hash_or_key() {
    use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
    let dir = tempfile::tempdir().expect("tempdir");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    let key_pem = key.serialize_pem();
    // A line of the key's base64 body: unique to this key.
    let key_canary = key_pem.lines().nth(1).expect("PEM body").to_string();
    let password = canary("webpw");
    let wrong = canary("webwrong");
    let pasted = canary("webplain");
    let hash = bcrypt::hash(&password, 4).unwrap();
    let indent = |pem: &str| {
        pem.lines()
            .map(|l| format!("    {l}\n"))
            .collect::<String>()
    };
    let web = |hash: &str| {
        format!(
            "tls_server_config:\n  cert: |\n{}  key: |\n{}basic_auth_users:\n  prometheus: \"{hash}\"\n",
            indent(&cert.pem()),
            indent(&key_pem)
        )
    };
    let web_file = dir.path().join("web.yml");
    std::fs::write(&web_file, web(&hash)).unwrap();
    let mut cmd = llmprobe();
    cmd.args([
        "--log-level",
        "trace",
        "--log-format",
        "json",
        "daemon",
        "--mock",
        "--web.enable-lifecycle",
        "--listen",
        "127.0.0.1:0",
        "--web.config.file",
    ])
    .arg(&web_file);
    let daemon = Process::spawn(cmd, "llmprobe daemon listening on https://");
    let base = format!("https://127.0.0.1:{}", daemon.addr.port());
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.der().clone()).unwrap();
    let tls = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let client = reqwest::Client::builder()
        .use_preconfigured_tls(tls)
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let mut outputs = Vec::new();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    for (path, pw) in [
        ("/metrics", &password),
        ("/config", &password),
        ("/", &password),
        ("/metrics", &wrong),
    ] {
        let r = client
            .get(format!("{base}{path}"))
            .basic_auth("prometheus", Some(pw))
            .send()
            .await
            .expect("GET");
        let status = r.status().as_u16();
        assert_eq!(status == 200, pw == &password, "{path}: {status}");
        outputs.push((path.to_string(), r.text().await.unwrap_or_default()));
    }
    let reload = client
        .post(format!("{base}/-/reload"))
        .basic_auth("prometheus", Some(&password))
        .send()
        .await
        .expect("POST");
    assert_eq!(reload.status().as_u16(), 200);
    // A plaintext password where the hash belongs: refused at the next check (every 5 s),
    // the running web config kept. Waited for in the daemon's log, ten checks at most.
    std::fs::write(&web_file, web(&pasted)).unwrap();
    let deadline = std::time::Instant::now() + 10 * llmprobe::web::WEB_CONFIG_CHECK_INTERVAL;
    while !(daemon.stderr_says("web config not reloaded")
        && daemon.stderr_says("basic_auth_users.prometheus"))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the refused web config was not logged within ten checks"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let still = client
        .get(format!("{base}/-/healthy"))
        .basic_auth("prometheus", Some(&password))
        .send()
        .await
        .expect("GET");
    assert_eq!(
        still.status().as_u16(),
        200,
        "the running web config is kept"
    );
    let (stdout, stderr) = stop(daemon);
    assert!(
        stderr.contains("web config not reloaded")
            && stderr.contains("basic_auth_users.prometheus"),
        "the refused reload was logged: {stderr}"
    );
    assert!(
        stderr.contains("TLS") || stderr.contains("tls"),
        "logs captured"
    );
    outputs.push(("stdout".into(), stdout));
    outputs.push(("stderr".into(), stderr));
    assert_no_leaks(&[password, wrong, hash, key_canary, pasted], &outputs);
}

/// The hosted APIs' secrets: an Azure and a Gemini key (`--api-key`), Bedrock's secret
/// access key and session token (files), each against the mock (which checks them) and
/// against a gateway that echoes every header it got in its 401.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_never_shows_a_providers_secret() {
    let key = canary("provider-key");
    let aws_secret = canary("aws-secret");
    let session = canary("aws-session");
    let vertex_token = canary("vertex-token");
    let canaries = vec![
        key.clone(),
        aws_secret.clone(),
        session.clone(),
        vertex_token.clone(),
    ];
    let mut cmd = llmprobe();
    cmd.args(["--log-level", "trace", "--log-format", "json", "mock"])
        .args(["--listen", "127.0.0.1:0", "--ttft-ms", "5", "--itl-ms", "1"])
        .args(["--api-key", &key, "--aws-access-key-id", "AKIDCANARY"])
        .env("LLMPROBE_MOCK_AWS_SECRET_ACCESS_KEY", &aws_secret);
    let mock = Process::spawn(cmd, "llmprobe mock listening on http://");
    let gateway = echoing_gateway().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let file = |name: &str, value: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, value).expect("write");
        p.display().to_string()
    };
    let (id, secret, token, vertex_file) = (
        file("id", "AKIDCANARY"),
        file("secret", &aws_secret),
        file("token", &session),
        file("vertex-token", &vertex_token),
    );
    let vertex = [
        "--provider",
        "vertex",
        "--google-project",
        "p",
        "--google-location",
        "l",
        "--google-token-file",
        &vertex_file,
        "--endpoint",
        "chat",
    ];
    let bedrock = [
        "--provider",
        "bedrock",
        "--aws-region",
        "us-east-1",
        "--aws-access-key-id-file",
        &id,
        "--aws-secret-access-key-file",
        &secret,
        "--aws-session-token-file",
        &token,
        "--endpoint",
        "chat",
    ];
    let azure = [
        "--provider",
        "azure",
        "--api-key",
        &key,
        "--endpoint",
        "chat",
    ];
    let gemini = [
        "--provider",
        "gemini",
        "--api-key",
        &key,
        "--endpoint",
        "chat",
    ];
    let mut outputs: Vec<(String, String)> = Vec::new();
    for (name, base, args, all_ok) in [
        ("azure", format!("http://{}", mock.addr), &azure[..], true),
        ("gemini", format!("http://{}", mock.addr), &gemini[..], true),
        (
            "bedrock",
            format!("http://{}", mock.addr),
            &bedrock[..],
            true,
        ),
        ("azure-echo", format!("http://{gateway}"), &azure[..], false),
        (
            "gemini-echo",
            format!("http://{gateway}"),
            &gemini[..],
            false,
        ),
        (
            "bedrock-echo",
            format!("http://{gateway}"),
            &bedrock[..],
            false,
        ),
        (
            "vertex-echo",
            format!("http://{gateway}"),
            &vertex[..],
            false,
        ),
    ] {
        let records = dir.path().join(format!("{name}-records.jsonl"));
        let mut cmd = llmprobe();
        cmd.args(["--log-level", "trace", "--log-format", "json", "bench"])
            .args(["--base-url", &base, "--model", "mock-llm", "--rate", "inf"])
            .args([
                "--num-requests",
                "3",
                "--input-len",
                "16",
                "--output-len",
                "4",
            ])
            .args(["--timeout", "10s", "--no-progress"])
            .args(args)
            .arg("--records")
            .arg(&records)
            .env_remove("OPENAI_API_KEY")
            .env_remove("AWS_ACCESS_KEY_ID")
            .env_remove("AWS_SECRET_ACCESS_KEY")
            .env_remove("AWS_SESSION_TOKEN");
        let out = cmd.output().expect("bench runs");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let recs = read(&records);
        let ok = recs.matches("\"outcome\":\"ok\"").count();
        if all_ok {
            assert_eq!(ok, 3, "{name}: the secret did not work\n{recs}\n{stderr}");
        } else {
            assert!(
                recs.contains("\"http_status\":401"),
                "{name}: not the 401 path\n{recs}\n{stderr}"
            );
        }
        outputs.push((format!("bench {name} stdout"), stdout));
        outputs.push((format!("bench {name} stderr"), stderr));
        outputs.push((format!("bench {name} --records"), recs));
    }
    let (mock_out, mock_err) = stop(mock);
    outputs.push(("mock stdout".into(), mock_out));
    outputs.push(("mock stderr".into(), mock_err));
    assert_no_leaks(&canaries, &outputs);
}
