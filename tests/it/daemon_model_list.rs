//! The model-list kind against the mock: the target's model listed, a model the mock does
//! not serve, and an endpoint that does not answer; its series, its status rows, its
//! retirement on reload, and the config errors of its block.

use crate::support::daemon as daemon_support;

use std::time::Duration;

use daemon_support::*;
use llmprobe::config::plan::load_str;
use llmprobe::daemon::{ConfigSource, Daemon};
use llmprobe::mock::MockConfig;

fn target(name: &str, base: &str, model: &str) -> String {
    format!(
        "  - name: {name}\n    base_url: {base}\n    model: {model}\n    scenarios:\n      \
         - name: served\n        kind: model_list\n        model_list: {{every: 1h}}\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_is_listed_missing_or_the_read_fails() {
    let mock = crate::support::mock::start(MockConfig::default()).await;
    let served = MockConfig::default().model;
    // Nothing listens on a port that was bound and dropped: every read of "down" fails.
    let down = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let base = mock.base_url();
    let text = format!(
        "self_check: {{enabled: false}}\ntargets:\n{}{}{}",
        target("listed", &base, &served),
        target("missing", &base, "not-served"),
        target("down", &down, "m")
    );
    let (_dir, path) = config_file(&text);
    let d = Daemon::start(ConfigSource::File(path.clone()), Some("127.0.0.1:0".into()))
        .await
        .unwrap();
    let addr = d.addr();
    let s = wait_for(Duration::from_secs(30), || async {
        let s = scrape(addr).await;
        let ran = |t| {
            value(
                &s,
                "llmprobe_model_list_last_run_timestamp_seconds",
                &[("target", t)],
            )
        };
        let failed = value(
            &s,
            "llmprobe_model_list_failures_total",
            &[("target", "down")],
        );
        (ran("listed").is_some() && ran("missing").is_some() && failed >= Some(1.0)).then_some(s)
    })
    .await;
    let at = |t: &str, name: &str| value(&s, name, &[("target", t), ("scenario", "served")]);
    assert_eq!(at("listed", "llmprobe_model_listed"), Some(1.0));
    assert_eq!(at("listed", "llmprobe_model_list_models"), Some(1.0));
    assert_eq!(
        at("listed", "llmprobe_model_list_failures_total"),
        Some(0.0)
    );
    assert_eq!(at("missing", "llmprobe_model_listed"), Some(0.0));
    assert_eq!(at("down", "llmprobe_model_listed"), None);
    // It sends no probes and takes no share of a rate.
    assert_eq!(sum(&s, "llmprobe_requests_total", &[]), 0.0);

    let (code, page) = get(&format!("http://{addr}/")).await;
    assert_eq!(code, 200);
    let section = |t: &str| {
        let start = page
            .find(&format!(">{t}</a>"))
            .unwrap_or_else(|| panic!("{t}: {page}"));
        let end = page[start..].find("</section>").unwrap() + start;
        page[start..end].to_string()
    };
    let listed = section("listed");
    assert!(listed.contains("<tr class=\"kind\">"), "{listed}");
    assert!(
        listed.contains("<span class=\"ok\">model listed</span>"),
        "{listed}"
    );
    assert!(listed.contains(&format!("listed: {served}")), "{listed}");
    let missing = section("missing");
    assert!(
        missing.contains("<span class=\"bad\">model missing</span>"),
        "{missing}"
    );
    let down_row = section("down");
    assert!(
        down_row.contains("<span class=\"bad\">run failing</span>"),
        "{down_row}"
    );
    let (code, target_page) = get(&format!("http://{addr}/target/missing")).await;
    assert_eq!(code, 200);
    assert!(target_page.contains("model missing"), "{target_page}");

    // A reload without the scenario retires its series and its row.
    std::fs::write(
        &path,
        format!(
            "self_check: {{enabled: false}}\ntargets:\n{}  - name: missing\n    base_url: {base}\n    \
             model: not-served\n    scenarios: [{{name: chat, rate: 1/h}}]\n",
            target("listed", &base, &served)
        ),
    )
    .unwrap();
    d.reload().await.unwrap();
    let s = scrape(addr).await;
    assert_eq!(
        value(&s, "llmprobe_model_listed", &[("target", "listed")]),
        Some(1.0)
    );
    assert_eq!(
        value(&s, "llmprobe_model_listed", &[("target", "missing")]),
        None
    );
    assert_eq!(
        value(
            &s,
            "llmprobe_model_list_failures_total",
            &[("target", "down")]
        ),
        None
    );
    let (_, page) = get(&format!("http://{addr}/")).await;
    assert!(
        !page.contains("model missing") && !page.contains(">down</a>"),
        "{page}"
    );
    d.shutdown().await.unwrap();
    mock.shutdown().await;
}

#[test]
fn bad_model_list_blocks_are_config_errors() {
    let cfg = |extra: &str| {
        format!(
            "targets:\n  - name: t\n    base_url: http://127.0.0.1:1\n    model: m\n    \
             scenarios:\n      - name: served\n{extra}"
        )
    };
    let err = |extra: &str| load_str(&cfg(extra), "c.yaml").unwrap_err().to_string();
    assert_eq!(
        err("        model_list: {every: 0s}\n"),
        "c.yaml:7:29: targets[0].scenarios[0].model_list.every: every must be greater than 0"
    );
    assert_eq!(
        err("        rate: 1/s\n        model_list: {}\n"),
        "c.yaml:8:21: targets[0].scenarios[0].model_list: a model_list scenario reads the \
         endpoint's model list: it takes only name, kind and model_list"
    );
    assert_eq!(
        err("        kind: model_list\n"),
        "c.yaml:7:15: targets[0].scenarios[0].kind: kind: model_list needs a model_list: block"
    );
    assert_eq!(
        err("        kind: probe\n        model_list: {}\n"),
        "c.yaml:7:15: targets[0].scenarios[0].kind: kind: probe does not take a model_list: \
         block (that is kind: model_list)"
    );
    assert_eq!(
        err("        golden: {file: builtin}\n        model_list: {}\n"),
        "c.yaml:8:21: targets[0].scenarios[0].model_list: a scenario has one kind: golden and \
         model_list cannot go together"
    );
    let plan = load_str(&cfg("        model_list: {}\n"), "c.yaml").unwrap();
    let t = &plan.targets[0];
    assert!(t.scenarios.is_empty());
    assert_eq!(t.kinds.model_lists[0].every, Duration::from_secs(60));
}
