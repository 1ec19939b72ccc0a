//! The few OS facilities the native pool needs: per-thread CPU clocks and
//! CPU affinity (Linux, through `libc`), and the CPU-burning and spinning
//! loops of the `cpu_ms` and `spin_ms` steps.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Whether this build can run the native pool at all.
pub(super) const SUPPORTED: bool = cfg!(target_os = "linux");

#[cfg(target_os = "linux")]
mod imp {
    use std::io;

    fn clock_ns(clock: libc::clockid_t) -> Option<u64> {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, writable timespec; an invalid clock id
        // only makes the call fail with EINVAL.
        let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
        (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
    }

    /// CPU time of the calling thread, in nanoseconds.
    pub fn thread_cpu_ns() -> u64 {
        clock_ns(libc::CLOCK_THREAD_CPUTIME_ID).unwrap_or(0)
    }

    /// The CPU-time clock of one thread, readable from any thread of the
    /// process (the kernel refuses threads of other processes).
    #[derive(Clone, Copy, Debug)]
    pub struct CpuClock(libc::clockid_t);

    impl CpuClock {
        /// The calling thread's clock.
        pub fn current() -> Option<CpuClock> {
            let mut clock: libc::clockid_t = 0;
            // SAFETY: `pthread_self` is always valid for the calling thread
            // and `clock` is a valid out-pointer.
            let rc = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) };
            (rc == 0).then_some(CpuClock(clock))
        }

        /// CPU time of the thread so far; `None` once the thread is gone.
        pub fn read_ns(self) -> Option<u64> {
            clock_ns(self.0)
        }
    }

    /// The CPUs the calling thread may run on, in increasing order.
    pub fn allowed_cpus() -> io::Result<Vec<usize>> {
        // SAFETY: cpu_set_t is a plain bit array; all zeroes is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: the size passed is the size of `set`.
        let rc =
            unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        let max = libc::CPU_SETSIZE as usize;
        // SAFETY: every index is below CPU_SETSIZE, the capacity of `set`.
        Ok((0..max)
            .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
            .collect())
    }

    /// Restricts the calling thread to `cpus`.
    pub fn pin_current_thread(cpus: &[usize]) -> io::Result<()> {
        // SAFETY: as in `allowed_cpus`.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &c in cpus.iter().filter(|&&c| c < libc::CPU_SETSIZE as usize) {
            // SAFETY: `c` is below CPU_SETSIZE.
            unsafe { libc::CPU_SET(c, &mut set) };
        }
        // SAFETY: the size passed is the size of `set`; pid 0 is this thread.
        let rc =
            unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    //! Stand-ins so the crate builds elsewhere; `run_native` refuses to run.
    use std::io;

    pub fn thread_cpu_ns() -> u64 {
        0
    }

    #[derive(Clone, Copy, Debug)]
    pub struct CpuClock;

    impl CpuClock {
        pub fn current() -> Option<CpuClock> {
            None
        }
        pub fn read_ns(self) -> Option<u64> {
            None
        }
    }

    pub fn allowed_cpus() -> io::Result<Vec<usize>> {
        Err(io::Error::other("CPU affinity needs Linux"))
    }

    pub fn pin_current_thread(_cpus: &[usize]) -> io::Result<()> {
        Ok(())
    }
}

pub(super) use imp::{CpuClock, allowed_cpus, pin_current_thread, thread_cpu_ns};

/// Pins the calling thread to `cpus` (no-op when empty). A failure is not
/// fatal: the run goes on unpinned, as it would on a host with that many
/// cores.
pub(super) fn pin(cpus: &[usize]) {
    if !cpus.is_empty() {
        let _ = pin_current_thread(cpus);
    }
}

/// Burns `ns` nanoseconds of the calling thread's CPU time (a `cpu_ms`
/// step): under contention it takes longer in wall time, as processor
/// sharing does. Returns false when `stop` was raised first.
pub(super) fn burn_cpu(ns: u64, stop: &AtomicBool) -> bool {
    let target = thread_cpu_ns().saturating_add(ns);
    loop {
        for _ in 0..512 {
            std::hint::spin_loop();
        }
        if thread_cpu_ns() >= target {
            return true;
        }
        if stop.load(Ordering::Relaxed) {
            return false;
        }
    }
}

/// Busy-loops on the clock until `until` (a `busy_ms` step, a Stopwatch
/// loop), never yielding its core. Returns false when `stop` was raised first.
pub(super) fn busy_until(until: Instant, stop: &AtomicBool) -> bool {
    loop {
        if Instant::now() >= until {
            return true;
        }
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        std::hint::spin_loop();
    }
}

/// Spins until `until` (a `spin_ms` step) the way `SpinWait.SpinUntil`
/// does: ten short busy spins, then `Thread.Yield` / `Sleep(0)` (both a
/// `sched_yield` here) with a 1 ms sleep every 20th iteration, so the
/// spinner ends on time but leaves its core to others most of the time.
/// Returns false when `stop` was raised first.
pub(super) fn spin_until(until: Instant, stop: &AtomicBool) -> bool {
    let mut count: u32 = 0;
    loop {
        let now = Instant::now();
        if now >= until {
            return true;
        }
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        if count < 10 {
            for _ in 0..(4u32 << count) {
                std::hint::spin_loop();
            }
        } else if (count - 10) % 20 == 19 {
            std::thread::sleep((until - now).min(Duration::from_millis(1)));
        } else {
            std::thread::yield_now();
        }
        count = count.wrapping_add(1);
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn cpu_clock_of_this_thread_advances_with_burning() {
        let clock = CpuClock::current().expect("thread CPU clock");
        let before = clock.read_ns().unwrap();
        let stop = AtomicBool::new(false);
        assert!(burn_cpu(5_000_000, &stop));
        let after = clock.read_ns().unwrap();
        assert!(after >= before + 5_000_000, "{before} -> {after}");
        assert!(!allowed_cpus().unwrap().is_empty());
    }

    #[test]
    fn spin_ends_on_time_and_stops_early_when_told() {
        let stop = AtomicBool::new(false);
        let start = Instant::now();
        assert!(spin_until(start + Duration::from_millis(20), &stop));
        let took = start.elapsed();
        assert!(took >= Duration::from_millis(20) && took < Duration::from_millis(500));
        stop.store(true, Ordering::Relaxed);
        assert!(!spin_until(Instant::now() + Duration::from_secs(60), &stop));
        assert!(!burn_cpu(60_000_000_000, &stop));
    }
}
