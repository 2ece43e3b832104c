//! The dispatcher's precise waits. tokio's timer wheel has 1 ms resolution and wakes a
//! sleeper up to a tick late, so `sleep_until` alone gives dispatch lags up to ~1–2 ms.
//!
//! - [`Timer::Fd`] (Linux): a `timerfd` armed at the deadline and awaited through the
//!   runtime's own event loop, so a dispatch costs one wake-up of the thread that runs
//!   the dispatcher and no other thread is involved. The kernel's high-resolution timer
//!   fires it, without the timer slack that rounds up timed sleeps.
//! - [`Timer::Precise`]: sleeps with tokio until [`COARSE_MARGIN`] before the deadline,
//!   then hands the last stretch to a dedicated OS thread that sleeps with
//!   `std::thread::sleep` (timer slack set to 1 µs on Linux) and wakes the dispatcher;
//!   with [`Spins::TIGHT`] it also spins for the final [`SPIN`] and wakes the dispatcher
//!   [`IN_TASK_SPIN`] early, which spins the rest in place. Every dispatch crosses
//!   threads twice; the mock uses it to pace tokens, where no event loop owns the wait.
//! - [`Timer::Tokio`]: the pure tokio path; under a paused test clock it dispatches at
//!   the deadline rounded up to the next millisecond, deterministically.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::Instant;

/// How long before a deadline the precise timer stops sleeping on tokio's timer: tokio
/// wakes up to one 1 ms tick late, so 2 ms leaves room for that and for a busy runtime.
pub const COARSE_MARGIN: Duration = Duration::from_millis(2);

/// How long before a deadline the timer thread stops sleeping and spins: enough to cover
/// `std::thread::sleep`'s overshoot with a 1 µs timer slack while keeping the spinning
/// share of a core small (measurements in docs/measurement.md).
pub const SPIN: Duration = Duration::from_micros(80);

/// The last stretch the precise timer busy-waits in the dispatcher task: its thread
/// wakes the dispatcher this long before the deadline, because a cross-thread wake-up
/// of a parked tokio worker takes about as long (docs/measurement.md); shorter
/// waits are spun in place without the thread. Blocking a worker this briefly is within
/// tokio's guidance for time between awaits (~100 µs).
pub const IN_TASK_SPIN: Duration = Duration::from_micros(50);

/// The precise-wait strategy. See the module docs.
#[derive(Debug, Clone, Default)]
pub enum Timer {
    /// `tokio::time::sleep_until` only: ~1 ms granularity in real time, exact under a
    /// paused clock (tests).
    #[default]
    Tokio,
    /// A `timerfd` per wait, awaited on the runtime's event loop (Linux).
    #[cfg(target_os = "linux")]
    Fd(super::timerfd::FdTimer),
    /// tokio sleep to [`COARSE_MARGIN`] before, then a dedicated thread finishes.
    /// Real time only: it reads the OS clock, so it must not be used with a paused
    /// tokio clock.
    Precise(PreciseTimer),
}

impl Timer {
    /// The most precise timer for a dispatcher: [`Timer::Fd`] where the OS has
    /// `timerfd`, else [`Timer::Precise`] with its own thread. Real time only.
    pub fn precise() -> std::io::Result<Self> {
        #[cfg(target_os = "linux")]
        return Ok(Timer::Fd(super::timerfd::FdTimer::new()));
        #[cfg(not(target_os = "linux"))]
        return Ok(Timer::Precise(PreciseTimer::spawn()?));
    }

    /// Resolves at `deadline`, never before (see the variants for the precision).
    pub async fn wait_until(&self, deadline: Instant) {
        match self {
            Timer::Tokio => tokio::time::sleep_until(deadline).await,
            #[cfg(target_os = "linux")]
            Timer::Fd(t) => t.wait_until(deadline).await,
            Timer::Precise(t) => {
                if deadline > Instant::now() + COARSE_MARGIN {
                    tokio::time::sleep_until(deadline - COARSE_MARGIN).await;
                }
                let deadline = deadline.into_std();
                let now = std::time::Instant::now();
                if deadline > now + t.spins.task {
                    // Woken `task` early: the cross-thread wake-up eats most of that,
                    // the spin below the rest, so the dispatch lands on time.
                    t.wait_until(deadline - t.spins.task).await;
                }
                while std::time::Instant::now() < deadline {
                    std::hint::spin_loop();
                }
            }
        }
    }
}

/// Handle to the timer thread. Clones share the thread; it exits when the last handle
/// is dropped. Deadlines from several runners are served earliest first.
#[derive(Debug, Clone)]
pub struct PreciseTimer {
    tx: std::sync::mpsc::Sender<(std::time::Instant, oneshot::Sender<()>)>,
    spins: Spins,
}

