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
        model: None,
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
        let mut c = cfg(
            mock.base_url(),
            Provider::Azure,
            Endpoint::Embeddings,
            false,
        );
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
    let r = probe(cfg(
        mock.base_url(),
        Provider::Gemini,
        Endpoint::Chat,
        false,
    ))
    .await;
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
    assert!(
        r.error.as_deref().unwrap().contains("RESOURCE_EXHAUSTED"),
        "{:?}",
        r.error
    );
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
    assert!(
        r.error.as_deref().unwrap().contains("INTERNAL"),
        "{:?}",
        r.error
    );
    mock.shutdown().await;
}

#[test]
fn a_provider_refuses_an_endpoint_it_does_not_serve() {
    let c = cfg(
        "http://127.0.0.1:1".into(),
        Provider::Gemini,
        Endpoint::Embeddings,
        false,
    );
    let e = Client::new(c, None).unwrap_err().to_string();
    assert!(
        e.contains("provider gemini serves endpoint chat, not embeddings"),
        "{e}"
    );
}

/// AWS credentials in files (as a mounted Secret), and the mock checking signatures
/// made with them.
mod bedrock {
    use super::*;
    use crate::support::client::{Script, serve};
    use llmprobe::client::AwsConfig;
    use llmprobe::client::auth::event_stream::encode;
    use llmprobe::mock::MockAws;

    const SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

    pub fn aws_files(dir: &std::path::Path, secret: &str) -> AwsConfig {
        let id = dir.join("id");
        let key = dir.join("secret");
        let token = dir.join("token");
        std::fs::write(&id, "AKIDEXAMPLE\n").unwrap();
        std::fs::write(&key, format!("{secret}\n")).unwrap();
        std::fs::write(&token, "session-token-canary-4\n").unwrap();
        AwsConfig {
            region: "us-east-1".into(),
            access_key_id_file: Some(id),
            secret_access_key_file: Some(key),
            session_token_file: Some(token),
            profile: None,
        }
    }

    fn bedrock_mock(reasoning: u32) -> MockConfig {
        MockConfig {
            aws: Some(MockAws {
                access_key_id: "AKIDEXAMPLE".into(),
                secret_access_key: Secret::new(SECRET),
                region: "us-east-1".into(),
            }),
            api_key: None,
            ..mock_config(reasoning)
        }
    }

    fn bedrock_cfg(base_url: String, aws: AwsConfig, stream: bool) -> ClientConfig {
        ClientConfig {
            api_key: None,
            model: "anthropic.claude-3-haiku-20240307-v1:0".into(),
            aws: Some(aws),
            ..cfg(base_url, Provider::Bedrock, Endpoint::Chat, stream)
        }
    }

