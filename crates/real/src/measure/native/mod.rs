//! Native backend: a scenario executed for real on OS threads, by a thread
//! pool whose decisions come from the simulator's own policy model.
//!
//! [`run_native`] builds the policy with [`crate::policy::build`] and
//! implements [`crate::policy::PoolControl`] over a real pool: real worker
//! threads, a global FIFO queue and per-worker local queues (LIFO for the
//! owner, stolen FIFO by others), the managed queue's thread-request count,
//! the native pool's unmanaged requests and the .NET 6/7+ timer queues, idle
//! workers waiting on a condition variable for `threads.idle_timeout_ms`,
//! retirement, and a timer thread that calls [`crate::policy::Policy::wake`]
//! (gate thread, blocking adjustments) when the policy asked. The worker
//! loop, the points where the policy is asked and the bookkeeping are the
//! engine's ([`crate::engine`]) — the queues, requests, timers, throttles and
//! thread counts are the same code, `crate::pool::state` — so the
//! same model drives both; only the clock is real. Steps run for real: `cpu_ms` burns thread CPU time
//! (stretched by contention, like processor sharing), `spin_ms` spins like
//! `SpinWait.SpinUntil`, `busy_ms` loops on the clock holding its core, `sleep_ms` sleeps, `wait_ms` blocks until its
//! `Task.Delay` timer callback has run as pool work, `await_ms` and `yield`
//! queue the rest of the body as a continuation. Submission shapes
//! `task-run`, `queue-user-work-item`, `when-all` (as `task-run`) and
//! `new-thread` are supported, from the main thread or from a pool
//! submitter item, with every arrival form, the `ConcurrentExclusive` and
//! `Semaphore` throttles, and `[[probe]]` loops. Every thread of the run is
//! pinned to the first `machine.cores` CPUs the process may use.
//!
//! Left out: the one-call TPL shapes (`parallel-invoke`, `parallel-for`,
//! `parallel-foreach`, `plinq`, `parallel-foreach-async`) are refused with
//! [`NativeError::Unsupported`]; the policy's thread start and wake
//! latencies are not added (real threads have their own); no deadlock
//! detection (a deadlocked run ends at the timeout); the CPU time the
//! policy reads (gate-thread utilisation, [`Trace::cpu_busy_ns`]) is that
//! of the run's pool and dedicated threads, from their per-thread clocks,
//! not the whole process's. Linux only.

mod pool;
mod sys;
mod threads;

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::policy::PolicyConfig;
use crate::scenario::{Scenario, Step};
use crate::trace::Trace;

use pool::Shared;

/// How a native run is bounded and sampled.
#[derive(Clone, Debug)]
pub struct NativeOptions {
    /// Wall-clock limit of the whole run; past it the run stops with
    /// [`NativeError::TimedOut`].
    pub timeout: Duration,
    /// Period of the thread-count samples in [`Trace::counts`].
    pub sample_every: Duration,
}

impl Default for NativeOptions {
    fn default() -> Self {
        NativeOptions {
            timeout: Duration::from_secs(600),
            sample_every: Duration::from_millis(10),
        }
    }
}

/// Why a native run did not produce a trace.
#[derive(Debug, thiserror::Error)]
pub enum NativeError {
    /// The scenario needs something the native pool does not model.
    #[error("the native pool cannot run this scenario: {0}")]
    Unsupported(String),
    /// The run passed its wall-clock limit.
    #[error("the native run passed its {0:?} limit")]
    TimedOut(Duration),
}

/// How long the run's threads get to leave after it ends before they are
/// left detached (they hold only shared, reference-counted state).
const JOIN_GRACE: Duration = Duration::from_secs(2);

