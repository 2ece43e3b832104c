//! Failure logging by state change, as pure logic: which failures and recoveries of a
//! repeating activity (a scenario's probes or one of its answer checks, an engine's
//! scrapes) reach the log. The first failure says so at once, repeats of the same
//! reason are folded into one summary per interval, a new reason is a new state, and
//! the first success after failures the log has told of is a recovery. The caller
//! writes the [`Line`]s (see `failure_lines`); every count on `/metrics` stays exact,
//! only the log is summarised.

use std::collections::HashMap;
use std::time::Duration;

use tokio::time::Instant;

/// Whose failures these are: a stream of attempts that succeed or fail together.
/// `scenario` is absent for an engine scrape, `replica` until replicas are
/// discovered, `check` but for an answer check's stream; an absent part is not logged.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FailureKey {
    pub target: String,
    pub scenario: Option<String>,
    pub replica: Option<String>,
    pub check: Option<&'static str>,
}

impl FailureKey {
    /// A whole target's stream (its engine scrapes).
    pub fn target(target: &str) -> FailureKey {
        FailureKey {
            target: target.to_string(),
            scenario: None,
            replica: None,
            check: None,
        }
    }

    /// One scenario's probes of a target.
    pub fn scenario(target: &str, scenario: &str) -> FailureKey {
        FailureKey {
            scenario: Some(scenario.to_string()),
            ..FailureKey::target(target)
        }
    }

    /// The same stream on one discovered replica.
    pub fn with_replica(&self, replica: &str) -> FailureKey {
        FailureKey {
            replica: Some(replica.to_string()),
            ..self.clone()
        }
    }

    /// One answer check of the probes of this stream.
    pub fn with_check(&self, check: &'static str) -> FailureKey {
        FailureKey {
            check: Some(check),
            ..self.clone()
        }
    }
}

/// What the log says about a stream.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// This failure, with its error: the stream's first since a success, or the first of
    /// a new reason while it was failing with `previous`.
    Failed {
        reason: &'static str,
        previous: Option<&'static str>,
    },
    /// Failures of one reason not in any line yet, over the time since the stream's last
    /// line, with the successes since that line (a flapping stream has some).
    Repeated {
        reason: &'static str,
        failures: u64,
        succeeded: u64,
        over: Duration,
        last_error: String,
    },
    /// This success ends `failures` failures (every failure since the last success)
    /// that began `over` ago.
    Recovered { failures: u64, over: Duration },
}

/// The failure log of any number of streams.
#[derive(Debug)]
pub struct FailureLog {
    every: Duration,
    streams: HashMap<FailureKey, Stream>,
}

/// One stream's state.
#[derive(Debug)]
struct Stream {
    /// The failures since the last success; `None` while the stream succeeds.
    episode: Option<Episode>,
    /// When the stream's last line was logged: summaries come one interval apart.
    last_line: Instant,
    /// Failures (of one reason) in no line yet, and the successes since the last line.
    unlogged: Unlogged,
    /// The reason the last recovery ended, and when: the same failure again within one
    /// interval is a flap, summarised rather than logged as a new failure.
    recovered: Option<(Instant, &'static str)>,
}

#[derive(Debug)]
struct Episode {
    reason: &'static str,
    since: Instant,
    failures: u64,
    /// Whether a line has told of it; a recovery is logged only for an episode the
    /// log has spoken of.
    told: bool,
}

#[derive(Debug, Default)]
struct Unlogged {
    reason: Option<&'static str>,
    failures: u64,
    succeeded: u64,
    last_error: String,
}

impl FailureLog {
    /// A log that summarises repeats every `every`.
    pub fn new(every: Duration) -> FailureLog {
        FailureLog {
            every,
            streams: HashMap::new(),
        }
    }

    /// Changes the summary interval (a reload), for the next summaries of every stream.
    pub fn set_interval(&mut self, every: Duration) {
        self.every = every;
    }

    /// A failure of `key` at `at`. Returns the lines to log, oldest first: at most a
    /// summary of another reason's unlogged failures and then this failure, or a
    /// summary including this failure, or nothing (the failure waits for a summary).
    pub fn failure(
        &mut self,
        key: &FailureKey,
        at: Instant,
        reason: &'static str,
        error: &str,
    ) -> Vec<Line> {
        let every = self.every;
        let stream = self.streams.entry(key.clone()).or_insert_with(|| Stream {
            episode: None,
            last_line: at,
            unlogged: Unlogged::default(),
            recovered: None,
        });
        let flap = stream.episode.is_none()
            && stream
                .recovered
                .is_some_and(|(when, r)| r == reason && at.saturating_duration_since(when) < every);
        let news = match &stream.episode {
            None => !flap,
            Some(e) => e.reason != reason,
        };
        let mut lines = Vec::new();
        if news {
            // Another reason's failures not logged yet go first, so each failure is
            // in some line.
            lines.extend(stream.summary(at));
            let previous = stream.episode.as_ref().map(|e| e.reason);
            let episode = stream.episode.get_or_insert(Episode {
                reason,
                since: at,
                failures: 0,
                told: true,
            });
            episode.reason = reason;
            episode.failures += 1;
            episode.told = true;
            stream.logged(at);
            lines.push(Line::Failed { reason, previous });
            return lines;
        }
        let episode = stream.episode.get_or_insert(Episode {
            reason,
            since: at,
            failures: 0,
            told: false,
        });
        episode.failures += 1;
        let unlogged = &mut stream.unlogged;
        unlogged.reason = Some(reason);
        unlogged.failures += 1;
        unlogged.last_error.clear();
        unlogged.last_error.push_str(error);
        if at.saturating_duration_since(stream.last_line) >= every {
            lines.extend(stream.summary(at));
            if let Some(e) = &mut stream.episode {
                e.told = true;
            }
        }
        lines
    }

