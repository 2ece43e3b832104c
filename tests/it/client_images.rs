//! Image input end to end: chat, Responses and Messages requests carrying generated
//! PNGs against the in-process mock under a paused tokio clock. The mock charges each
//! image by its 512 × 512 tiles, so the TTFT's known truth includes the image's
//! preprocessing, and the prompt tokens (from usage) include its image tokens.

use crate::support::mock as mock_support;

use std::time::Duration;

use llmprobe::client::{Client, ClientConfig, Endpoint};
use llmprobe::mock::MockConfig;
use llmprobe::record::Outcome;
use llmprobe::workload::RequestSpec;
use llmprobe::workload::image::Images;
use tokio::time::Instant;

#[tokio::test(start_paused = true)]
async fn images_add_their_tiles_to_the_ttft_and_their_tokens_to_the_prompt() {
    let mock = mock_support::start(MockConfig {
        ttft: Duration::from_millis(50),
        itl: Duration::from_millis(5),
        prefill_per_image_tile: Duration::from_millis(3),
        ..MockConfig::default()
    })
    .await;
    let spec = RequestSpec {
        prompt: "nonce-1 what is in this picture".into(),
        prompt_tokens: 6,
        max_tokens: 4,
        history: Vec::new(),
        system: None,
        model: None,
    };
    // Two 1024 × 600 images: 2 × 2 tiles each.
    let images = Images::generated(2, 1024, 600).unwrap();
    for endpoint in [Endpoint::Chat, Endpoint::Responses, Endpoint::Messages] {
        for (images, ttft, prompt) in [
            (Images::None, 50, 6),
            (images.clone(), 50 + 8 * 3, 6 + 8 * 256),
        ] {
            let cfg = ClientConfig {
                base_url: mock.base_url(),
                endpoint,
                model: "vlm".into(),
                reuse_connections: false,
                images,
                ..ClientConfig::default()
            };
            let client = Client::new(cfg, None).unwrap();
            let r = client.send(&spec, 1, Duration::ZERO, Instant::now()).await;
            assert_eq!(r.outcome, Outcome::Ok, "{endpoint:?}: {:?}", r.error);
            assert_eq!(r.ttft(), Some(Duration::from_millis(ttft)), "{endpoint:?}");
            assert_eq!(r.usage_prompt_tokens, Some(prompt), "{endpoint:?}");
            assert_eq!(r.output_tokens(), 4, "{endpoint:?}");
        }
    }
    mock.shutdown().await;
}
