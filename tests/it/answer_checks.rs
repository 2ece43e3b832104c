//! Answer checks end to end: the client against the in-process mock, every generating
//! protocol, streamed and whole. A correct `--answer` passes every check kind; each
//! wrong-answer fault fails exactly the checks it should, with the outcome still `ok`
//! (a check failure is not a transport failure) and the request not good.

use crate::support::mock as mock_support;

use std::sync::Arc;
use std::time::Duration;

use llmprobe::check::{CheckSpec, ModelMatch, SchemaSource};
use llmprobe::client::{Client, ClientConfig, Endpoint};
use llmprobe::latency::Slo;
use llmprobe::mock::MockConfig;
use llmprobe::record::{CheckKind, Outcome, RequestRecord};
use llmprobe::secret::Secret;
use llmprobe::workload::RequestSpec;
use tokio::time::Instant;

const ANSWER: &str = r#"{"answer": 4}"#;

fn mock() -> MockConfig {
    MockConfig {
        ttft: Duration::from_millis(20),
        itl: Duration::from_millis(2),
        answer: Some(ANSWER.into()),
        ..MockConfig::default()
    }
}

/// The finish reason of an answer that ended by itself, as each protocol spells it.
fn natural_stop(endpoint: Endpoint) -> &'static str {
    match endpoint {
        Endpoint::Responses => "completed",
        Endpoint::Messages => "end_turn",
        _ => "stop",
    }
}