/// How long the precise timer busy-waits: `thread` before a deadline in its thread,
/// `task` in the dispatcher task. Zero for both never spins: the precision is then the
/// OS's sleep overshoot plus one cross-thread wake-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spins {
    pub thread: Duration,
    pub task: Duration,
}

impl Spins {
    /// No busy-waiting at all: a somewhat higher median lag and a p99 well under 1 ms,
    /// for a fraction of the CPU of [`Spins::TIGHT`]. The default (see [`Default`]).
    pub const NONE: Spins = Spins {
        thread: Duration::ZERO,
        task: Duration::ZERO,
    };

    /// [`SPIN`] in the thread and [`IN_TASK_SPIN`] in the task: the lowest median lag,
    /// for busy CPU on every dispatch (docs/measurement.md), and a worker
    /// blocked for the in-task spin, which delays the reads (and so the timestamps) of
    /// every stream on it. Only for no-op or very cheap probes on a dedicated machine.
    pub const TIGHT: Spins = Spins {
        thread: SPIN,
        task: IN_TASK_SPIN,
    };
}

/// [`Spins::NONE`]. With real streaming probes the spins cost a large share of the
/// client's CPU and buy only a little median dispatch lag, which no TTFT includes (it
/// starts at `t_send`), while the lag p99 without them is still far under the 1 ms
/// target (docs/measurement.md). CPU is what a benchmark client must not waste.
impl Default for Spins {
    fn default() -> Self {
        Spins::NONE
    }
}

impl PreciseTimer {
    /// A timer with the default [`Spins`].
    pub fn spawn() -> std::io::Result<Self> {
        Self::with_spins(Spins::default())
    }

    pub fn with_spins(spins: Spins) -> std::io::Result<Self> {
        let (tx, rx) = std::sync::mpsc::channel();
        let spin = spins.thread;
        std::thread::Builder::new()
            .name("llmprobe-timer".into())
            .spawn(move || timer_thread(rx, spin))?;
        Ok(PreciseTimer { tx, spins })
    }

    /// Resolves at `deadline`, never before.
    pub async fn wait_until(&self, deadline: std::time::Instant) {
        let (done_tx, done_rx) = oneshot::channel();
        if self.tx.send((deadline, done_tx)).is_err() {
            // The thread is gone (it only exits when every handle is dropped, so this
            // is unreachable while `self` lives); fall back to tokio's timer.
            tokio::time::sleep_until(Instant::from_std(deadline)).await;
            return;
        }
        if done_rx.await.is_err() {
            tokio::time::sleep_until(Instant::from_std(deadline)).await;
        }
    }
}

type Waiter = (Reverse<std::time::Instant>, u64, WaiterTx);

/// A oneshot sender ordered by nothing (the heap orders by deadline and sequence).
struct WaiterTx(oneshot::Sender<()>);

impl PartialEq for WaiterTx {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for WaiterTx {}
impl PartialOrd for WaiterTx {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for WaiterTx {
    fn cmp(&self, _: &Self) -> std::cmp::Ordering {
        std::cmp::Ordering::Equal
    }
}

fn timer_thread(
    rx: std::sync::mpsc::Receiver<(std::time::Instant, oneshot::Sender<()>)>,
    spin: Duration,
) {
    use std::sync::mpsc::RecvTimeoutError;
    set_timer_slack();
    let mut heap: BinaryHeap<Waiter> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut push = |heap: &mut BinaryHeap<Waiter>, (deadline, tx)| {
        seq += 1;
        heap.push((Reverse(deadline), seq, WaiterTx(tx)));
    };
    loop {
        let Some(&(Reverse(next), _, _)) = heap.peek() else {
            match rx.recv() {
                Ok(w) => push(&mut heap, w),
                Err(_) => return,
            }
            continue;
        };
        let now = std::time::Instant::now();
        if next > now + spin {
            match rx.recv_timeout(next - now - spin) {
                Ok(w) => push(&mut heap, w),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    if heap.is_empty() {
                        return;
                    }
                }
            }
            continue;
        }
        while std::time::Instant::now() < next {
            std::hint::spin_loop();
        }
        let now = std::time::Instant::now();
        while heap.peek().is_some_and(|(Reverse(d), _, _)| *d <= now) {
            if let Some((_, _, WaiterTx(tx))) = heap.pop() {
                // The waiter may have given up (its run was cancelled): nothing to do.
                let _ = tx.send(());
            }
        }
    }
}

/// Linux rounds timed sleeps up by the thread's timer slack (50 µs by default) to batch
/// wake-ups; the timer thread wants its wake-ups on time (prctl(2), PR_SET_TIMERSLACK).
#[cfg(target_os = "linux")]
fn set_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes one unsigned long argument and affects only the
    // calling thread; a failure leaves the default slack, which is merely less precise.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
    }
}

#[cfg(not(target_os = "linux"))]
fn set_timer_slack() {}
