//! The endpoint-picker scraper of a target: reads the llm-d / Gateway API Inference
//! Extension picker's `/metrics` (`router_metrics_url`, parsed by
//! `crate::engine_metrics::router`) every `engine_scrape_interval` and publishes its
//! pool's view as `llmprobe_router_*`. A failed scrape sets
//! `llmprobe_router_scrape_success 0`, removes the other gauges and is logged by state
//! change (the failure log); it never stops the target.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::failure_lines::{self, Activity, Attempt};
use super::failure_log::{FailureKey, FailureLog};
use super::scrape_ticks::{Ticks, scrape_client};
use crate::config::TargetPlan;
use crate::engine_metrics::ScrapeError;
use crate::engine_metrics::router::{self, RouterSnapshot};
use crate::exposition::{Metrics, RouterGauges};
use crate::secret::{Secret, scrub};

/// How the failure log names these scrapes.
const ACTIVITY: Activity = Activity::Kind {
    noun: "router scrape",
    nouns: "router scrapes",
    failed: "router scrape failed",
};

/// What a target's picker scrape loop works with.
pub struct RouterScraper {
    pub plan: TargetPlan,
    pub url: String,
    pub metrics: Arc<Metrics>,
    /// The scrape interval (the engines'); a reload changes it in place.
    pub interval: watch::Receiver<Duration>,
    pub summary_interval: watch::Receiver<Duration>,
    pub stop: CancellationToken,
    /// Held while publishing (see `RunningTarget::publish`).
    pub publish: Arc<Mutex<()>>,
}

/// The gauges of one scrape `cur`, given the previous one.
pub fn gauges(prev: Option<&RouterSnapshot>, cur: &RouterSnapshot) -> RouterGauges {
    let i = router::interval(prev, cur);
    RouterGauges {
        ready_endpoints: cur.ready_endpoints,
        kv_cache_usage_ratio: cur.kv_cache_usage_ratio,
        queue_size: cur.queue_size,
        flow_control_saturation: cur.flow_control_saturation,
        flow_control_queue_size: cur.flow_control_queue_size,
        prefix_hit_ratio: i.prefix_hit_ratio,
        ttft_slo_violations: i.ttft_slo_violations,
        tpot_slo_violations: i.tpot_slo_violations,
    }
}

/// Builds the picker scrape loop of a target (its HTTP client uses the target's TLS
/// settings).
pub fn scrape_loop(
    scraper: RouterScraper,
) -> anyhow::Result<impl std::future::Future<Output = ()> + Send + 'static> {
    let RouterScraper {
        plan,
        url,
        metrics,
        interval,
        mut summary_interval,
        stop,
        publish,
    } = scraper;
    let http = scrape_client(&plan.client.tls)?;
    Ok(async move {
        let mut ticks = Ticks::new(interval);
        let key = FailureKey::target(&plan.name);
        let mut failures = FailureLog::new(*summary_interval.borrow_and_update());
        let mut prev: Option<RouterSnapshot> = None;
        loop {
            tokio::select! {
                biased;
                () = stop.cancelled() => break,
                () = ticks.tick() => {}
            }
            // A scrape must end before the next one is due.
            let timeout = ticks.every().min(Duration::from_secs(10));
            let result = tokio::select! {
                biased;
                () = stop.cancelled() => break,
                r = router::scrape(&http, &url, timeout) => r,
            };
            let ended = Instant::now();
            // Checked under the lock the control task takes to remove this target's
            // series after cancelling it: a stopped scraper publishes nothing more.
            let _publishing = publish.lock().unwrap_or_else(|e| e.into_inner());
            if stop.is_cancelled() {
                break;
            }
            failures.set_interval(*summary_interval.borrow_and_update());
            publish_one(
                &plan,
                &metrics,
                &key,
                &mut failures,
                &mut prev,
                result,
                ended,
            );
        }
    })
}

/// Publishes one scrape and logs its failure or recovery.
fn publish_one(
    plan: &TargetPlan,
    metrics: &Metrics,
    key: &FailureKey,
    failures: &mut FailureLog,
    prev: &mut Option<RouterSnapshot>,
    result: Result<RouterSnapshot, ScrapeError>,
    ended: Instant,
) {
    let _batch = metrics.batch();
    match result {
        Ok(snap) => {
            let g = gauges(prev.as_ref(), &snap);
            metrics.set_router(&plan.name, &plan.model, true, &g);
            *prev = Some(snap);
            if let Some(line) = failures.success(key, ended) {
                let attempt = Attempt {
                    id: None,
                    reason: "",
                    error: "",
                };
                failure_lines::write(ACTIVITY, key, attempt, &line);
            }
        }
        Err(e) => {
            metrics.set_router(&plan.name, &plan.model, false, &RouterGauges::default());
            let error = scrub(&format!("{e:#}"), plan.secrets.iter().map(Secret::expose));
            let reason = e.reason.as_str();
            let lines = failures.failure(key, ended, reason, &error);
            let attempt = Attempt {
                id: None,
                reason,
                error: &error,
            };
            failure_lines::failure(ACTIVITY, key, attempt, &lines);
        }
    }
}