    #[tokio::test(start_paused = true)]
    async fn converse_stream_and_converse_give_the_mocks_exact_timing_and_its_latency() {
        let dir = tempfile::tempdir().unwrap();
        let mock = mock_support::start(bedrock_mock(20)).await;
        let r = probe(bedrock_cfg(
            mock.base_url(),
            aws_files(dir.path(), SECRET),
            true,
        ))
        .await;
        assert_reasoning_truth(&r, "converse-stream");
        assert_eq!(r.finish_reason.as_deref(), Some("max_tokens"));
        // Bedrock's own latency: the mock's time from arrival to its last token.
        assert_eq!(r.server_latency, Some(ms(195)));
        let r = probe(bedrock_cfg(
            mock.base_url(),
            aws_files(dir.path(), SECRET),
            false,
        ))
        .await;
        assert_eq!(r.outcome, Outcome::Ok, "{:?}", r.error);
        assert_eq!(r.e2e(), Some(ms(195)));
        // Converse's usage has no reasoning count: a whole answer's split is the text's.
        assert_eq!(r.output_tokens(), 30);
        assert_eq!(r.server_latency, Some(ms(195)));
        mock.shutdown().await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_wrong_secret_is_refused_by_the_signature_check_and_never_shown() {
        let dir = tempfile::tempdir().unwrap();
        let mock = mock_support::start(bedrock_mock(0)).await;
        let wrong = "wrong-secret-canary-5";
        let r = probe(bedrock_cfg(
            mock.base_url(),
            aws_files(dir.path(), wrong),
            true,
        ))
        .await;
        assert_eq!(r.http_status, Some(403), "{:?}", r.error);
        let err = r.error.unwrap();
        assert!(err.contains("signature"), "{err}");
        assert!(
            !err.contains(wrong) && !err.contains("session-token-canary-4"),
            "{err}"
        );
        mock.shutdown().await;
    }

    #[tokio::test(start_paused = true)]
    async fn throttling_is_http_429_as_a_status_and_as_an_exception_frame() {
        let dir = tempfile::tempdir().unwrap();
        let mock = mock_support::start(bedrock_mock(0)).await;
        let mut c = bedrock_cfg(mock.base_url(), aws_files(dir.path(), SECRET), true);
        c.headers = vec![("x-mock-fault".into(), Secret::new("http_429=9"))];
        let r = probe(c).await;
        assert_eq!(r.outcome, Outcome::Http429, "{:?}", r.error);
        assert_eq!(r.retry_after, Some(Duration::from_secs(9)));
        mock.shutdown().await;

        let start = encode(
            &[(":message-type", "event"), (":event-type", "messageStart")],
            br#"{"role":"assistant"}"#,
        );
        let throttled = encode(
            &[
                (":message-type", "exception"),
                (":exception-type", "throttlingException"),
            ],
            br#"{"message":"Too many tokens, please wait before trying again."}"#,
        );
        let server = serve(vec![
            Script::default()
                .head(200, "OK", "application/vnd.amazon.eventstream", true)
                .raw(&start)
                .wait_ms(20)
                .raw(&throttled)
                .end(),
        ])
        .await;
        let r = probe(bedrock_cfg(
            server.base_url(),
            aws_files(dir.path(), SECRET),
            true,
        ))
        .await;
        assert_eq!(r.outcome, Outcome::Http429, "{:?}", r.error);
        assert!(
            r.error.as_deref().unwrap().contains("Too many tokens"),
            "{:?}",
            r.error
        );
        let sent = &server.requests()[0];
        assert!(
            sent.head.starts_with(
                "POST /model/anthropic.claude-3-haiku-20240307-v1%3A0/converse-stream "
            )
        );
        assert!(
            sent.header("authorization")
                .unwrap()
                .starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
        );
        assert_eq!(
            sent.header("x-amz-security-token").as_deref(),
            Some("session-token-canary-4")
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_frame_with_a_bad_crc_is_a_stream_error_that_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let mut delta = encode(
            &[
                (":message-type", "event"),
                (":event-type", "contentBlockDelta"),
            ],
            br#"{"contentBlockIndex":0,"delta":{"text":"hi"}}"#,
        );
        let last = delta.len() - 1;
        delta[last] ^= 0x5a;
        let server = serve(vec![
            Script::default()
                .head(200, "OK", "application/vnd.amazon.eventstream", true)
                .raw(&delta)
                .end(),
        ])
        .await;
        let r = probe(bedrock_cfg(
            server.base_url(),
            aws_files(dir.path(), SECRET),
            true,
        ))
        .await;
        assert_eq!(r.outcome, Outcome::StreamError);
        assert!(
            r.error
                .as_deref()
                .unwrap()
                .contains("event-stream message CRC mismatch"),
            "{:?}",
            r.error
        );
    }
}

/// Vertex: a token file, or a service account whose JWT the mock's token endpoint
/// checks with the key's public half before it grants tokens of a set lifetime.
mod vertex {
    use super::*;
    use llmprobe::client::GoogleConfig;
    use llmprobe::client::auth::jwt::ServiceAccountKey;
    use llmprobe::mock::MockGoogle;

    fn fixture() -> serde_json::Value {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/google/service-account.json"
        );
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    /// The test account's key file with its token endpoint at the mock, and the mock's
    /// side of it: the key's public half, tokens valid for `ttl`.
    fn account(
        dir: &std::path::Path,
        base_url: &str,
        ttl: Duration,
    ) -> (std::path::PathBuf, MockGoogle) {
        let mut key = fixture();
        key["token_uri"] = format!("{base_url}/token").into();
        let path = dir.join("sa.json");
        std::fs::write(&path, key.to_string()).unwrap();
        let parsed = ServiceAccountKey::from_file(&path).unwrap();
        let google = MockGoogle {
            public_key_der: parsed.public_key_der(),
            client_email: parsed.client_email.clone(),
            token_ttl: ttl,
        };
        (path, google)
    }

    fn vertex_cfg(base_url: String, google: GoogleConfig, stream: bool) -> ClientConfig {
        ClientConfig {
            api_key: None,
            model: "gemini-2.0-flash".into(),
            google: Some(google),
            ..cfg(base_url, Provider::Vertex, Endpoint::Chat, stream)
        }
    }

    fn located(sa: Option<std::path::PathBuf>, token: Option<std::path::PathBuf>) -> GoogleConfig {
        GoogleConfig {
            project: "llmprobe-test".into(),
            location: "us-central1".into(),
            service_account_file: sa,
            token_file: token,
        }
    }

    async fn issued(base_url: &str) -> u64 {
        let v: serde_json::Value = mock_support::client()
            .get(format!("{base_url}/mock/tokens"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        v["issued"].as_u64().unwrap()
    }

    /// Starts a mock trusting the test account with tokens of `ttl`, then writes the
    /// account's key file naming the mock's token endpoint: (mock, key file).
    async fn trusting(
        dir: &std::path::Path,
        ttl: Duration,
    ) -> (llmprobe::mock::MockServer, std::path::PathBuf) {
        // The account (public half, email) does not depend on the key file's token_uri.
        let (_, google) = account(dir, "http://unused", ttl);
        let mock = mock_support::start(MockConfig {
            google: Some(google),
            ..mock_config(20)
        })
        .await;
        let (path, _) = account(dir, &mock.base_url(), ttl);
        (mock, path)
    }

    #[tokio::test(start_paused = true)]
    async fn a_service_accounts_token_is_granted_cached_and_the_timing_is_the_mocks() {
        let dir = tempfile::tempdir().unwrap();
        let (mock, sa) = trusting(dir.path(), Duration::from_secs(3600)).await;
        let base = mock.base_url();
        for stream in [true, false] {
            let r = probe(vertex_cfg(
                base.clone(),
                located(Some(sa.clone()), None),
                stream,
            ))
            .await;
            assert_eq!(r.outcome, Outcome::Ok, "{:?}", r.error);
            assert_eq!(r.e2e(), Some(ms(195)), "stream {stream}");
            if stream {
                assert_reasoning_truth(&r, "vertex streamed");
            }
        }
        // One client per probe here, so one exchange each: a new source asks anew.
        assert_eq!(issued(&base).await, 2);
        // One client, two probes: the hour-long token is reused.
        let client = Client::new(
            vertex_cfg(base.clone(), located(Some(sa), None), true),
            None,
        )
        .unwrap();
        let spec = RequestSpec {
            prompt: "nonce-2 hi".into(),
            prompt_tokens: 2,
            max_tokens: 4,
            history: Vec::new(),
            system: None,
            model: None,
        };
        for id in 0..2 {
            let r = client.send(&spec, id, Duration::ZERO, Instant::now()).await;
            assert_eq!(r.outcome, Outcome::Ok, "{:?}", r.error);
        }
        assert_eq!(issued(&base).await, 3);
        mock.shutdown().await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_token_shorter_than_the_refresh_margin_is_refreshed_before_each_request() {
        let dir = tempfile::tempdir().unwrap();
        let (mock, sa) = trusting(dir.path(), Duration::from_secs(30)).await;
        let base = mock.base_url();
        let mut c = vertex_cfg(base.clone(), located(Some(sa), None), true);
        c.reuse_connections = true;
        let client = Client::new(c, None).unwrap();
        let spec = RequestSpec {
            prompt: "nonce-3 hi".into(),
            prompt_tokens: 2,
            max_tokens: 4,
            history: Vec::new(),
            system: None,
            model: None,
        };
        for id in 0..3 {
            let r = client.send(&spec, id, Duration::ZERO, Instant::now()).await;
            assert_eq!(r.outcome, Outcome::Ok, "{:?}", r.error);
        }
        assert_eq!(issued(&base).await, 3);
        mock.shutdown().await;
    }

    #[tokio::test(start_paused = true)]
    async fn an_assertion_signed_by_another_key_gets_no_token_and_the_probe_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let (mock, sa) = trusting(dir.path(), Duration::from_secs(3600)).await;
        // The same account with another key: the mock verifies with the trusted half.
        let mut key: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&sa).unwrap()).unwrap();
        let other = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/google/other-key.pem"
        );
        key["private_key"] = std::fs::read_to_string(other).unwrap().into();
        let forged = dir.path().join("forged.json");
        std::fs::write(&forged, key.to_string()).unwrap();
        let r = probe(vertex_cfg(
            mock.base_url(),
            located(Some(forged), None),
            true,
        ))
        .await;
        assert_eq!(r.outcome, Outcome::Http4xx);
        let err = r.error.unwrap();
        assert!(
            err.contains("access token") && err.contains("signature"),
            "{err}"
        );
        assert!(!err.contains("PRIVATE KEY"), "{err}");
        // A token nobody issued is refused by the Vertex route.
        let file = dir.path().join("token");
        std::fs::write(&file, "ya29.never-issued-9\n").unwrap();
        let r = probe(vertex_cfg(mock.base_url(), located(None, Some(file)), true)).await;
        assert_eq!(r.http_status, Some(401));
        assert!(!r.error.unwrap().contains("never-issued-9"));
        mock.shutdown().await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_token_file_is_sent_as_the_bearer() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "vertex-static-token-8\n").unwrap();
        let mock = mock_support::start(MockConfig {
            api_key: Some("vertex-static-token-8".into()),
            ..mock_config(20)
        })
        .await;
        let r = probe(vertex_cfg(mock.base_url(), located(None, Some(file)), true)).await;
        assert_reasoning_truth(&r, "vertex token file");
        mock.shutdown().await;
    }
}
