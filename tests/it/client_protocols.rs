//! Every protocol end to end: the client against the in-process mock over loopback
//! TCP, under a paused tokio clock, so TTFT, TTFA, E2E and the token counts are the
//! mock's exact truth. Reasoning models: the first N output tokens are reasoning
//! (TTFT at the first of them, TTFA at the first answer token, N token-times later).

use crate::support::mock as mock_support;

use std::time::Duration;

use llmprobe::client::{Client, ClientConfig, Endpoint};
use llmprobe::mock::MockConfig;
use llmprobe::record::{Outcome, RequestRecord, TokenSource};
use llmprobe::secret::Secret;
use llmprobe::workload::RequestSpec;
use tokio::time::Instant;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

/// TTFT 50 ms, 5 ms per token, the first 20 output tokens reasoning.
fn reasoning_mock() -> MockConfig {
    MockConfig {
        ttft: ms(50),
        itl: ms(5),
        reasoning_tokens: 20,
        ..MockConfig::default()
    }
}

async fn probe(base_url: String, endpoint: Endpoint, stream: bool) -> RequestRecord {
    probe_with(ClientConfig {
        base_url,
        endpoint,
        stream,
        model: "m".into(),
        // Paused-clock timing is exact on a connection's first request.
        reuse_connections: false,
        ..ClientConfig::default()
    })
    .await
}

async fn probe_with(cfg: ClientConfig) -> RequestRecord {
    let client = Client::new(cfg, None).unwrap();
    let spec = RequestSpec {
        prompt: "nonce-1 what is two plus two".into(),
        prompt_tokens: 6,
        max_tokens: 30,
        history: Vec::new(),
        system: None,
        model: None,
    };
    client.send(&spec, 1, Duration::ZERO, Instant::now()).await
}