fn every_check(endpoint: Endpoint) -> CheckSpec {
    CheckSpec {
        expect_regex: Some(r#""answer":\s*4\b"#.into()),
        expect_not_regex: Some(r"<\|im_start\|>".into()),
        expect_json_schema: Some(SchemaSource::Inline(serde_json::json!({
            "type": "object", "required": ["answer"],
            "properties": {"answer": {"type": "integer"}}, "additionalProperties": false
        }))),
        expect_model: Some(ModelMatch::Exact("m".into())),
        expect_finish_reason: Some(natural_stop(endpoint).into()),
        min_output_tokens: Some(2),
        max_repetition: Some(0.5),
        ..CheckSpec::default()
    }
}

async fn probe(
    base_url: String,
    endpoint: Endpoint,
    stream: bool,
    fault: Option<&str>,
) -> RequestRecord {
    let cfg = ClientConfig {
        base_url,
        endpoint,
        stream,
        model: "m".into(),
        reuse_connections: false,
        headers: fault
            .map(|f| vec![("x-mock-fault".to_string(), Secret::new(f))])
            .unwrap_or_default(),
        ..ClientConfig::default()
    };
    let checks = Arc::new(every_check(endpoint).compile().unwrap());
    let client = Client::new(cfg, None).unwrap().with_checks(checks);
    let spec = RequestSpec {
        prompt: "nonce-1 what is two plus two, as JSON".into(),
        prompt_tokens: 8,
        max_tokens: 30,
        history: Vec::new(),
        system: None,
        model: None,
    };
    client.send(&spec, 1, Duration::ZERO, Instant::now()).await
}

fn failed(r: &RequestRecord) -> Vec<CheckKind> {
    r.failed_checks().map(|c| c.check).collect()
}

const GENERATING: [Endpoint; 4] = [
    Endpoint::Chat,
    Endpoint::Completions,
    Endpoint::Responses,
    Endpoint::Messages,
];

#[tokio::test(start_paused = true)]
async fn a_correct_answer_passes_every_check_in_every_protocol() {
    let mock = mock_support::start(mock()).await;
    for endpoint in GENERATING {
        for stream in [true, false] {
            let r = probe(mock.base_url(), endpoint, stream, None).await;
            let what = format!("{endpoint:?} stream={stream}");
            assert_eq!(r.outcome, Outcome::Ok, "{what}: {:?}", r.error);
            assert_eq!(r.checks.len(), 7, "{what}");
            assert_eq!(failed(&r), [], "{what}: {:?}", r.checks);
            assert!(r.is_good(&Slo::default()), "{what}");
        }
    }
    mock.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn each_wrong_answer_fails_exactly_its_checks() {
    use CheckKind::*;
    let mock = mock_support::start(mock()).await;
    let cases: [(&str, &[CheckKind]); 5] = [
        // Random words to the length limit: no JSON, no match, cut at `length`.
        (
            "garbage",
            &[ExpectRegex, ExpectJsonSchema, ExpectFinishReason],
        ),
        (
            "repeat",
            &[
                ExpectRegex,
                ExpectJsonSchema,
                ExpectFinishReason,
                MaxRepetition,
            ],
        ),
        ("wrong_model", &[ExpectModel]),
        ("bad_json", &[ExpectJsonSchema]),
        ("template_leak", &[ExpectNotRegex, ExpectJsonSchema]),
    ];
    for endpoint in GENERATING {
        for stream in [true, false] {
            for (fault, want) in cases {
                let r = probe(mock.base_url(), endpoint, stream, Some(fault)).await;
                let what = format!("{endpoint:?} stream={stream} {fault}");
                assert_eq!(r.outcome, Outcome::Ok, "{what}: {:?}", r.error);
                assert_eq!(failed(&r), want, "{what}: {:?}", r.checks);
                assert!(!r.is_good(&Slo::default()), "{what}");
            }
        }
    }
    mock.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_failure_says_why_and_quotes_the_answer_escaped() {
    let mock = mock_support::start(mock()).await;
    let r = probe(mock.base_url(), Endpoint::Chat, true, Some("template_leak")).await;
    let leak = r.failed_checks().next().unwrap();
    assert_eq!(leak.check, CheckKind::ExpectNotRegex);
    assert_eq!(
        leak.reason.as_deref(),
        Some(r"the answer matches /<\|im_start\|>/ at byte 0")
    );
    assert_eq!(
        leak.excerpt.as_deref(),
        Some(r#"<|im_start|>assistant\n{"answer": 4}"#)
    );
    let r = probe(
        mock.base_url(),
        Endpoint::Messages,
        false,
        Some("wrong_model"),
    )
    .await;
    let model = r.failed_checks().next().unwrap();
    assert_eq!(
        model.reason.as_deref(),
        Some(r#"model "mock-wrong-model" is not "m""#)
    );
    mock.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_transport_failure_runs_no_check() {
    let mock = mock_support::start(mock()).await;
    let r = probe(mock.base_url(), Endpoint::Chat, true, Some("http_500")).await;
    assert_eq!(r.outcome, Outcome::Http5xx);
    assert!(r.checks.is_empty());
    mock.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_answer_that_echoes_the_key_is_scrubbed_from_the_record() {
    const KEY: &str = "sk-canary-7f3a9c";
    let mock = mock_support::start(MockConfig {
        answer: Some(format!("your key is {KEY}\u{1b}[2J done")),
        api_key: Some(KEY.into()),
        ..mock()
    })
    .await;
    let cfg = ClientConfig {
        base_url: mock.base_url(),
        model: "m".into(),
        api_key: Some(Secret::new(KEY)),
        reuse_connections: false,
        ..ClientConfig::default()
    };
    let checks = CheckSpec {
        expect_regex: Some("^never$".into()),
        ..CheckSpec::default()
    };
    let client = Client::new(cfg, None)
        .unwrap()
        .with_checks(Arc::new(checks.compile().unwrap()));
    let spec = RequestSpec {
        prompt: "nonce-2 echo my key".into(),
        prompt_tokens: 4,
        max_tokens: 30,
        history: Vec::new(),
        system: None,
        model: None,
    };
    let r = client.send(&spec, 1, Duration::ZERO, Instant::now()).await;
    assert_eq!(r.outcome, Outcome::Ok, "{:?}", r.error);
    let json = serde_json::to_string(&r).unwrap();
    assert!(!json.contains(KEY) && !json.contains('\u{1b}'), "{json}");
    let excerpt = r.checks[0].excerpt.as_deref().unwrap();
    assert!(
        excerpt.starts_with("your key is ") && excerpt.contains(r"\u{1b}[2J done"),
        "{excerpt}"
    );
    mock.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn expect_model_checks_an_embeddings_answer() {
    let mock = mock_support::start(mock()).await;
    let spec = CheckSpec {
        expect_model: Some(ModelMatch::Exact("m".into())),
        ..CheckSpec::default()
    };
    for (fault, passed) in [(None, true), (Some("wrong_model"), false)] {
        let cfg = ClientConfig {
            base_url: mock.base_url(),
            endpoint: Endpoint::Embeddings,
            model: "m".into(),
            headers: fault
                .map(|f| vec![("x-mock-fault".to_string(), Secret::new(f))])
                .unwrap_or_default(),
            ..ClientConfig::default()
        };
        let client = Client::new(cfg, None)
            .unwrap()
            .with_checks(Arc::new(spec.compile().unwrap()));
        let req = RequestSpec {
            prompt: "nonce-1 embed me".into(),
            prompt_tokens: 3,
            max_tokens: 1,
            history: Vec::new(),
            system: None,
            model: None,
        };
        let r = client.send(&req, 1, Duration::ZERO, Instant::now()).await;
        assert_eq!(r.outcome, Outcome::Ok, "{fault:?}: {:?}", r.error);
        assert_eq!(r.checks.len(), 1, "{fault:?}");
        assert_eq!(r.checks[0].check, CheckKind::ExpectModel);
        assert_eq!(r.checks[0].passed, passed, "{fault:?}: {:?}", r.checks);
        assert_eq!(r.is_good(&Slo::default()), passed, "{fault:?}");
        if !passed {
            assert_eq!(
                r.checks[0].reason.as_deref(),
                Some(r#"model "mock-wrong-model" is not "m""#)
            );
        }
    }
    mock.shutdown().await;
}
