//! A daemon probing a vision-language model with images: the mock's usage counts each
//! probe's image tokens (4 tiles of 256 for a 1024 × 1024 PNG, beside the prompt's
//! words), so `llmprobe_prompt_tokens_total` moves by the image tokens; images on an
//! API that cannot carry them, and both image keys at once, are config errors at their
//! line.

use crate::support::daemon as daemon_support;

use std::time::Duration;

use daemon_support::*;
use llmprobe::mock::MockConfig;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_carry_their_images_and_the_usage_counts_them() {
    let mock = MockConfig {
        ttft: Duration::from_millis(2),
        itl: Duration::from_millis(1),
        ..MockConfig::default()
    };
    let (mock, d) = with_mock(mock, |base| {
        format!(
            "targets:\n  - name: vlm\n    base_url: {base}\n    model: m\n    endpoint: messages\n    rate: 20/s\n    scenarios:\n      - {{name: look, prompt: describe, nonce: false, output_tokens: 2, images: {{count: 1, width: 1024, height: 1024}}}}\n"
        )
    })
    .await;
    let addr = d.addr();
    let s = wait_for(Duration::from_secs(20), || async {
        let s = scrape(addr).await;
        let n = value(&s, "llmprobe_requests_total", &[("target", "vlm")]).unwrap_or(0.0);
        (n >= 3.0).then_some(s)
    })
    .await;
    d.shutdown().await.unwrap();
    mock.shutdown().await;
    let probes = value(&s, "llmprobe_requests_total", &[("target", "vlm")]).unwrap();
    assert_eq!(
        sum(&s, "llmprobe_request_failures_total", &[("target", "vlm")]),
        0.0
    );
    // One word of prompt and 4 × 256 image tokens per probe.
    let prompt = sum(&s, "llmprobe_prompt_tokens_total", &[("target", "vlm")]);
    assert_eq!(
        prompt,
        probes * (1.0 + 4.0 * 256.0),
        "{prompt} over {probes} probes"
    );
}

#[test]
fn images_go_only_where_they_can_be_carried() {
    let config = |endpoint: &str, scenario: &str| {
        format!(
            "targets:\n  - name: t\n    base_url: http://127.0.0.1:1\n    model: m\n    endpoint: {endpoint}\n    scenarios:\n      - {scenario}\n"
        )
    };
    let err = |text: String| {
        llmprobe::config::plan::load_str(&text, "c.yaml")
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        err(config("completions", "{name: s, images: {count: 2}}")),
        "c.yaml:7:27: targets[0].scenarios[0].images: endpoint completions cannot carry images (chat, responses and messages can)"
    );
    assert_eq!(
        err(config("chat", "{name: s, images: {width: 5000}}")),
        "c.yaml:7:27: targets[0].scenarios[0].images: width must be 1 to 4096 pixels, got 5000"
    );
    assert_eq!(
        err(config(
            "chat",
            "{name: s, images: {count: 1}, image_file: x.png}"
        )),
        "c.yaml:7:51: targets[0].scenarios[0].image_file: set images or image_file, not both"
    );
    assert!(
        err(config("chat", "{name: s, image_file: /nonexistent.png}")).starts_with(
            "c.yaml:7:31: targets[0].scenarios[0].image_file: cannot read /nonexistent.png:"
        )
    );
}
