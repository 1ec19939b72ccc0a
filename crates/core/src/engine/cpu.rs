//! The machine's cores: processor sharing among runnable threads.
//!
//! Threads that run CPU work (`cpu_ms`) or busy-wait (`spin_ms`) are
//! runnable. A CPU job demands a whole core; a spinner demands
//! `spin_percent` of one (`SpinWait` yields between short spins). With a
//! total demand `n` on `cores` cores each job gets `min(1, cores / n)` of a
//! core, as a fair OS scheduler gives on average. CPU work of `w`
//! core-nanoseconds therefore takes `w` when cores are free and longer when
//! they are not; a spinner ends at its wall-clock deadline whatever its
//! share, but its share still slows the others. A Stopwatch busy loop
//! (`busy_ms`) is a spinner that demands a whole core.
//!
//! Cost is O(log n) per change: instead of rescaling every job, a single
//! "virtual work" clock `v` advances at the per-thread rate, and each job
//! finishes when `v` reaches its start value plus its work (the classic
//! generalised-processor-sharing trick). All arithmetic is integer: `v` is
//! nanoseconds of work in 32.32 fixed point.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::time::{SimDuration, SimTime};
use crate::trace::ThreadId;

const FRAC_BITS: u32 = 32;

type Job = (u128, u64, ThreadId);

/// The running jobs by (virtual finish, insertion order). A job started
/// later usually finishes later (jobs of one size always do), so a job
/// finishing no earlier than the last one queued joins a FIFO; one finishing
/// earlier goes to a heap. The earliest is the earlier of the two fronts.
#[derive(Debug, Default)]
struct Jobs {
    fifo: VecDeque<Job>,
    heap: BinaryHeap<Reverse<Job>>,
}

impl Jobs {
    fn len(&self) -> usize {
        self.fifo.len() + self.heap.len()
    }

    fn is_empty(&self) -> bool {
        self.fifo.is_empty() && self.heap.is_empty()
    }

    fn push(&mut self, job: Job) {
        if self.fifo.back().is_none_or(|last| *last <= job) {
            self.fifo.push_back(job);
        } else {
            self.heap.push(Reverse(job));
        }
    }

    /// Whether the earliest job is the FIFO's.
    fn fifo_first(&self) -> bool {
        match (self.fifo.front(), self.heap.peek()) {
            (Some(f), Some(Reverse(h))) => f < h,
            (f, _) => f.is_some(),
        }
    }

    fn peek(&self) -> Option<Job> {
        if self.fifo_first() {
            self.fifo.front().copied()
        } else {
            self.heap.peek().map(|Reverse(job)| *job)
        }
    }

    fn pop(&mut self) -> Option<Job> {
        if self.fifo_first() {
            self.fifo.pop_front()
        } else {
            self.heap.pop().map(|Reverse(job)| job)
        }
    }
}

/// Core-nanoseconds of `dt` ns at a demand of `percent` percent of a core:
/// `dt * percent / 100`, exact, in 64-bit arithmetic when the product fits
/// (a 128-bit division is a library call, and this runs at every change).
#[inline]
fn busy_ns(dt: u128, percent: u128) -> u128 {
    let product = match (u64::try_from(dt), u64::try_from(percent)) {
        (Ok(dt), Ok(percent)) => dt.checked_mul(percent),
        _ => None,
    };
    match product {
        Some(product) => u128::from(product / 100),
        None => dt * percent / 100,
    }
}

#[derive(Debug)]
pub struct Cpu {
    cores: u64,
    spinners: u64,
    /// Stopwatch busy loops (`busy_ms`): a whole core each, no work to finish.
    busy_loops: u64,
    /// Demand of one spinner, percent of a core.
    spin_percent: u64,
    /// Virtual work clock, ns << FRAC_BITS.
    virtual_work: u128,
    last_update: SimTime,
    /// The jobs running: (virtual finish, insertion order, thread), in
    /// [`Jobs`].
    jobs: Jobs,
    next_order: u64,
    /// Core-nanoseconds spent running (min(runnable, cores) integrated).
    busy_core_ns: u128,
}

impl Cpu {
    pub fn new(cores: u32, spin_percent: u32) -> Cpu {
        Cpu {
            cores: u64::from(cores.max(1)),
            spinners: 0,
            busy_loops: 0,
            spin_percent: u64::from(spin_percent.clamp(1, 100)),
            virtual_work: 0,
            last_update: SimTime::ZERO,
            jobs: Jobs::default(),
            next_order: 0,
            busy_core_ns: 0,
        }
    }

