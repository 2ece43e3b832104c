//! [`FdTimer`]: a dispatch wait on a Linux `timerfd`, registered with the runtime's
//! event loop. The thread that runs the dispatcher sleeps in the runtime's `epoll_wait`
//! as it would for any socket, and the kernel's high-resolution timer wakes it at the
//! deadline: one wake-up per dispatch, no helper thread, no cross-thread hand-off.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::Interest;
use tokio::io::unix::AsyncFd;
use tokio::time::Instant;

/// Clones share a pool of armed-and-awaited timerfds: a wait takes one (or opens one
/// when all are in use by concurrent waits) and gives it back, so a steady dispatcher
/// reuses a single descriptor.
#[derive(Clone, Default)]
pub struct FdTimer {
    idle: Arc<Mutex<Vec<AsyncFd<OwnedFd>>>>,
}

impl std::fmt::Debug for FdTimer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FdTimer")
    }
}

impl FdTimer {
    pub fn new() -> Self {
        Self::default()
    }

    /// Resolves at `deadline`, never before. Where a timerfd cannot be had (outside a
    /// runtime with I/O enabled, or out of descriptors) it falls back to tokio's timer,
    /// which is never early either, only coarser.
    pub async fn wait_until(&self, deadline: Instant) {
        let fd = match self.take() {
            Ok(fd) => fd,
            Err(e) => {
                tracing::debug!("timerfd unavailable ({e}); dispatching on tokio's timer");
                tokio::time::sleep_until(deadline).await;
                return;
            }
        };
        match wait_on(&fd, deadline).await {
            Ok(()) => self.give_back(fd),
            Err(e) => {
                tracing::debug!("timerfd wait failed ({e}); dispatching on tokio's timer");
                tokio::time::sleep_until(deadline).await;
            }
        }
    }

    fn take(&self) -> io::Result<AsyncFd<OwnedFd>> {
        let pooled = self.idle.lock().ok().and_then(|mut idle| idle.pop());
        match pooled {
            Some(fd) => Ok(fd),
            None => open(),
        }
    }

    fn give_back(&self, fd: AsyncFd<OwnedFd>) {
        if let Ok(mut idle) = self.idle.lock() {
            idle.push(fd);
        }
    }
}

fn open() -> io::Result<AsyncFd<OwnedFd>> {
    // SAFETY: timerfd_create takes two integer arguments and returns a new descriptor
    // or -1; a valid descriptor is owned by nobody else.
    let raw = unsafe {
        libc::timerfd_create(
            libc::CLOCK_MONOTONIC,
            libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
        )
    };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a fresh descriptor returned above.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: the `OwnedFd` is moved into the `AsyncFd`, which closes it only when it
    // deregisters, and nothing else holds the descriptor.
    unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }.map_err(io::Error::from)
}

/// Arms `fd` for the time left until `deadline` and waits until it has expired.
/// Arming resets the expiration count, so a readiness left over from a cancelled
/// earlier wait reads as "not yet" and is cleared, never taken for this deadline.
async fn wait_on(fd: &AsyncFd<OwnedFd>, deadline: Instant) -> io::Result<()> {
    let left = deadline
        .into_std()
        .saturating_duration_since(std::time::Instant::now());
    if left.is_zero() {
        return Ok(());
    }
    arm(fd.as_raw_fd(), left)?;
    loop {
        let mut guard = fd.readable().await?;
        let mut expirations = [0u8; 8];
        // SAFETY: reads at most 8 bytes into a local 8-byte buffer from a descriptor
        // this function holds open.
        let n = unsafe { libc::read(fd.as_raw_fd(), expirations.as_mut_ptr().cast(), 8) };
        if n == 8 {
            // Drained until the next arm: without this the next wait would find the
            // stale readiness and spend a read on EAGAIN before it sleeps.
            guard.clear_ready();
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::WouldBlock {
            return Err(e);
        }
        guard.clear_ready();
    }
}

fn arm(fd: i32, left: Duration) -> io::Result<()> {
    let spec = libc::itimerspec {
        it_interval: libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: libc::timespec {
            tv_sec: libc::time_t::try_from(left.as_secs()).unwrap_or(libc::time_t::MAX),
            // Under 10^9, so it fits a c_long anywhere. A zero value would disarm the
            // timer: wait at least a nanosecond.
            tv_nsec: (left.subsec_nanos() as libc::c_long)
                .max(libc::c_long::from(left.as_secs() == 0)),
        },
    };
    // SAFETY: `spec` is a valid itimerspec on the stack; a null old-value pointer is
    // allowed.
    let rc = unsafe { libc::timerfd_settime(fd, 0, &spec, std::ptr::null_mut()) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real time: each wait ends at or after its deadline, never before, and within a
    /// loose bound after it (a loaded test machine may be late, never early).
    #[tokio::test(flavor = "current_thread")]
    async fn waits_until_the_deadline_and_reuses_one_descriptor() {
        let timer = FdTimer::new();
        for micros in [0u64, 1, 300, 2_000, 15_000] {
            let deadline = Instant::now() + Duration::from_micros(micros);
            timer.wait_until(deadline).await;
            let now = Instant::now();
            assert!(now >= deadline, "woke {:?} early", deadline - now);
            assert!(
                now - deadline < Duration::from_millis(200),
                "{micros} µs wait"
            );
        }
        assert_eq!(timer.idle.lock().unwrap().len(), 1);
    }

    /// A wait cancelled before its deadline leaves an armed descriptor in nobody's
    /// hands; a later, longer wait on a fresh arm must not end at the old deadline.
    #[tokio::test(flavor = "current_thread")]
    async fn a_cancelled_wait_does_not_end_a_later_one_early() {
        let timer = FdTimer::new();
        let fd = timer.take().unwrap();
        arm(fd.as_raw_fd(), Duration::from_millis(1)).unwrap();
        tokio::time::sleep(Duration::from_millis(5)).await;
        // The old arm has expired and the descriptor is readable; reuse it.
        timer.give_back(fd);
        let deadline = Instant::now() + Duration::from_millis(20);
        timer.wait_until(deadline).await;
        assert!(Instant::now() >= deadline);
    }

    /// Concurrent waits each get a descriptor of their own. The late deadline is far
    /// enough out that a busy machine's wake-up delay for the early one (milliseconds)
    /// cannot reach it.
    #[tokio::test(flavor = "current_thread")]
    async fn concurrent_waits_do_not_share_a_descriptor() {
        let timer = FdTimer::new();
        let start = Instant::now();
        let (a, b) = (
            start + Duration::from_millis(500),
            start + Duration::from_millis(5),
        );
        let (ta, tb) = tokio::join!(
            async {
                timer.wait_until(a).await;
                Instant::now()
            },
            async {
                timer.wait_until(b).await;
                Instant::now()
            }
        );
        assert!(ta >= a && tb >= b);
        assert!(tb < a, "the early wait waited for the late one");
        assert_eq!(timer.idle.lock().unwrap().len(), 2);
    }
}
