//! The hosted APIs end to end: the client with `provider:` set against the in-process
//! mock's routes for it, under a paused tokio clock, so TTFT, TTFA, E2E and the token
//! counts are the mock's exact truth (TTFT 50 ms, 5 ms per token, the first 20 of 30
//! output tokens reasoning where the API carries reasoning), plus each provider's own
//! auth and rate-limit shapes.

use crate::support::mock as mock_support;

use std::time::Duration;

use llmprobe::client::{Client, ClientConfig, Endpoint, Provider};
use llmprobe::mock::MockConfig;
use llmprobe::record::{Outcome, RequestRecord};
use llmprobe::secret::Secret;
use llmprobe::workload::RequestSpec;
use tokio::time::Instant;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn mock_config(reasoning: u32) -> MockConfig {
    MockConfig {
        ttft: ms(50),
        itl: ms(5),
        reasoning_tokens: reasoning,
        api_key: Some("provider-key-1".into()),
        ..MockConfig::default()
    }
}

fn cfg(base_url: String, provider: Provider, endpoint: Endpoint, stream: bool) -> ClientConfig {
    ClientConfig {
        base_url,
        provider: Some(provider),
        endpoint,
        stream,
        model: "m-1".into(),
        api_key: Some(Secret::new("provider-key-1")),
        // Paused-clock timing is exact on a connection's first request.
        reuse_connections: false,
        ..ClientConfig::default()
    }
}

pub async fn probe(cfg: ClientConfig) -> RequestRecord {
    let client = Client::new(cfg, None).unwrap();
    let spec = RequestSpec {
        prompt: "nonce-1 what is two plus two".into(),
        prompt_tokens: 6,
        max_tokens: 30,
        history: Vec::new(),
        system: None,
    };
    client.send(&spec, 1, Duration::ZERO, Instant::now()).await
}

/// The mock's truth for a streamed answer of 30 tokens, 20 of them reasoning.
fn assert_reasoning_truth(r: &RequestRecord, what: &str) {
    assert_eq!(r.outcome, Outcome::Ok, "{what}: {:?}", r.error);
    assert_eq!(r.ttft(), Some(ms(50)), "{what}");
    assert_eq!(r.ttfa(), Some(ms(150)), "{what}");
    assert_eq!(r.e2e(), Some(ms(50 + 29 * 5)), "{what}");
    assert_eq!(r.output_tokens(), 30, "{what}");
    assert_eq!(r.reasoning_tokens(), 20, "{what}");
    assert_eq!(r.tpot(), Some(ms(5)), "{what}");
    assert_eq!(r.usage_prompt_tokens, Some(6), "{what}");
    assert_eq!(r.unknown_events, 0, "{what}");
}

#[tokio::test(start_paused = true)]
async fn azure_v1_and_dated_paths_give_the_mocks_exact_timing() {
    let mock = mock_support::start(mock_config(20)).await;
    for version in [None, Some("v1"), Some("2024-10-21")] {
        for endpoint in [Endpoint::Chat, Endpoint::Responses] {
            let mut c = cfg(mock.base_url(), Provider::Azure, endpoint, true);
            c.api_version = version.map(String::from);
            let r = probe(c).await;
            assert_reasoning_truth(&r, &format!("{version:?} {endpoint:?}"));
        }
        let mut c = cfg(mock.base_url(), Provider::Azure, Endpoint::Embeddings, false);
        c.api_version = version.map(String::from);
        let r = probe(c).await;
        assert_eq!(r.outcome, Outcome::Ok, "{version:?}: {:?}", r.error);
        assert_eq!(r.e2e(), Some(ms(50)), "{version:?}");
    }
    mock.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn azure_sends_the_key_as_api_key_and_a_wrong_one_is_refused() {
    let mock = mock_support::start(mock_config(0)).await;
    let mut c = cfg(mock.base_url(), Provider::Azure, Endpoint::Chat, true);
    c.api_key = Some(Secret::new("wrong-key-2"));
    let r = probe(c).await;
    assert_eq!(r.http_status, Some(401));
    assert!(!r.error.as_deref().unwrap().contains("wrong-key-2"));
    // A dated path without the version is not a route Azure has.
    let mut c = cfg(mock.base_url(), Provider::Azure, Endpoint::Chat, true);
    c.api_version = Some("2024-10-21".into());
    c.headers = vec![("x-mock-fault".into(), Secret::new("http_429=7"))];
    let r = probe(c).await;
    assert_eq!(r.outcome, Outcome::Http429, "{:?}", r.error);
    assert_eq!(r.retry_after, Some(Duration::from_secs(7)));
    mock.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn gemini_streamed_thoughts_are_reasoning_and_usage_adds_them() {
    let mock = mock_support::start(mock_config(20)).await;
    let r = probe(cfg(mock.base_url(), Provider::Gemini, Endpoint::Chat, true)).await;
    assert_reasoning_truth(&r, "gemini streamed");
    assert_eq!(r.usage_completion_tokens, Some(30));
    assert_eq!(r.usage_reasoning_tokens, Some(20));
    assert_eq!(r.finish_reason.as_deref(), Some("MAX_TOKENS"));
    let r = probe(cfg(mock.base_url(), Provider::Gemini, Endpoint::Chat, false)).await;
    assert_eq!(r.outcome, Outcome::Ok, "{:?}", r.error);
    assert_eq!(r.e2e(), Some(ms(50 + 29 * 5)));
    assert_eq!((r.output_tokens(), r.reasoning_tokens()), (30, 20));
    mock.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn gemini_resource_exhausted_is_http_429_with_its_retry_after() {
    let mock = mock_support::start(mock_config(0)).await;
    let mut c = cfg(mock.base_url(), Provider::Gemini, Endpoint::Chat, true);
    c.headers = vec![("x-mock-fault".into(), Secret::new("http_429=3"))];
    let r = probe(c).await;
    assert_eq!(r.outcome, Outcome::Http429);
    assert_eq!(r.retry_after, Some(Duration::from_secs(3)));
    assert!(r.error.as_deref().unwrap().contains("RESOURCE_EXHAUSTED"), "{:?}", r.error);
    // A wrong key: Google's 400, the key never in the error.
    let mut c = cfg(mock.base_url(), Provider::Gemini, Endpoint::Chat, true);
    c.api_key = Some(Secret::new("wrong-key-3"));
    let r = probe(c).await;
    assert_eq!(r.http_status, Some(400));
    assert!(!r.error.as_deref().unwrap().contains("wrong-key-3"));
    mock.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn gemini_error_event_mid_stream_is_a_stream_error_with_its_message() {
    let mock = mock_support::start(mock_config(0)).await;
    let mut c = cfg(mock.base_url(), Provider::Gemini, Endpoint::Chat, true);
    c.headers = vec![("x-mock-fault".into(), Secret::new("error_event"))];
    let r = probe(c).await;
    assert_eq!(r.outcome, Outcome::StreamError, "{:?}", r.error);
    assert!(r.error.as_deref().unwrap().contains("INTERNAL"), "{:?}", r.error);
    mock.shutdown().await;
}

#[test]
fn a_provider_refuses_an_endpoint_it_does_not_serve() {
    let c = cfg("http://127.0.0.1:1".into(), Provider::Gemini, Endpoint::Embeddings, false);
    let e = Client::new(c, None).unwrap_err().to_string();
    assert!(e.contains("provider gemini serves endpoint chat, not embeddings"), "{e}");
}
