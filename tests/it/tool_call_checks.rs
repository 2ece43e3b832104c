//! The tool-call check end to end: the client offers a function to the in-process
//! mock (chat and responses, streamed and whole), the mock calls it with arguments
//! built from the parameter schema, and the check judges the decoded call. The
//! `no_tool_call` fault (plain text), a wrong-answer fault, a schema the mock's
//! arguments cannot meet and arguments cut by `max_tokens` each fail it, with the
//! outcome still `ok`.

use crate::support::mock as mock_support;

use std::sync::Arc;
use std::time::Duration;

use llmprobe::check::{CheckSpec, SchemaSource, ToolCallSpec, ToolChoice};
use llmprobe::client::{Client, ClientConfig, Endpoint};
use llmprobe::latency::Slo;
use llmprobe::mock::MockConfig;
use llmprobe::record::{CheckKind, CheckResult, Outcome, RequestRecord};
use llmprobe::secret::Secret;
use llmprobe::workload::RequestSpec;
use serde_json::{Value, json};
use tokio::time::Instant;

fn mock() -> MockConfig {
    MockConfig {
        ttft: Duration::from_millis(20),
        itl: Duration::from_millis(2),
        answer: Some("It is sunny.".into()),
        ..MockConfig::default()
    }
}

fn weather() -> Value {
    json!({"type": "object", "required": ["city", "days"],
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"},
                       "unit": {"enum": ["C", "F"]}},
        "additionalProperties": false})
}

fn tool_check(parameters: Value, choice: Option<ToolChoice>) -> CheckSpec {
    CheckSpec {
        expect_tool_call: Some(ToolCallSpec {
            name: "get_weather".into(),
            description: Some("The weather in a city.".into()),
            parameters: Some(SchemaSource::Inline(parameters)),
            tool_choice: choice,
        }),
        ..CheckSpec::default()
    }
}

async fn probe(
    base_url: String,
    endpoint: Endpoint,
    stream: bool,
    fault: Option<&str>,
    spec: &CheckSpec,
    max_tokens: u32,
) -> RequestRecord {
    let tool = spec.expect_tool_call.as_ref().unwrap();
    let cfg = ClientConfig {
        base_url,
        endpoint,
        stream,
        model: "m".into(),
        reuse_connections: false,
        headers: fault
            .map(|f| vec![("x-mock-fault".to_string(), Secret::new(f))])
            .unwrap_or_default(),
        tool: Some(tool.offer(tool.parameters().unwrap())),
        ..ClientConfig::default()
    };
    let checks = Arc::new(spec.compile().unwrap());
    let client = Client::new(cfg, None).unwrap().with_checks(checks);
    let req = RequestSpec {
        prompt: "nonce-1 what is the weather in Paris for 3 days?".into(),
        prompt_tokens: 10,
        max_tokens,
        history: Vec::new(),
        system: None,
        model: None,
    };
    client.send(&req, 1, Duration::ZERO, Instant::now()).await
}

fn verdict(r: &RequestRecord) -> &CheckResult {
    assert_eq!(r.checks.len(), 1, "{:?}", r.checks);
    assert_eq!(r.checks[0].check, CheckKind::ExpectToolCall);
    &r.checks[0]
}

const TOOL_ENDPOINTS: [Endpoint; 2] = [Endpoint::Chat, Endpoint::Responses];

