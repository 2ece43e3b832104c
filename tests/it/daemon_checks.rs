//! The daemon's answer-check series: a scenario with a fixed question and checks,
//! against the mock answering it right and (another target) leaking its chat template.
//! A leak counts in `llmprobe_check_failures_total` and drops goodput, never in
//! `llmprobe_request_failures_total`; only configured checks have series.

use crate::support::daemon as daemon_support;

use std::time::Duration;

use daemon_support::*;
use llmprobe::mock::MockConfig;

/// A fast mock.
fn fast() -> MockConfig {
    MockConfig {
        ttft: Duration::from_millis(2),
        itl: Duration::from_millis(1),
        ..MockConfig::default()
    }
}

/// A fast mock whose every answer is `answer`.
fn answering(answer: &str) -> MockConfig {
    MockConfig {
        answer: Some(answer.into()),
        ..fast()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_series_move_with_the_answers() {
    let scenario = r#"
      - name: arithmetic
        prompt: "What is 2 + 2? Answer as JSON."
        temperature: 0
        seed: 7
        output_tokens: 16
        ignore_eos: false
        checks:
          expect_json_schema: {type: object, required: [answer], properties: {answer: {const: 4}}}
          expect_not_regex: '<\|im_start\|>'
          expect_model: m"#;
    let (mock, d) = with_mock(answering(r#"{"answer": 4}"#), |base| format!(
        "targets:\n  - name: right\n    base_url: {base}\n    model: m\n    rate: 20/s\n    scenarios:{scenario}\n  - name: leaky\n    base_url: {base}\n    model: m\n    rate: 20/s\n    headers: {{x-mock-fault: template_leak}}\n    scenarios:{scenario}\n"
    ))
    .await;
    let addr = d.addr();
    let s = wait_for(Duration::from_secs(20), || async {
        let s = scrape(addr).await;
        let runs = |t| {
            value(
                &s,
                "llmprobe_check_runs_total",
                &[("target", t), ("check", "expect_model")],
            )
            .unwrap_or(0.0)
        };
        (runs("right") >= 3.0 && runs("leaky") >= 3.0).then_some(s)
    })
    .await;
    let (_, page) = get(&format!("http://{addr}/")).await;
    d.shutdown().await.unwrap();
    mock.shutdown().await;
    assert!(
        page.contains(r#"expect_not_regex: the answer matches /&lt;\|im_start\|&gt;/ at byte 0 «&lt;|im_start|&gt;assistant\n{&quot;answer&quot;: 4}»"#),
        "{page}"
    );
    let series = |name: &str, target: &str, check: Option<&str>| {
        let mut want = vec![("target", target)];
        want.extend(check.map(|c| ("check", c)));
        value(&s, name, &want)
    };
    for check in ["expect_json_schema", "expect_not_regex", "expect_model"] {
        let runs = series("llmprobe_check_runs_total", "right", Some(check)).unwrap();
        assert!(runs >= 3.0, "{check}");
        assert_eq!(
            series("llmprobe_check_failures_total", "right", Some(check)),
            Some(0.0),
            "{check}"
        );
        assert_eq!(
            series("llmprobe_check_last_passed", "right", Some(check)),
            Some(1.0),
            "{check}"
        );
    }
    // The leak fails the control-token check and (not JSON any more) the schema.
    for check in ["expect_json_schema", "expect_not_regex"] {
        let runs = series("llmprobe_check_runs_total", "leaky", Some(check)).unwrap();
        let failures = series("llmprobe_check_failures_total", "leaky", Some(check)).unwrap();
        // A scrape may land between a probe's two increments.
        assert!(
            failures >= runs - 1.0 && failures >= 2.0,
            "{check}: {failures} of {runs}"
        );
        assert_eq!(
            series("llmprobe_check_last_passed", "leaky", Some(check)),
            Some(0.0),
            "{check}"
        );
    }
    assert_eq!(
        series(
            "llmprobe_check_failures_total",
            "leaky",
            Some("expect_model")
        ),
        Some(0.0)
    );
    // Not a transport failure, but not good.
    assert_eq!(sum(&s, "llmprobe_request_failures_total", &[]), 0.0);
    assert_eq!(
        series("llmprobe_goodput_requests_total", "leaky", None),
        Some(0.0)
    );
    let right_requests = series("llmprobe_requests_total", "right", None).unwrap();
    let right_good = series("llmprobe_goodput_requests_total", "right", None).unwrap();
    assert!(
        right_good >= right_requests - 1.0 && right_good >= 2.0,
        "{right_good} of {right_requests}"
    );
    // Only configured checks have series.
    assert_eq!(
        series("llmprobe_check_runs_total", "right", Some("max_repetition")),
        None
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_with_a_bad_check_keeps_the_running_checks() {
    let config = |base: &str, checks: &str| {
        format!(
            "targets:\n  - name: t\n    base_url: {base}\n    model: m\n    rate: 20/s\n    scenarios:\n      - {{output_tokens: 8, checks: {checks}}}\n"
        )
    };
    let (mock, d) = with_mock(fast(), |base| config(base, r#"{expect_regex: 'tok\d'}"#)).await;
    let addr = d.addr();
    let runs = |check: &'static str| async move {
        value(
            &scrape(addr).await,
            "llmprobe_check_runs_total",
            &[("check", check)],
        )
    };
    wait_for(Duration::from_secs(20), || async {
        (runs("expect_regex").await? >= 2.0).then_some(())
    })
    .await;
    std::fs::write(d.path(), config(&mock.base_url(), "{expect_regex: '(tok'}")).unwrap();
    let r = http()
        .post(format!("http://{addr}/-/reload"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 500);
    let body = r.text().await.unwrap();
    assert!(
        body.contains(":7:52: targets[0].scenarios[0].checks.expect_regex: invalid regex"),
        "{body}"
    );
    // The old checks keep judging.
    let before = runs("expect_regex").await.unwrap();
    wait_for(Duration::from_secs(20), || async {
        (runs("expect_regex").await? >= before + 2.0).then_some(())
    })
    .await;
    let s = scrape(addr).await;
    assert_eq!(
        value(&s, "llmprobe_config_last_reload_successful", &[]),
        Some(0.0)
    );
    assert_eq!(
        value(
            &s,
            "llmprobe_check_failures_total",
            &[("check", "expect_regex")]
        ),
        Some(0.0)
    );
    d.shutdown().await.unwrap();
    mock.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_check_offers_the_tool_and_judges_the_call() {
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("weather.json");
    std::fs::write(
        &schema,
        r#"{"type":"object","required":["city","days"],"properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1}}}"#,
    )
    .unwrap();
    let scenario = format!(
        r#"
      - name: weather
        prompt: "What is the weather in Paris for the next 3 days?"
        output_tokens: 32
        ignore_eos: false
        checks:
          expect_tool_call:
            name: get_weather
            description: The weather forecast for a city.
            parameters: {{file: {}}}
            tool_choice: required"#,
        schema.display()
    );
    let target = |base: &str, name: &str, endpoint: &str, fault: &str| {
        format!(
            "  - name: {name}\n    base_url: {base}\n    model: m\n    endpoint: {endpoint}\n    rate: 20/s\n    headers: {{x-mock-fault: {fault}}}\n    scenarios:{scenario}\n"
        )
    };
    // `wrong_model` is no answer fault for the tool: the call still comes.
    let (mock, d) = with_mock(fast(), |base| {
        format!(
            "targets:\n{}{}{}",
            target(base, "chat", "chat", "wrong_model"),
            target(base, "responses", "responses", "wrong_model"),
            target(base, "silent", "chat", "no_tool_call"),
        )
    })
    .await;
    let addr = d.addr();
    let runs = |s: &[Sample], t: &str| {
        value(
            s,
            "llmprobe_check_runs_total",
            &[("target", t), ("check", "expect_tool_call")],
        )
        .unwrap_or(0.0)
    };
    let s = wait_for(Duration::from_secs(20), || async {
        let s = scrape(addr).await;
        ["chat", "responses", "silent"]
            .iter()
            .all(|t| runs(&s, t) >= 3.0)
            .then_some(s)
    })
    .await;
    d.shutdown().await.unwrap();
    mock.shutdown().await;
    let series = |name: &str, target: &str| {
        value(
            &s,
            name,
            &[("target", target), ("check", "expect_tool_call")],
        )
    };
    for t in ["chat", "responses"] {
        assert_eq!(series("llmprobe_check_failures_total", t), Some(0.0), "{t}");
        assert_eq!(series("llmprobe_check_last_passed", t), Some(1.0), "{t}");
    }
    let failures = series("llmprobe_check_failures_total", "silent").unwrap();
    assert!(failures >= runs(&s, "silent") - 1.0 && failures >= 2.0);
    assert_eq!(series("llmprobe_check_last_passed", "silent"), Some(0.0));
    assert_eq!(sum(&s, "llmprobe_request_failures_total", &[]), 0.0);
}

/// A `messages:` question (a system message, an example exchange, the question) reaches
/// the engine as a message list in chat and in Anthropic's Messages API, and its answer
/// is judged like a `prompt:` question's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_messages_question_is_asked_and_judged() {
    let scenario = r#"
      - name: sum
        output_tokens: 4
        ignore_eos: false
        messages:
          - {role: system, content: "Answer with a number only."}
          - {role: user, content: "What is 2 + 2?"}
          - {role: assistant, content: "4"}
          - {role: user, content: "What is 3 + 3?"}
        checks: {expect_regex: '^\s*6\s*$'}"#;
    let (mock, d) = with_mock(answering("6"), |base| format!(
        "targets:\n  - name: chat\n    base_url: {base}\n    model: m\n    rate: 20/s\n    scenarios:{scenario}\n  - name: anthropic\n    base_url: {base}\n    model: m\n    endpoint: messages\n    rate: 20/s\n    scenarios:{scenario}\n"
    ))
    .await;
    let addr = d.addr();
    let s = wait_for(Duration::from_secs(20), || async {
        let s = scrape(addr).await;
        let runs = |t| {
            value(
                &s,
                "llmprobe_check_runs_total",
                &[("target", t), ("check", "expect_regex")],
            )
            .unwrap_or(0.0)
        };
        (runs("chat") >= 3.0 && runs("anthropic") >= 3.0).then_some(s)
    })
    .await;
    for t in ["chat", "anthropic"] {
        let failed = value(
            &s,
            "llmprobe_check_failures_total",
            &[("target", t), ("check", "expect_regex")],
        );
        assert_eq!(failed, Some(0.0), "{t}");
        assert_eq!(
            sum(&s, "llmprobe_request_failures_total", &[("target", t)]),
            0.0,
            "{t}"
        );
        // The whole list was sent: more prompt tokens than the question alone has.
        let prompt = value(&s, "llmprobe_prompt_tokens_total", &[("target", t)]).unwrap();
        let probes = value(&s, "llmprobe_requests_total", &[("target", t)]).unwrap();
        // The question alone (nonce and 5 words) is 13; with the list, 11 more.
        assert!(
            prompt / probes >= 20.0,
            "{t}: {prompt} prompt tokens in {probes} probes"
        );
    }
    d.shutdown().await.unwrap();
    mock.shutdown().await;
}
