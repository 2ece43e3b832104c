//! The refresher: looks again at each interval and hands on a new set only when it
//! changed. A failed look keeps the last good set, is counted, and says why; the
//! refresher never gives up.

use std::time::{Duration, SystemTime};

use tokio::sync::mpsc;
use tokio::time::MissedTickBehavior;

use super::DiscoveryError;
use super::replica::{ReplicaSet, SetRules};
use super::source::Discoverer;

/// What one refresh found.
#[derive(Debug)]
pub enum Refresh {
    /// A set different from the last good one (or the first one).
    Changed(ReplicaSet),
    /// The same set as the last good one.
    Unchanged,
    /// The look failed; the last good set stays in force.
    Failed(DiscoveryError),
}

/// A source, the rules a set is built by, and what the last refreshes gave.
#[derive(Debug)]
pub struct Refresher {
    source: Box<dyn Discoverer>,
    rules: SetRules,
    timeout: Duration,
    current: Option<ReplicaSet>,
    errors: u64,
    last_success: Option<SystemTime>,
}

impl Refresher {
    /// `timeout` bounds one look (see [`Discoverer::find`]).
    pub fn new(source: Box<dyn Discoverer>, rules: SetRules, timeout: Duration) -> Self {
        Refresher {
            source,
            rules,
            timeout,
            current: None,
            errors: 0,
            last_success: None,
        }
    }

    /// Looks once.
    pub async fn refresh(&mut self) -> Refresh {
        match self.source.find(self.timeout).await {
            Ok(found) => {
                self.last_success = Some(SystemTime::now());
                let set = self.rules.build(found);
                if self.current.as_ref() == Some(&set) {
                    Refresh::Unchanged
                } else {
                    self.current = Some(set.clone());
                    Refresh::Changed(set)
                }
            }
            Err(e) => {
                self.errors += 1;
                Refresh::Failed(e)
            }
        }
    }

    /// The last good set; `None` until a look has succeeded.
    pub fn current(&self) -> Option<&ReplicaSet> {
        self.current.as_ref()
    }

    /// How many looks have failed (`llmprobe_discovery_errors_total`).
    pub fn errors(&self) -> u64 {
        self.errors
    }

    /// When a look last succeeded (`llmprobe_discovery_last_success_timestamp_seconds`).
    pub fn last_success(&self) -> Option<SystemTime> {
        self.last_success
    }

    pub fn source(&self) -> &dyn Discoverer {
        self.source.as_ref()
    }

    /// Looks now and then every `interval`, sending every outcome (an unchanged set
    /// too: it tells that the look worked), until the receiver is dropped. A late tick
    /// is delayed, not bunched.
    pub async fn run(mut self, interval: Duration, events: mpsc::Sender<Refresh>) {
        let mut tick = tokio::time::interval(interval);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = events.closed() => return,
            }
            let outcome = self.refresh().await;
            if events.send(outcome).await.is_err() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::file_sd::FileSd;
    use super::super::replica::LabelAllowList;
    use super::*;

    fn refresher(dir: &std::path::Path) -> Refresher {
        let sd = FileSd::new(&format!("{}/*.json", dir.display())).unwrap();
        let rules = SetRules::new("http", LabelAllowList::default(), 64).unwrap();
        Refresher::new(Box::new(sd), rules, Duration::from_secs(5))
    }

    fn write(dir: &std::path::Path, text: &str) {
        std::fs::write(dir.join("r.json"), text).unwrap();
    }

    fn hosts(set: &ReplicaSet) -> Vec<&str> {
        set.replicas.iter().map(|r| r.host_port.as_str()).collect()
    }

    #[tokio::test]
    async fn a_set_is_handed_on_only_when_it_changed() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), r#"[{"targets": ["b:1", "a:1"]}]"#);
        let mut r = refresher(dir.path());
        let Refresh::Changed(first) = r.refresh().await else {
            panic!("first look")
        };
        assert_eq!(hosts(&first), ["a:1", "b:1"]);
        // The same members in another order are the same set.
        write(dir.path(), r#"[{"targets": ["a:1", "b:1"]}]"#);
        assert!(matches!(r.refresh().await, Refresh::Unchanged));
        write(dir.path(), r#"[{"targets": ["a:1", "c:1"]}]"#);
        let Refresh::Changed(next) = r.refresh().await else {
            panic!("a change")
        };
        assert_eq!(hosts(&next), ["a:1", "c:1"]);
    }

    #[tokio::test]
    async fn a_failure_keeps_the_last_good_set_and_is_counted() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), r#"[{"targets": ["a:1"]}]"#);
        let mut r = refresher(dir.path());
        assert!(matches!(r.refresh().await, Refresh::Changed(_)));
        let good_at = r.last_success().unwrap();
        write(dir.path(), "not json");
        let Refresh::Failed(e) = r.refresh().await else {
            panic!("a failure")
        };
        assert_eq!(e.reason(), "format");
        assert!(e.to_string().contains("r.json"), "{e}");
        assert_eq!(r.errors(), 1);
        assert_eq!(hosts(r.current().unwrap()), ["a:1"]);
        assert_eq!(r.last_success(), Some(good_at));
        // And it recovers: the same set as before the failure is no change.
        write(dir.path(), r#"[{"targets": ["a:1"]}]"#);
        assert!(matches!(r.refresh().await, Refresh::Unchanged));
        assert_eq!(r.errors(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn run_keeps_going_after_failures_and_stops_when_nobody_listens() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "[");
        let (tx, mut rx) = mpsc::channel(4);
        let task = tokio::spawn(refresher(dir.path()).run(Duration::from_secs(30), tx));
        for _ in 0..3 {
            assert!(matches!(rx.recv().await, Some(Refresh::Failed(_))));
        }
        write(dir.path(), r#"[{"targets": ["a:1"]}]"#);
        let set = loop {
            match rx.recv().await {
                Some(Refresh::Changed(set)) => break set,
                Some(_) => continue,
                None => panic!("the refresher stopped"),
            }
        };
        assert_eq!(hosts(&set), ["a:1"]);
        drop(rx);
        task.await.unwrap();
    }
}