#[tokio::test(start_paused = true)]
async fn a_call_with_valid_arguments_passes_streamed_and_whole() {
    let mock = mock_support::start(mock()).await;
    let spec = tool_check(weather(), Some(ToolChoice::Function));
    for endpoint in TOOL_ENDPOINTS {
        for stream in [true, false] {
            let what = format!("{endpoint:?} stream={stream}");
            let r = probe(mock.base_url(), endpoint, stream, None, &spec, 30).await;
            assert_eq!(r.outcome, Outcome::Ok, "{what}: {:?}", r.error);
            assert!(verdict(&r).passed, "{what}: {:?}", r.checks);
            assert!(r.is_good(&Slo::default()), "{what}");
            // `{"city": "x", "days": 1}`: four argument tokens, each its own chunk
            // when streamed, timed like answer text.
            assert_eq!(r.output_tokens(), 4, "{what}");
            assert_eq!(r.streamed, stream, "{what}");
            if stream {
                assert_eq!(r.chunks.len(), 4, "{what}");
                assert!(r.ttft().is_some(), "{what}");
            }
            let bytes: u32 = r.chunks.iter().map(|c| c.text_bytes).sum();
            assert_eq!(
                bytes as usize,
                r#"{"city": "x", "days": 1}"#.len(),
                "{what}"
            );
            let finish = match endpoint {
                Endpoint::Chat => "tool_calls",
                _ => "completed",
            };
            assert_eq!(r.finish_reason.as_deref(), Some(finish), "{what}");
        }
    }
    mock.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn no_call_or_a_wrong_answer_fails_with_the_text_quoted() {
    let mock = mock_support::start(mock()).await;
    let spec = tool_check(weather(), None);
    for endpoint in TOOL_ENDPOINTS {
        for stream in [true, false] {
            for (fault, excerpt) in [
                ("no_tool_call", "It is sunny."),
                ("repeat", " It It It It It It It It It It"),
            ] {
                let what = format!("{endpoint:?} stream={stream} {fault}");
                let r = probe(mock.base_url(), endpoint, stream, Some(fault), &spec, 10).await;
                assert_eq!(r.outcome, Outcome::Ok, "{what}: {:?}", r.error);
                let v = verdict(&r);
                assert!(!v.passed, "{what}");
                assert_eq!(
                    v.reason.as_deref(),
                    Some("the answer called no tool (expected get_weather)"),
                    "{what}"
                );
                assert_eq!(v.excerpt.as_deref(), Some(excerpt), "{what}");
                assert!(!r.is_good(&Slo::default()), "{what}");
            }
        }
    }
    mock.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn arguments_that_break_the_schema_or_are_cut_fail() {
    let mock = mock_support::start(mock()).await;
    // The mock answers "x" for a string: too short for this schema.
    let strict = json!({"type": "object", "required": ["city"],
        "properties": {"city": {"type": "string", "minLength": 3}}});
    let spec = tool_check(strict, Some(ToolChoice::Required));
    for endpoint in TOOL_ENDPOINTS {
        for stream in [true, false] {
            let what = format!("{endpoint:?} stream={stream}");
            let r = probe(mock.base_url(), endpoint, stream, None, &spec, 30).await;
            let v = verdict(&r);
            let reason = v.reason.as_deref().unwrap_or_default();
            assert!(
                reason.starts_with(
                    "the arguments of get_weather do not match its parameters at /city"
                ),
                "{what}: {reason}"
            );
            assert_eq!(v.excerpt.as_deref(), Some(r#"{"city": "x"}"#), "{what}");
        }
    }
    // Two of the four argument tokens: `{"city": "x",` is not JSON.
    let spec = tool_check(weather(), None);
    for endpoint in TOOL_ENDPOINTS {
        for stream in [true, false] {
            let what = format!("{endpoint:?} stream={stream}");
            let r = probe(mock.base_url(), endpoint, stream, None, &spec, 2).await;
            assert_eq!(r.outcome, Outcome::Ok, "{what}: {:?}", r.error);
            let v = verdict(&r);
            let reason = v.reason.as_deref().unwrap_or_default();
            assert!(
                reason.starts_with("the arguments of get_weather are not JSON"),
                "{what}: {reason}"
            );
            assert_eq!(v.excerpt.as_deref(), Some(r#"{"city": "x","#), "{what}");
        }
    }
    mock.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_call_to_another_function_fails() {
    let mock = mock_support::start(mock()).await;
    // The mock calls the first function offered; the check expects another name.
    let offered = tool_check(weather(), None);
    let mut expected = offered.clone();
    expected.expect_tool_call.as_mut().unwrap().name = "get_time".into();
    let tool = offered.expect_tool_call.as_ref().unwrap();
    let cfg = ClientConfig {
        base_url: mock.base_url(),
        model: "m".into(),
        tool: Some(tool.offer(tool.parameters().unwrap())),
        ..ClientConfig::default()
    };
    let client = Client::new(cfg, None)
        .unwrap()
        .with_checks(Arc::new(expected.compile().unwrap()));
    let req = RequestSpec {
        prompt: "nonce-1 weather?".into(),
        prompt_tokens: 2,
        max_tokens: 30,
        history: Vec::new(),
        system: None,
        model: None,
    };
    let r = client.send(&req, 1, Duration::ZERO, Instant::now()).await;
    assert_eq!(
        verdict(&r).reason.as_deref(),
        Some("the answer called get_weather but not get_time")
    );
    mock.shutdown().await;
}
