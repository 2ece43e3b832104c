//! What a provider's limits hold a target to, kept by target name so a reload that
//! restarts the target keeps them: the pause a 429 with a retry delay asks for, and the
//! dollars its probes spent this UTC day. The admission (`scenario.rs`) reads them; the
//! limits sink (`sinks/limits.rs`) writes them from each record.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

/// The longest pause a retry delay can ask for: a server sending a day (or a date years
/// away) would otherwise stop probing until a restart. Longer delays are capped here.
pub const MAX_PAUSE: Duration = Duration::from_secs(3600);

const SECONDS_PER_DAY: f64 = 86_400.0;

/// The wall clock the day's spend is kept by, as Unix seconds: the system's in the
/// daemon, a test's own to cross midnight at will.
pub type WallClock = Arc<dyn Fn() -> f64 + Send + Sync>;

/// The system's wall clock.
pub fn system_clock() -> WallClock {
    Arc::new(crate::clock::unix_now)
}

/// The UTC day of a Unix time: days since 1970-01-01.
pub fn utc_day(unix: f64) -> i64 {
    (unix / SECONDS_PER_DAY).floor() as i64
}

/// The Unix time the UTC day after `unix`'s starts.
pub fn next_utc_midnight(unix: f64) -> f64 {
    (utc_day(unix) + 1) as f64 * SECONDS_PER_DAY
}

#[derive(Debug, Default)]
struct State {
    paused_until: Option<Instant>,
    /// The UTC day `spent` belongs to.
    day: i64,
    spent: f64,
}

/// One target's limits.
#[derive(Debug, Default)]
pub struct TargetLimits {
    state: Mutex<State>,
}

impl TargetLimits {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Pauses the target's arrivals for `delay` from `now`, capped at [`MAX_PAUSE`]; a
    /// pause already running longer is kept. Returns the pause's end.
    pub fn pause(&self, now: Instant, delay: Duration) -> Instant {
        let until = now + delay.min(MAX_PAUSE);
        let mut s = self.lock();
        let until = s.paused_until.map_or(until, |u| u.max(until));
        s.paused_until = Some(until);
        until
    }

    /// Whether an arrival at `now` falls in a pause.
    pub fn paused(&self, now: Instant) -> bool {
        self.lock().paused_until.is_some_and(|u| now < u)
    }

    /// Adds `dollars` to the spend of `unix`'s UTC day (a new day starts from zero).
    pub fn spend(&self, unix: f64, dollars: f64) {
        let mut s = self.lock();
        roll(&mut s, unix);
        s.spent += dollars;
    }

    /// Dollars spent in `unix`'s UTC day.
    pub fn spent_today(&self, unix: f64) -> f64 {
        let mut s = self.lock();
        roll(&mut s, unix);
        s.spent
    }
}

fn roll(s: &mut State, unix: f64) {
    let day = utc_day(unix);
    if day != s.day {
        s.day = day;
        s.spent = 0.0;
    }
}

/// Every target's limits by name: what a restarted target finds again.
#[derive(Debug, Default)]
pub struct LimitStore(Mutex<BTreeMap<String, Arc<TargetLimits>>>);

impl LimitStore {
    /// The limits of `target`, created when new.
    pub fn of(&self, target: &str) -> Arc<TargetLimits> {
        let mut m = self.0.lock().unwrap_or_else(|e| e.into_inner());
        m.entry(target.to_string()).or_default().clone()
    }

    /// Forgets the targets not in `keep` (they left the config).
    pub fn retain(&self, keep: impl Fn(&str) -> bool) {
        let mut m = self.0.lock().unwrap_or_else(|e| e.into_inner());
        m.retain(|name, _| keep(name));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_days_start_at_midnight() {
        // 2026-12-06T00:00:00Z is 20_793 days after the epoch.
        let midnight = 20_793.0 * SECONDS_PER_DAY;
        assert_eq!(utc_day(midnight - 0.001), 20_792);
        assert_eq!(utc_day(midnight), 20_793);
        assert_eq!(utc_day(midnight + 86_399.9), 20_793);
        assert_eq!(next_utc_midnight(midnight), midnight + SECONDS_PER_DAY);
        assert_eq!(next_utc_midnight(midnight - 1.0), midnight);
        assert_eq!(utc_day(0.0), 0);
    }

    #[test]
    fn spend_resets_at_the_next_utc_day() {
        let l = TargetLimits::default();
        let day = 20_793.0 * SECONDS_PER_DAY;
        l.spend(day + 10.0, 0.25);
        l.spend(day + 86_399.0, 0.5);
        assert_eq!(l.spent_today(day + 86_399.5), 0.75);
        assert_eq!(l.spent_today(day + SECONDS_PER_DAY), 0.0);
        l.spend(day + SECONDS_PER_DAY + 1.0, 0.125);
        assert_eq!(l.spent_today(day + SECONDS_PER_DAY + 2.0), 0.125);
    }

    #[tokio::test(start_paused = true)]
    async fn a_pause_ends_at_its_time_is_capped_and_never_shortened() {
        let l = TargetLimits::default();
        let t0 = Instant::now();
        assert!(!l.paused(t0));
        assert_eq!(
            l.pause(t0, Duration::from_secs(30)),
            t0 + Duration::from_secs(30)
        );
        assert!(l.paused(t0 + Duration::from_millis(29_999)));
        assert!(!l.paused(t0 + Duration::from_secs(30)));
        // A shorter delay later does not end the running pause early.
        l.pause(t0 + Duration::from_secs(1), Duration::from_secs(2));
        assert!(l.paused(t0 + Duration::from_secs(10)));
        // An absurd delay is capped.
        let t1 = t0 + Duration::from_secs(60);
        assert_eq!(
            l.pause(t1, Duration::from_secs(u64::MAX / 4)),
            t1 + MAX_PAUSE
        );
        assert!(!l.paused(t1 + MAX_PAUSE));
    }

    #[test]
    fn the_store_keeps_a_target_by_name_until_it_leaves() {
        let store = LimitStore::default();
        store.of("a").spend(0.0, 1.0);
        assert_eq!(store.of("a").spent_today(1.0), 1.0);
        store.retain(|n| n != "a");
        assert_eq!(store.of("a").spent_today(1.0), 0.0);
    }
}