#[tokio::test(start_paused = true)]
async fn streamed_reasoning_gives_ttft_at_the_first_thought_and_ttfa_at_the_answer() {
    let mock = mock_support::start(reasoning_mock()).await;
    for endpoint in [Endpoint::Chat, Endpoint::Responses, Endpoint::Messages] {
        let r = probe(mock.base_url(), endpoint, true).await;
        assert_eq!(r.outcome, Outcome::Ok, "{endpoint:?}: {:?}", r.error);
        assert_eq!(r.ttft(), Some(ms(50)), "{endpoint:?}");
        // 20 reasoning tokens at 50, 55, … 145 ms; the answer starts at 150 ms.
        assert_eq!(r.ttfa(), Some(ms(150)), "{endpoint:?}");
        assert_eq!(r.e2e(), Some(ms(50 + 29 * 5)), "{endpoint:?}");
        assert_eq!(r.output_tokens(), 30, "{endpoint:?}");
        assert_eq!(r.reasoning_tokens(), 20, "{endpoint:?}");
        // TPOT and ITL are over every output token, reasoning included.
        assert_eq!(r.tpot(), Some(ms(5)), "{endpoint:?}");
        assert!(r.itl().all(|(d, _)| d == ms(5)), "{endpoint:?}");
        assert_eq!(r.usage_prompt_tokens, Some(6), "{endpoint:?}");
        assert_eq!(r.unknown_events, 0, "{endpoint:?}");
    }
    mock.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn each_protocol_uses_its_own_usage_fields() {
    let mock = mock_support::start(reasoning_mock()).await;
    // Chat sends continuous usage with reasoning details; Responses and Messages send
    // one final count.
    let sources = [
        (Endpoint::Chat, TokenSource::ContinuousUsage, Some(20)),
        (
            Endpoint::Completions,
            TokenSource::ContinuousUsage,
            Some(20),
        ),
        (Endpoint::Responses, TokenSource::Usage, Some(20)),
        (Endpoint::Messages, TokenSource::Usage, None),
    ];
    for (endpoint, source, server_reasoning) in sources {
        let r = probe(mock.base_url(), endpoint, true).await;
        assert_eq!(r.token_source, source, "{endpoint:?}");
        assert_eq!(r.usage_completion_tokens, Some(30), "{endpoint:?}");
        assert_eq!(r.usage_reasoning_tokens, server_reasoning, "{endpoint:?}");
    }
    mock.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn completions_have_no_reasoning_field_so_the_first_token_is_the_answer() {
    let mock = mock_support::start(reasoning_mock()).await;
    let r = probe(mock.base_url(), Endpoint::Completions, true).await;
    assert_eq!((r.ttft(), r.ttfa()), (Some(ms(50)), Some(ms(50))));
    mock.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_model_that_does_not_reason_has_ttfa_equal_to_ttft() {
    let mock = mock_support::start(MockConfig {
        reasoning_tokens: 0,
        ..reasoning_mock()
    })
    .await;
    for endpoint in [Endpoint::Chat, Endpoint::Responses, Endpoint::Messages] {
        let r = probe(mock.base_url(), endpoint, true).await;
        assert_eq!(
            (r.ttft(), r.ttfa()),
            (Some(ms(50)), Some(ms(50))),
            "{endpoint:?}"
        );
        assert_eq!(r.reasoning_tokens(), 0, "{endpoint:?}");
        assert!(!r.saw_reasoning(), "{endpoint:?}");
    }
    mock.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn non_streamed_answers_have_e2e_only() {
    let mock = mock_support::start(reasoning_mock()).await;
    for endpoint in [
        Endpoint::Chat,
        Endpoint::Completions,
        Endpoint::Responses,
        Endpoint::Messages,
    ] {
        let r = probe(mock.base_url(), endpoint, false).await;
        assert_eq!(r.outcome, Outcome::Ok, "{endpoint:?}: {:?}", r.error);
        assert!(!r.streamed, "{endpoint:?}");
        assert_eq!(
            (r.ttft(), r.ttfa(), r.tpot()),
            (None, None, None),
            "{endpoint:?}"
        );
        assert_eq!(r.itl().count(), 0, "{endpoint:?}");
        // The whole answer arrives when its last token is generated.
        assert_eq!(r.e2e(), Some(ms(50 + 29 * 5)), "{endpoint:?}");
        assert_eq!(r.output_tokens(), 30, "{endpoint:?}");
        assert_eq!(r.token_source, TokenSource::Usage, "{endpoint:?}");
    }
    mock.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn embeddings_are_timed_end_to_end_with_prompt_usage() {
    let mock = mock_support::start(reasoning_mock()).await;
    // `stream: true` in the config does not matter: embeddings never stream.
    let r = probe(mock.base_url(), Endpoint::Embeddings, true).await;
    assert_eq!(r.outcome, Outcome::Ok, "{:?}", r.error);
    assert_eq!(r.e2e(), Some(ms(50)));
    assert_eq!(r.ttft(), None);
    assert_eq!((r.usage_prompt_tokens, r.output_tokens()), (Some(6), 0));
    mock.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn protocol_faults_become_the_right_failures() {
    let cases: [(&str, Endpoint, Outcome, &str); 8] = [
        (
            "error_event",
            Endpoint::Responses,
            Outcome::StreamError,
            "engine failed mid-stream (server_error)",
        ),
        (
            "error_event",
            Endpoint::Messages,
            Outcome::StreamError,
            "engine failed mid-stream (api_error)",
        ),
        (
            "no_done",
            Endpoint::Responses,
            Outcome::StreamError,
            "without `response.completed`",
        ),
        (
            "no_done",
            Endpoint::Messages,
            Outcome::StreamError,
            "without `message_stop`",
        ),
        (
            "empty_completion",
            Endpoint::Messages,
            Outcome::EmptyOutput,
            "without any generated text",
        ),
        (
            "malformed_json",
            Endpoint::Responses,
            Outcome::StreamError,
            "malformed JSON chunk",
        ),
        (
            "empty_completion",
            Endpoint::Embeddings,
            Outcome::EmptyOutput,
            "no embedding vector",
        ),
        (
            "wrong_content_type",
            Endpoint::Embeddings,
            Outcome::StreamError,
            "expected an application/json",
        ),
    ];
    for (fault, endpoint, outcome, text) in cases {
        let mock = mock_support::start(MockConfig {
            faults: vec![fault.parse().unwrap()],
            ..reasoning_mock()
        })
        .await;
        let r = probe(mock.base_url(), endpoint, true).await;
        assert_eq!(r.outcome, outcome, "{fault} on {endpoint:?}: {:?}", r.error);
        let error = r.error.unwrap_or_default();
        assert!(error.contains(text), "{fault} on {endpoint:?}: {error}");
        mock.shutdown().await;
    }
}

#[tokio::test(start_paused = true)]
async fn messages_send_the_key_as_x_api_key_with_the_anthropic_version() {
    let mock = mock_support::start(MockConfig {
        api_key: Some("sk-ant-canary".into()),
        ..reasoning_mock()
    })
    .await;
    let with_key = |key: &str| ClientConfig {
        base_url: mock.base_url(),
        endpoint: Endpoint::Messages,
        api_key: Some(Secret::new(key.to_string())),
        reuse_connections: false,
        ..ClientConfig::default()
    };
    let r = probe_with(with_key("sk-ant-canary")).await;
    assert_eq!(r.outcome, Outcome::Ok, "{:?}", r.error);
    let r = probe_with(with_key("sk-ant-wrong")).await;
    assert_eq!(r.outcome, Outcome::Http4xx);
    let error = r.error.unwrap_or_default();
    assert!(
        error.contains("401") && !error.contains("sk-ant-wrong"),
        "{error}"
    );
    mock.shutdown().await;
}
