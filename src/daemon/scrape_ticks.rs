//! What the daemon's scrape loops share (the engine's, the endpoint picker's, a fleet's
//! rounds): ticks at an interval a reload changes in place, and the HTTP client that
//! scrapes with the target's TLS settings.

use std::time::Duration;

use tokio::sync::watch;
use tokio::time::{Interval, MissedTickBehavior};

use crate::client::TlsConfig;

/// Ticks every `interval`, following its changes: a reload that changes the interval
/// restarts the ticks at the new one; a gone sender leaves it as it was.
pub struct Ticks {
    interval: watch::Receiver<Duration>,
    every: Duration,
    ticks: Interval,
    watching: bool,
}

fn ticker(every: Duration) -> Interval {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    tick
}

impl Ticks {
    /// Ticks at `interval`, the first at once.
    pub fn new(mut interval: watch::Receiver<Duration>) -> Ticks {
        let every = *interval.borrow_and_update();
        Ticks {
            interval,
            every,
            ticks: ticker(every),
            watching: true,
        }
    }

    /// The interval in force.
    pub fn every(&self) -> Duration {
        self.every
    }

    /// Waits for the next tick. Cancel-safe: an interval change it saw stays applied.
    pub async fn tick(&mut self) {
        loop {
            tokio::select! {
                biased;
                changed = self.interval.changed(), if self.watching => {
                    if changed.is_ok() {
                        self.every = *self.interval.borrow_and_update();
                        self.ticks = ticker(self.every);
                    } else {
                        self.watching = false;
                    }
                }
                _ = self.ticks.tick() => return,
            }
        }
    }

    /// The next tick at once.
    pub fn reset_immediately(&mut self) {
        self.ticks.reset_immediately();
    }
}

/// The HTTP client of a target's scrapes, with its TLS settings.
pub fn scrape_client(tls: &TlsConfig) -> anyhow::Result<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .tls_backend_preconfigured(crate::client::tls::client_config(tls)?)
        .no_proxy()
        .user_agent(concat!("llmprobe/", env!("CARGO_PKG_VERSION")))
        .build()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn ticks_follow_a_changed_interval() {
        let (tx, rx) = watch::channel(Duration::from_secs(10));
        let mut ticks = Ticks::new(rx);
        let t0 = tokio::time::Instant::now();
        ticks.tick().await;
        assert_eq!(t0.elapsed(), Duration::ZERO);
        ticks.tick().await;
        assert_eq!(t0.elapsed(), Duration::from_secs(10));
        tx.send(Duration::from_secs(3)).unwrap();
        // The new interval starts at once, then ticks every 3 s.
        ticks.tick().await;
        ticks.tick().await;
        assert_eq!(t0.elapsed(), Duration::from_secs(13));
        assert_eq!(ticks.every(), Duration::from_secs(3));
        drop(tx);
        ticks.tick().await;
        assert_eq!(t0.elapsed(), Duration::from_secs(16));
    }
}