    /// Runnable threads (CPU work plus spinners).
    pub fn runnable(&self) -> u64 {
        self.jobs.len() as u64 + self.spinners + self.busy_loops
    }

    /// The cores the jobs and busy loops take whole (spinners yield and do
    /// not count).
    fn whole_cores_taken(&self) -> u64 {
        self.jobs.len() as u64 + self.busy_loops
    }

    /// Whether one more thread running CPU work would leave no core free.
    pub fn taken_with_one_more(&self) -> bool {
        self.whole_cores_taken() + 1 >= self.cores
    }

    /// Whether the jobs and busy loops take every core.
    pub fn cores_taken(&self) -> bool {
        self.whole_cores_taken() >= self.cores
    }

    /// Total demand in percent of a core.
    fn demand(&self) -> u128 {
        u128::from(self.whole_cores_taken() * 100 + self.spinners * self.spin_percent)
    }

    /// Core-nanoseconds used so far (call [`Cpu::advance`] first for an up-to-date value).
    pub fn busy_core_ns(&self) -> u128 {
        self.busy_core_ns
    }

    pub fn cores(&self) -> u64 {
        self.cores
    }

    /// Brings the virtual clock and the busy integral up to `now`.
    pub fn advance(&mut self, now: SimTime) {
        let dt = u128::from(now.since(self.last_update).as_nanos());
        self.last_update = now;
        if dt == 0 {
            return;
        }
        let n = self.demand();
        let cores = u128::from(self.cores) * 100;
        self.busy_core_ns += busy_ns(dt, n.min(cores));
        if !self.jobs.is_empty() {
            let dv = if n <= cores {
                dt << FRAC_BITS
            } else {
                (dt << FRAC_BITS) * cores / n
            };
            self.virtual_work += dv;
        }
    }

    /// Starts `work` of CPU work for `thread` (call `advance(now)` first).
    pub fn add_job(&mut self, thread: ThreadId, work: SimDuration) {
        let finish = self.virtual_work + (u128::from(work.as_nanos()) << FRAC_BITS);
        self.jobs.push((finish, self.next_order, thread));
        self.next_order += 1;
    }

    /// A spinner starts holding a core share (call `advance(now)` first).
    pub fn add_spinner(&mut self) {
        self.spinners += 1;
    }

    /// A spinner stops (call `advance(now)` first).
    pub fn remove_spinner(&mut self) {
        self.spinners = self.spinners.saturating_sub(1);
    }

    /// A busy loop starts holding a whole core (call `advance(now)` first).
    pub fn add_busy_loop(&mut self) {
        self.busy_loops += 1;
    }

    /// A busy loop ends (call `advance(now)` first).
    pub fn remove_busy_loop(&mut self) {
        self.busy_loops = self.busy_loops.saturating_sub(1);
    }

    /// Whether any CPU job runs (then [`Cpu::next_completion`] has a time).
    pub fn has_jobs(&self) -> bool {
        !self.jobs.is_empty()
    }

    /// When the earliest CPU job will finish at the current sharing, if any.
    pub fn next_completion(&self) -> Option<SimTime> {
        let (finish, _, _) = self.jobs.peek()?;
        let remaining = finish.saturating_sub(self.virtual_work);
        let n = self.demand();
        let cores = u128::from(self.cores) * 100;
        let one = 1u128 << FRAC_BITS;
        let dt = if n <= cores {
            remaining.div_ceil(one)
        } else {
            (remaining * n).div_ceil(cores * one)
        };
        let dt = u64::try_from(dt).unwrap_or(u64::MAX);
        Some(self.last_update + SimDuration(dt))
    }