    /// A success of `key` at `at`. Returns the recovery line when it ends failures the
    /// log has told of, a summary when unlogged failures (a flapping stream's) have
    /// waited one interval, or nothing.
    pub fn success(&mut self, key: &FailureKey, at: Instant) -> Option<Line> {
        let every = self.every;
        // A stream that never failed has no state.
        let stream = self.streams.get_mut(key)?;
        let mut line = None;
        match stream.episode.take() {
            Some(e) if e.told => {
                stream.recovered = Some((at, e.reason));
                stream.logged(at);
                line = Some(Line::Recovered {
                    failures: e.failures,
                    over: at.saturating_duration_since(e.since),
                });
            }
            Some(e) => {
                stream.recovered = Some((at, e.reason));
                stream.unlogged.succeeded += 1;
            }
            None => stream.unlogged.succeeded += 1,
        }
        if line.is_none() && at.saturating_duration_since(stream.last_line) >= every {
            line = stream.summary(at);
        }
        // Nothing left to say or to recognise as a flap: forget the stream.
        let quiet = stream.unlogged.failures == 0
            && stream
                .recovered
                .is_none_or(|(when, _)| at.saturating_duration_since(when) >= every);
        if quiet {
            self.streams.remove(key);
        }
        line
    }

    /// How many streams have state (failing, or recently failed).
    pub fn streams(&self) -> usize {
        self.streams.len()
    }
}

impl Stream {
    /// The summary of the unlogged failures, if any, which are then logged.
    fn summary(&mut self, at: Instant) -> Option<Line> {
        let reason = self.unlogged.reason?;
        if self.unlogged.failures == 0 {
            return None;
        }
        let u = std::mem::take(&mut self.unlogged);
        let line = Line::Repeated {
            reason,
            failures: u.failures,
            succeeded: u.succeeded,
            over: at.saturating_duration_since(self.last_line),
            last_error: u.last_error,
        };
        self.last_line = at;
        Some(line)
    }

