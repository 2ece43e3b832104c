//! Rerank and score end to end: the client against the in-process mock over loopback
//! TCP under a paused tokio clock, so the E2E latency is the mock's exact truth (TTFT
//! plus the prefill of every query-document pair), the prompt tokens its usage, and the
//! top-document check judges the document the mock's word overlap puts first.

use crate::support::mock as mock_support;

use std::sync::Arc;
use std::time::Duration;

use llmprobe::check::CheckSpec;
use llmprobe::client::{Client, ClientConfig, Documents, Endpoint};
use llmprobe::mock::MockConfig;
use llmprobe::record::{CheckKind, Outcome, RequestRecord};
use llmprobe::workload::RequestSpec;
use tokio::time::Instant;

const QUERY: &str = "nonce-1 what is two plus two";
/// Content words found (`nonce-1` and `plus`; the others are common words): none,
/// one, none: document 1 first.
const DOCUMENTS: [&str; 3] = [
    "the moon is made of rock",
    "two plus two is four",
    "cats sleep",
];
/// Each document read with the query: (6 + 6) + (6 + 5) + (6 + 2) words.
const PAIR_TOKENS: u32 = 31;

fn mock() -> MockConfig {
    MockConfig {
        ttft: Duration::from_millis(50),
        prefill_per_token: Duration::from_millis(1),
        ..MockConfig::default()
    }
}

async fn rank(
    base_url: String,
    endpoint: Endpoint,
    top_n: Option<u32>,
    expect_top: Option<u32>,
) -> RequestRecord {
    let cfg = ClientConfig {
        base_url,
        endpoint,
        model: "reranker".into(),
        reuse_connections: false,
        documents: Documents {
            texts: Arc::new(DOCUMENTS.map(String::from).to_vec()),
            top_n,
        },
        ..ClientConfig::default()
    };
    let checks = CheckSpec {
        expect_top_document: expect_top,
        ..CheckSpec::default()
    }
    .compile()
    .unwrap();
    let client = Client::new(cfg, None)
        .unwrap()
        .with_checks(Arc::new(checks));
    let spec = RequestSpec {
        prompt: QUERY.into(),
        prompt_tokens: 6,
        max_tokens: 1,
        history: Vec::new(),
        system: None,
        model: None,
    };
    client.send(&spec, 1, Duration::ZERO, Instant::now()).await
}

#[tokio::test(start_paused = true)]
async fn rerank_and_score_are_timed_end_to_end_and_judged_on_the_top_document() {
    let mock = mock_support::start(mock()).await;
    for (endpoint, top_n) in [
        (Endpoint::Rerank, None),
        (Endpoint::Rerank, Some(1)),
        (Endpoint::Score, None),
    ] {
        let at = format!("{endpoint:?} top_n {top_n:?}");
        let r = rank(mock.base_url(), endpoint, top_n, Some(1)).await;
        assert_eq!(r.outcome, Outcome::Ok, "{at}: {:?}", r.error);
        assert!(!r.streamed, "{at}");
        assert_eq!((r.ttft(), r.tpot()), (None, None), "{at}");
        assert_eq!(
            r.e2e(),
            Some(Duration::from_millis(50 + u64::from(PAIR_TOKENS))),
            "{at}"
        );
        assert_eq!(
            (r.usage_prompt_tokens, r.output_tokens()),
            (Some(PAIR_TOKENS), 0),
            "{at}"
        );
        assert_eq!(r.checks.len(), 1, "{at}");
        assert_eq!(r.checks[0].check, CheckKind::ExpectTopDocument);
        assert!(r.checks[0].passed, "{at}: {:?}", r.checks[0]);

        let r = rank(mock.base_url(), endpoint, top_n, Some(0)).await;
        assert_eq!(r.outcome, Outcome::Ok, "{at}");
        assert!(!r.checks[0].passed, "{at}");
        assert_eq!(
            r.checks[0].reason.as_deref(),
            Some("document 1 ranked first, not document 0"),
            "{at}"
        );
    }
    mock.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_answer_that_ranks_nothing_is_empty_output() {
    let mock = mock_support::start(MockConfig {
        faults: vec!["empty_completion".parse().unwrap()],
        ..mock()
    })
    .await;
    for endpoint in [Endpoint::Rerank, Endpoint::Score] {
        let r = rank(mock.base_url(), endpoint, None, Some(1)).await;
        assert_eq!(r.outcome, Outcome::EmptyOutput, "{endpoint:?}");
        assert_eq!(r.error.as_deref(), Some("the answer ranked no document"));
        // A failed probe is not judged.
        assert!(r.checks.is_empty(), "{endpoint:?}");
    }
    mock.shutdown().await;
}