    /// Removes and returns every job finished by now (call `advance(now)` first),
    /// in the order they finish.
    pub fn pop_finished(&mut self, out: &mut Vec<ThreadId>) {
        while let Some((finish, _, thread)) = self.jobs.peek() {
            if finish > self.virtual_work {
                break;
            }
            self.jobs.pop();
            out.push(thread);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_until_done(cpu: &mut Cpu) -> Vec<(ThreadId, SimTime)> {
        let mut done = Vec::new();
        let mut buf = Vec::new();
        while let Some(t) = cpu.next_completion() {
            cpu.advance(t);
            buf.clear();
            cpu.pop_finished(&mut buf);
            assert!(
                !buf.is_empty(),
                "a predicted completion must complete a job"
            );
            for &th in &buf {
                done.push((th, t));
            }
        }
        done
    }

    #[test]
    fn jobs_come_out_by_finish_then_start_order_whichever_way_they_went_in() {
        let mut jobs = Jobs::default();
        let finishes = [5u128, 3, 7, 3, 1, 7, 9, 2];
        for (order, &f) in finishes.iter().enumerate() {
            jobs.push((f, order as u64, order as ThreadId));
        }
        assert!(!jobs.fifo.is_empty() && !jobs.heap.is_empty());
        let mut expected: Vec<Job> = finishes
            .iter()
            .enumerate()
            .map(|(o, &f)| (f, o as u64, o as ThreadId))
            .collect();
        expected.sort();
        let mut out = Vec::new();
        while let Some(job) = jobs.pop() {
            out.push(job);
        }
        assert_eq!(out, expected);
        assert!(jobs.is_empty());
    }

    #[test]
    fn busy_time_is_the_exact_product_whatever_the_width() {
        for (dt, percent) in [
            (0u128, 1600u128),
            (7, 33),
            (1_000_003, 1600),
            (u128::from(u64::MAX), 100),
            (u128::from(u64::MAX) / 3, 1600),
            (u128::from(u64::MAX) + 5, 250),
        ] {
            assert_eq!(busy_ns(dt, percent), dt * percent / 100, "{dt} x {percent}");
        }
    }

    #[test]
    fn jobs_run_at_full_speed_when_cores_are_free() {
        let mut cpu = Cpu::new(4, 100);
        cpu.add_job(0, SimDuration::from_ms(10));
        cpu.add_job(1, SimDuration::from_ms(20));
        let done = run_until_done(&mut cpu);
        assert_eq!(
            done,
            vec![(0, SimTime::from_ms(10)), (1, SimTime::from_ms(20))]
        );
        assert_eq!(cpu.busy_core_ns(), 30_000_000);
    }

    #[test]
    fn jobs_share_cores_when_outnumbering_them() {
        let mut cpu = Cpu::new(2, 100);
        for t in 0..4 {
            cpu.add_job(t, SimDuration::from_ms(10));
        }
        let done = run_until_done(&mut cpu);
        // 4 jobs of 10 ms on 2 cores: each gets half a core, all end at 20 ms.
        assert!(
            done.iter().all(|&(_, t)| t == SimTime::from_ms(20)),
            "{done:?}"
        );
    }

    #[test]
    fn spinners_take_a_share_but_do_not_finish_as_jobs() {
        let mut cpu = Cpu::new(1, 100);
        cpu.add_spinner();
        cpu.add_job(7, SimDuration::from_ms(10));
        // One core shared by a spinner and a job: the job runs at half speed.
        assert_eq!(cpu.next_completion(), Some(SimTime::from_ms(20)));
        cpu.advance(SimTime::from_ms(4));
        cpu.remove_spinner();
        // 2 ms of work done in 4 ms; 8 ms left at full speed.
        assert_eq!(cpu.next_completion(), Some(SimTime::from_ms(12)));
    }

    #[test]
    fn a_spinner_demands_only_its_share_of_a_core() {
        let mut cpu = Cpu::new(1, 10);
        cpu.add_spinner();
        cpu.add_job(1, SimDuration::from_ms(10));
        // 110 % demand on one core: the job runs at 100/110 speed.
        assert_eq!(cpu.next_completion(), Some(SimTime(11_000_000)));
    }

    #[test]
    fn a_busy_loop_demands_a_whole_core_whatever_the_spin_share() {
        let mut cpu = Cpu::new(1, 10);
        cpu.add_busy_loop();
        cpu.add_job(1, SimDuration::from_ms(10));
        assert_eq!(cpu.runnable(), 2);
        // 200 % demand on one core: the job runs at half speed.
        assert_eq!(cpu.next_completion(), Some(SimTime::from_ms(20)));
        cpu.advance(SimTime::from_ms(10));
        cpu.remove_busy_loop();
        assert_eq!(cpu.next_completion(), Some(SimTime::from_ms(15)));
        assert_eq!(cpu.busy_core_ns(), 10_000_000);
    }

    #[test]
    fn uneven_sharing_never_runs_a_job_faster_than_one_core() {
        let mut cpu = Cpu::new(3, 100);
        for t in 0..7 {
            cpu.add_job(t, SimDuration::from_nanos(1_000_003 + u64::from(t) * 7));
        }
        for (th, end) in run_until_done(&mut cpu) {
            assert!(end.as_nanos() >= 1_000_003 + u64::from(th) * 7);
        }
    }
}