    /// A line about the stream was logged at `at`: what was unlogged is in it.
    fn logged(&mut self, at: Instant) {
        self.last_line = at;
        self.unlogged = Unlogged::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: Duration = Duration::from_secs(60);

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    fn key() -> FailureKey {
        FailureKey::scenario("llama", "short")
    }

    fn failed(reason: &'static str, previous: Option<&'static str>) -> Line {
        Line::Failed { reason, previous }
    }

    #[test]
    fn an_outage_is_one_failure_one_summary_per_interval_and_one_recovery() {
        let mut log = FailureLog::new(MINUTE);
        let t0 = Instant::now();
        let k = key();
        assert_eq!(log.success(&k, t0), None);
        assert_eq!(log.streams(), 0);
        assert_eq!(
            log.failure(&k, t0 + secs(1.0), "connect", "refused 1"),
            vec![failed("connect", None)]
        );
        // A probe every half second, down for 150 s: 300 failures after the first.
        let mut lines = Vec::new();
        for i in 1..=300 {
            let at = t0 + secs(1.0 + 0.5 * f64::from(i));
            lines.extend(log.failure(&k, at, "connect", &format!("refused {}", i + 1)));
        }
        assert_eq!(
            lines,
            vec![
                Line::Repeated {
                    reason: "connect",
                    failures: 120,
                    succeeded: 0,
                    over: secs(60.0),
                    last_error: "refused 121".into(),
                },
                Line::Repeated {
                    reason: "connect",
                    failures: 120,
                    succeeded: 0,
                    over: secs(60.0),
                    last_error: "refused 241".into(),
                },
            ]
        );
        // The 60 failures since the last summary are in the recovery's count.
        assert_eq!(
            log.success(&k, t0 + secs(152.0)),
            Some(Line::Recovered {
                failures: 301,
                over: secs(151.0),
            })
        );
        assert_eq!(log.success(&k, t0 + secs(153.0)), None);
    }

    #[test]
    fn a_new_reason_is_a_new_state_after_a_summary_of_the_old_one() {
        let mut log = FailureLog::new(MINUTE);
        let t0 = Instant::now();
        let k = key();
        assert_eq!(
            log.failure(&k, t0, "stream_error", "reset"),
            vec![failed("stream_error", None)]
        );
        assert_eq!(
            log.failure(&k, t0 + secs(1.0), "connect", "refused"),
            vec![failed("connect", Some("stream_error"))]
        );
        assert!(
            log.failure(&k, t0 + secs(2.0), "connect", "refused")
                .is_empty()
        );
        assert!(
            log.failure(&k, t0 + secs(3.0), "connect", "refused")
                .is_empty()
        );
        // The loading server answers 503: the two unlogged refusals are summarised
        // before the new reason, though no interval has passed.
        assert_eq!(
            log.failure(&k, t0 + secs(4.0), "http_5xx", "503 loading"),
            vec![
                Line::Repeated {
                    reason: "connect",
                    failures: 2,
                    succeeded: 0,
                    over: secs(3.0),
                    last_error: "refused".into(),
                },
                failed("http_5xx", Some("connect")),
            ]
        );
        assert_eq!(
            log.success(&k, t0 + secs(5.0)),
            Some(Line::Recovered {
                failures: 5,
                over: secs(5.0),
            })
        );
    }

    #[test]
    fn a_flapping_stream_is_summarised_once_per_interval() {
        let mut log = FailureLog::new(MINUTE);
        let t0 = Instant::now();
        let k = key();
        assert_eq!(
            log.failure(&k, t0, "http_5xx", "500"),
            vec![failed("http_5xx", None)]
        );
        assert_eq!(
            log.success(&k, t0 + secs(1.0)),
            Some(Line::Recovered {
                failures: 1,
                over: secs(1.0),
            })
        );
        // Then every other probe fails, one a second: no line until one interval after
        // the recovery, then one summary with the successes between the failures.
        let mut lines = Vec::new();
        for i in 2..=61 {
            let at = t0 + secs(f64::from(i));
            if i % 2 == 0 {
                lines.extend(log.failure(&k, at, "http_5xx", &format!("500 #{i}")));
            } else {
                lines.extend(log.success(&k, at));
            }
        }
        assert_eq!(
            lines,
            vec![Line::Repeated {
                reason: "http_5xx",
                failures: 30,
                succeeded: 30,
                over: secs(60.0),
                last_error: "500 #60".into(),
            }]
        );
        // Quiet for an interval: the next failure is news again.
        assert_eq!(log.success(&k, t0 + secs(130.0)), None);
        assert_eq!(log.streams(), 0);
        assert_eq!(
            log.failure(&k, t0 + secs(131.0), "http_5xx", "500"),
            vec![failed("http_5xx", None)]
        );
    }

    #[test]
    fn a_flap_that_becomes_an_outage_recovers_in_the_log() {
        let mut log = FailureLog::new(MINUTE);
        let t0 = Instant::now();
        let k = key();
        log.failure(&k, t0, "connect", "refused");
        log.success(&k, t0 + secs(1.0));
        // Fails again at once with the same reason: a flap, not news.
        assert!(
            log.failure(&k, t0 + secs(2.0), "connect", "refused")
                .is_empty()
        );
        // Still down one interval after the recovery line: summarised ...
        assert_eq!(
            log.failure(&k, t0 + secs(61.0), "connect", "refused"),
            vec![Line::Repeated {
                reason: "connect",
                failures: 2,
                succeeded: 0,
                over: secs(60.0),
                last_error: "refused".into(),
            }]
        );
        // ... so its end is logged.
        assert_eq!(
            log.success(&k, t0 + secs(70.0)),
            Some(Line::Recovered {
                failures: 2,
                over: secs(68.0),
            })
        );
        // A flap of another reason is news at once.
        assert_eq!(
            log.failure(&k, t0 + secs(71.0), "timeout", "first token"),
            vec![failed("timeout", None)]
        );
    }

    #[test]
    fn streams_are_independent_and_the_interval_follows_reloads() {
        let mut log = FailureLog::new(MINUTE);
        let t0 = Instant::now();
        let a = key();
        let b = FailureKey {
            replica: Some("10.0.0.2:8000".into()),
            ..key()
        };
        assert_eq!(
            log.failure(&a, t0, "connect", "a"),
            vec![failed("connect", None)]
        );
        assert_eq!(
            log.failure(&b, t0, "connect", "b"),
            vec![failed("connect", None)]
        );
        log.set_interval(secs(5.0));
        assert!(log.failure(&a, t0 + secs(4.0), "connect", "a").is_empty());
        assert_eq!(
            log.failure(&a, t0 + secs(5.0), "connect", "a2"),
            vec![Line::Repeated {
                reason: "connect",
                failures: 2,
                succeeded: 0,
                over: secs(5.0),
                last_error: "a2".into(),
            }]
        );
        assert_eq!(
            log.success(&b, t0 + secs(6.0)),
            Some(Line::Recovered {
                failures: 1,
                over: secs(6.0),
            })
        );
        assert_eq!(log.streams(), 2, "a still fails; b may flap");
    }
}
