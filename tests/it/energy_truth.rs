//! Energy per token against the mock's power model, under a paused tokio clock over
//! real loopback TCP: `batch` long answers run together, the GPU page and the engine's
//! `/metrics` are read twice 2 s apart, and the daemon's own energy round
//! (`daemon::energy`) turns them into figures. Truth: the mock draws
//! P(B) = idle + per-request × B watts while it writes B tokens every ITL, so a token
//! costs P(B) × ITL / B joules (src/mock/gpu.rs).

use crate::support::mock as mock_support;

use std::time::Duration;

use llmprobe::daemon::energy::{EnergyTracker, Engine};
use llmprobe::energy::{Figure, Prices, figures};
use llmprobe::engine_metrics::gpu::{self, GpuMatch, GpuReading};
use llmprobe::engine_metrics::{self, EngineSnapshot};
use llmprobe::mock::MockConfig;
use llmprobe::mock::gpu::PowerModel;
use mock_support::*;
use tokio::time::Instant;

async fn read(base: &str) -> (GpuReading, EngineSnapshot) {
    let get = |path: &str| {
        let url = format!("{base}{path}");
        async move { crate::support::daemon::get(&url).await.1 }
    };
    let gpus = gpu::parse(&get("/gpu/metrics").await).unwrap();
    let engine = engine_metrics::parse(&get("/metrics").await).unwrap();
    (gpus, engine)
}

#[tokio::test(start_paused = true)]
async fn energy_per_token_matches_the_power_model_at_three_batch_sizes() {
    let plan = llmprobe::config::plan::load_str(
        "targets:\n  - name: t\n    base_url: http://127.0.0.1:1\n    model: m\n    \
         engine_metrics_url: http://127.0.0.1:1/metrics\n    \
         gpu_metrics: {url: http://127.0.0.1:1/gpu/metrics}\n",
        "t.yaml",
    )
    .unwrap()
    .targets
    .remove(0);
    let model = PowerModel::default();
    let itl = Duration::from_millis(10);
    for batch in [1_u64, 4, 16] {
        let mock = start(MockConfig {
            gpu: Some(model),
            itl,
            ..MockConfig::default()
        })
        .await;
        let base = mock.base_url();
        let answers: Vec<_> = (0..batch)
            .map(|_| {
                let base = base.clone();
                tokio::spawn(async move {
                    post_stream(
                        &base,
                        "/v1/chat/completions",
                        chat_body(2000, true, false),
                        &[],
                    )
                    .await
                })
            })
            .collect();
        // Past the TTFT: every answer is decoding.
        tokio::time::sleep(Duration::from_millis(200)).await;
        let mut tracker = EnergyTracker::default();
        let engine = |snapshot| Engine {
            key: "",
            gpus: GpuMatch::default(),
            snapshot,
            generation_tokens_per_second: None,
        };
        let t0 = Instant::now();
        let (g0, e0) = read(&base).await;
        assert_eq!(e0.running, Some(batch as f64));
        tracker.round(&plan, g0, t0, &[engine(&e0)]);
        tokio::time::sleep(Duration::from_secs(2)).await;
        let t1 = Instant::now();
        let (g1, e1) = read(&base).await;
        let w = tracker.round(&plan, g1, t1, &[engine(&e1)])[0];
        let f = figures(&w, &Prices::default());
        let truth = model.watts(batch) * itl.as_secs_f64() / batch as f64;
        let per_token = f.get(Figure::JoulesPerToken).unwrap();
        let per_joule = f.get(Figure::TokensPerJoule).unwrap();
        eprintln!("batch {batch}: {per_token:.6} J/token measured, {truth:.6} by the power model");
        assert!(
            (per_token - truth).abs() / truth < 0.01,
            "batch {batch}: {per_token} J/token, truth {truth}"
        );
        assert!(
            (per_joule * truth - 1.0).abs() < 0.01,
            "batch {batch}: {per_joule} tokens/J, truth {}",
            1.0 / truth
        );
        assert_eq!(f.get(Figure::PowerWatts), Some(model.watts(batch)));
        assert_eq!(f.get(Figure::Gpus), Some(1.0));
        for a in answers {
            a.abort();
        }
        mock.shutdown().await;
    }
}