/// Runs `scenario` on real threads under the policy `config`.
///
/// The trace is the simulator's: items indexed in submission order (over
/// all groups, as they are submitted), a record per pool or dedicated
/// thread with the reason the policy gave, probes, thread counts (a sample
/// every `opts.sample_every` and at every change), `end` at the last item's
/// finish. The run is bounded by `opts.timeout` (and by the scenario's
/// `until_ms`, if shorter): past it every thread is told to stop and the
/// call returns [`NativeError::TimedOut`].
pub fn run_native(
    scenario: &Scenario,
    config: &PolicyConfig,
    opts: &NativeOptions,
) -> Result<Trace, NativeError> {
    check_supported(scenario)?;
    let cpus = cpus_for(scenario.machine.cores)?;
    let limit = match scenario.until {
        Some(until) => opts.timeout.min(Duration::from_nanos(until.as_nanos())),
        None => opts.timeout,
    };
    let policy = crate::policy::build(config, scenario);
    let shared = Shared::new(
        scenario,
        config,
        policy,
        threads::BODIES,
        cpus,
        opts.sample_every,
    );
    {
        let mut g = shared.lock();
        g.start();
        g.pool.check_done();
    }

    let mut helpers: Vec<JoinHandle<()>> = Vec::new();
    let mut spawn_error = None;
    let mut spawn = |name: String, body: Box<dyn FnOnce(Arc<Shared>) + Send>| {
        let sh = Arc::clone(&shared);
        match std::thread::Builder::new()
            .name(name)
            .spawn(move || body(sh))
        {
            Ok(h) => helpers.push(h),
            Err(e) => spawn_error = Some(format!("could not start a thread: {e}")),
        }
    };
    spawn("poolsim-timer".into(), Box::new(threads::timer_main));
    spawn("poolsim-main".into(), Box::new(threads::main_thread));
    for p in 0..scenario.probes.len() as u32 {
        spawn(
            format!("poolsim-probe-{p}"),
            Box::new(move |sh| threads::probe_main(sh, p)),
        );
    }

    let deadline = shared.t0 + limit;
    let mut g = shared.lock();
    if let Some(e) = spawn_error {
        g.pool.failure.get_or_insert(e);
    }
    loop {
        if g.pool.done || g.pool.failure.is_some() {
            break;
        }
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        g = shared
            .signals
            .done
            .wait_timeout(g, deadline - now)
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .0;
    }
    let result = if let Some(failure) = g.pool.failure.take() {
        Err(NativeError::Unsupported(failure))
    } else if g.pool.done {
        Ok(g.pool.take_trace())
    } else {
        Err(NativeError::TimedOut(limit))
    };
    shared.stop_all(&mut g);
    let mut handles = std::mem::take(&mut g.pool.handles);
    drop(g);
    handles.extend(helpers);
    join_within(handles, JOIN_GRACE);
    result
}

/// Refuses what the native pool does not run.
fn check_supported(scenario: &Scenario) -> Result<(), NativeError> {
    if !sys::SUPPORTED {
        return Err(NativeError::Unsupported(
            "native runs need Linux (per-thread CPU clocks and CPU affinity)".into(),
        ));
    }
    if let Some(group) = scenario.groups.iter().find(|g| g.submit.one_call()) {
        return Err(NativeError::Unsupported(format!(
            "group \"{}\" uses `submit = \"{}\"`, a one-call TPL shape; the native pool runs \
             task-run, queue-user-work-item, when-all and new-thread only (simulate this one)",
            group.name,
            group.submit.name()
        )));
    }
    if let Some(group) = scenario
        .groups
        .iter()
        .find(|g| g.body.iter().any(|s| matches!(s, Step::FanOut { .. })))
    {
        return Err(NativeError::Unsupported(format!(
            "group \"{}\" has a `fan_out` step, which the native pool does not run yet \
             (simulate this one)",
            group.name
        )));
    }
    Ok(())
}

/// The CPUs to pin the run to: the first `cores` the process may use.
fn cpus_for(cores: u32) -> Result<Vec<usize>, NativeError> {
    let allowed = sys::allowed_cpus().map_err(|e| {
        NativeError::Unsupported(format!("cannot read the process's CPU affinity: {e}"))
    })?;
    let cores = cores as usize;
    if cores > allowed.len() {
        return Err(NativeError::Unsupported(format!(
            "the scenario's machine has {cores} cores but this host lets the process use {}; \
             a native run needs at least as many real CPUs (lower `machine.cores`)",
            allowed.len()
        )));
    }
    Ok(allowed[..cores].to_vec())
}

/// Joins every thread that ends within `grace`; the rest are left detached.
fn join_within(mut handles: Vec<JoinHandle<()>>, grace: Duration) {
    let until = Instant::now() + grace;
    loop {
        let mut pending = Vec::with_capacity(handles.len());
        for h in handles {
            if h.is_finished() {
                let _ = h.join();
            } else {
                pending.push(h);
            }
        }
        handles = pending;
        if handles.is_empty() || Instant::now() >= until {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use crate::policy_file::resolve_policy;
    use crate::scenario::load::parse_scenario;
    use crate::time::SimTime;
    use crate::trace::ThreadReason;

    fn run(text: &str, timeout_ms: u64) -> Result<Trace, NativeError> {
        let scenario = parse_scenario(text, "x.toml").expect("scenario");
        let config = resolve_policy(&scenario.pool.policy).expect("policy");
        let opts = NativeOptions {
            timeout: Duration::from_millis(timeout_ms),
            sample_every: Duration::from_millis(10),
        };
        run_native(&scenario, &config, &opts)
    }

    fn ms(t: SimTime) -> f64 {
        t.as_ms_f64()
    }

    /// Structure every completed trace has.
    fn check_trace(trace: &Trace, items: usize) {
        assert_eq!(trace.items.len(), items);
        for (i, item) in trace.items.iter().enumerate() {
            assert_eq!(item.item as usize, i);
            assert!(item.queued <= item.started, "{item:?}");
            assert!(item.started <= item.finished, "{item:?}");
            assert!(item.finished != SimTime::MAX, "{item:?}");
            assert!((item.thread as usize) < trace.threads.len(), "{item:?}");
        }
        assert_eq!(
            trace.end,
            trace.items.iter().map(|i| i.finished).max().unwrap()
        );
        for (i, t) in trace.threads.iter().enumerate() {
            assert_eq!(t.thread as usize, i);
            assert!(t.exited.is_none_or(|e| e >= t.created));
        }
        assert!(trace.counts.windows(2).all(|w| w[0].at <= w[1].at));
        assert!(trace.cpu_busy_ns.is_some());
    }

    #[test]
    fn classic_sleepers_wait_for_the_gate_thread() {
        // Goal 2 (min = cores): two items start at once; the third waits
        // for the gate thread's starvation rule (ticks at 100, 600, ... ms:
        // 600 ms since the last dequeue > 500 ms), the fourth for a thread.
        let trace = run(
            r#"
            [machine]
            cores = 2
            [pool]
            policy = "net-classic"
            gate_phase_ms = 100
            [[group]]
            count = 4
            body = [ { sleep_ms = 800 } ]
            "#,
            10_000,
        )
        .unwrap();
        check_trace(&trace, 4);
        assert_eq!(trace.policy, "net-classic");
        let started: Vec<f64> = trace.items.iter().map(|i| ms(i.started)).collect();
        assert!(started[0] < 200.0 && started[1] < 200.0, "{started:?}");
        assert!(started[2] >= 450.0 && started[2] < 1000.0, "{started:?}");
        assert!(started[3] >= 400.0, "{started:?}");
        let reasons: Vec<ThreadReason> = trace.threads.iter().map(|t| t.reason).collect();
        assert_eq!(reasons[..2], [ThreadReason::Demand, ThreadReason::Demand]);
        assert_eq!(
            reasons.get(2),
            Some(&ThreadReason::Starvation),
            "{reasons:?}"
        );
        let goals: Vec<Option<u32>> = trace.counts.iter().map(|c| c.goal).collect();
        assert!(
            goals.contains(&Some(2)) && goals.contains(&Some(3)),
            "{goals:?}"
        );
        assert!(trace.counts.iter().any(|c| c.threads == 3));
        assert!(ms(trace.end) >= 1400.0 && ms(trace.end) < 4000.0);
    }

    #[test]
    fn dedicated_threads_start_every_item_at_once() {
        let trace = run(
            r#"
            [machine]
            cores = 2
            [pool]
            policy = "dedicated-threads"
            [[group]]
            count = 6
            body = [ { sleep_ms = 300 } ]
            "#,
            10_000,
        )
        .unwrap();
        check_trace(&trace, 6);
        for item in &trace.items {
            assert!(ms(item.started) < 150.0, "{item:?}");
        }
        assert_eq!(trace.threads.len(), 6);
        for t in &trace.threads {
            assert_eq!(t.reason, ThreadReason::Dedicated);
            assert!(t.exited.is_some());
        }
        assert!(trace.counts.iter().any(|c| c.threads == 6));
    }

    #[test]
    fn portable_pool_injects_for_task_waits() {
        // Cooperative blocking: each Task.Wait raises the goal (at once up
        // to min + cores, then a thread per 25 ms step), far faster than
        // the gate thread's 500 ms; the timer callbacks need pool threads.
        let trace = run(
            r#"
            [machine]
            cores = 2
            [pool]
            policy = "net6"
            [[group]]
            count = 6
            body = [ { wait_ms = 400 } ]
            "#,
            10_000,
        )
        .unwrap();
        check_trace(&trace, 6);
        let last_start = trace
            .items
            .iter()
            .map(|i| ms(i.started))
            .fold(0.0, f64::max);
        assert!(last_start < 350.0, "{:?}", trace.items);
        assert!(
            trace
                .threads
                .iter()
                .any(|t| t.reason == ThreadReason::CooperativeBlocking),
            "{:?}",
            trace.threads
        );
        for item in &trace.items {
            let took = ms(item.finished) - ms(item.started);
            assert!(took >= 395.0, "{item:?}");
        }
    }

    #[test]
    fn throttles_of_limit_one_never_overlap() {
        let trace = run(
            r#"
            [machine]
            cores = 2
            [pool]
            policy = "net-classic"
            [[group]]
            name = "pair"
            count = 4
            body = [ { sleep_ms = 40 } ]
            throttle = { kind = "concurrent-exclusive", limit = 1 }
            [[group]]
            name = "semaphore"
            count = 4
            arrival = { after = "pair" }
            body = [ { sleep_ms = 20 }, "yield", { sleep_ms = 20 } ]
            throttle = { kind = "semaphore", limit = 1 }
            "#,
            10_000,
        )
        .unwrap();
        check_trace(&trace, 8);
        for g in 0..2 {
            let mut items: Vec<_> = trace.items.iter().filter(|i| i.group == g).collect();
            assert_eq!(items.len(), 4);
            items.sort_by_key(|i| i.started);
            for w in items.windows(2) {
                assert!(w[0].finished <= w[1].started, "group {g}: {items:?}");
            }
        }
        let pair_end = trace.items[..4].iter().map(|i| i.finished).max().unwrap();
        assert!(trace.items[4..].iter().all(|i| i.queued >= pair_end));
    }

    #[test]
    fn pool_origin_awaits_new_threads_and_probes() {
        let trace = run(
            r#"
            [machine]
            cores = 2
            [pool]
            policy = "net-classic"
            [[group]]
            name = "async"
            count = 4
            from = "pool"
            arrival = { every_ms = 20 }
            body = [ { cpu_ms = 5 }, { await_ms = 30 }, "yield", { spin_ms = 10 } ]
            [[group]]
            name = "threads"
            count = 2
            submit = "new-thread"
            arrival = { after = "async", delay_ms = 10 }
            body = [ { wait_ms = 20 } ]
            [[probe]]
            every_ms = 50
            "#,
            10_000,
        )
        .unwrap();
        check_trace(&trace, 6);
        assert_eq!(trace.groups, ["async", "threads"]);
        let groups: Vec<u32> = trace.items.iter().map(|i| i.group).collect();
        assert_eq!(groups, [0, 0, 0, 0, 1, 1]);
        for (k, item) in trace.items[..4].iter().enumerate() {
            // One every 20 ms from the submitter item, never early.
            assert!(
                ms(item.queued) >= 20.0 * k as f64 - 0.5,
                "{:?}",
                trace.items
            );
        }
        for item in &trace.items[..4] {
            assert!(ms(item.finished) - ms(item.started) >= 45.0, "{item:?}");
        }
        let async_end = trace.items[..4].iter().map(|i| i.finished).max().unwrap();
        for item in &trace.items[4..] {
            assert!(ms(item.queued) >= ms(async_end) + 9.0, "{item:?}");
            assert_eq!(
                trace.threads[item.thread as usize].reason,
                ThreadReason::Dedicated
            );
        }
        assert!(!trace.probes.is_empty());
        assert!(
            trace
                .probes
                .iter()
                .all(|p| p.started >= p.queued && p.started != SimTime::MAX)
        );
        assert!(
            trace.cpu_busy_ns.unwrap() >= 15_000_000,
            "{:?}",
            trace.cpu_busy_ns
        );
        assert!(trace.counts.len() >= 5);
    }

    #[test]
    fn a_timer_queues_its_bursts_from_pool_threads() {
        // 4 firings every 60 ms, 3 items each; enough threads that every
        // callback runs on time.
        let trace = run(
            r#"
            [machine]
            cores = 2
            [pool]
            policy = "net8"
            min_threads = 8
            [[group]]
            name = "ticks"
            count = 12
            submit = "queue-user-work-item"
            from = "timer"
            per_tick = 3
            arrival = { every_ms = 60 }
            body = [ { sleep_ms = 20 } ]
            "#,
            10_000,
        )
        .unwrap();
        check_trace(&trace, 12);
        for (k, burst) in trace.items.chunks(3).enumerate() {
            let due = 60.0 * k as f64;
            for item in burst {
                // Queued by the firing's callback: at its due time, a little
                // after (the timer thread's wake-up), never before.
                assert!(
                    (due - 0.5..=due + 25.0).contains(&ms(item.queued)),
                    "firing {k}: {:?}",
                    trace.items
                );
            }
            assert!(ms(burst[2].queued) - ms(burst[0].queued) < 5.0, "{burst:?}");
        }
    }

    #[test]
    fn one_call_shapes_are_unsupported() {
        let err = run(
            r#"
            [machine]
            cores = 2
            [pool]
            policy = "net-classic"
            [[group]]
            count = 10
            submit = "parallel-for"
            body = [ { cpu_ms = 1 } ]
            "#,
            1_000,
        )
        .unwrap_err();
        let NativeError::Unsupported(why) = err else {
            panic!("{err:?}")
        };
        assert!(why.contains("parallel-for"), "{why}");
    }

    #[test]
    fn more_cores_than_the_host_is_unsupported() {
        let host = sys::allowed_cpus().unwrap().len();
        let text = format!(
            "[machine]\ncores = {}\n[pool]\npolicy = \"net-classic\"\n[[group]]\ncount = 1\nbody = [ {{ sleep_ms = 1 }} ]\n",
            host + 1
        );
        let err = run(&text, 1_000).unwrap_err();
        assert!(
            matches!(&err, NativeError::Unsupported(why) if why.contains("cores")),
            "{err:?}"
        );
    }

    #[test]
    fn timeout_stops_every_thread() {
        let start = Instant::now();
        let err = run(
            r#"
            [machine]
            cores = 2
            [pool]
            policy = "net-classic"
            [[group]]
            count = 3
            body = [ { sleep_ms = 20000 } ]
            [[group]]
            count = 1
            body = [ { cpu_ms = 20000 } ]
            "#,
            200,
        )
        .unwrap_err();
        assert!(matches!(err, NativeError::TimedOut(d) if d == Duration::from_millis(200)));
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "{:?}",
            start.elapsed()
        );
    }
}
