//! poolsim: a deterministic discrete-event simulator of thread-pool scheduling policies.
//!
//! poolsim replays a workload scenario (TOML) against a model of a real
//! thread pool — the .NET Framework / .NET Core 3.x / .NET 5 native pool,
//! the .NET 6+ managed pool, Mono's, .NET 2.0's, or one you write — on a
//! virtual clock, and tells when each work item started and ended, how many
//! threads the pool made and why, and how responsive it stayed. Same
//! scenario and seed, same bytes out.
//!
//! This page is a tutorial: four runnable examples, each a little further
//! from the command line. `poolsim run`, `compare` and `validate` are built
//! from exactly these calls.
//!
//! # The pool in five words
//!
//! The names below are those of the runtimes' sources, and the models
//! follow them:
//!
//! - **Thread requests.** Queueing a work item asks the pool for a thread;
//!   a worker that dequeues an item asks for one more while work may remain.
//!   Whether a request gets a thread is the pool's first decision.
//! - **The goal.** The pool keeps a thread goal (`MaxWorking` in the native
//!   pool, `NumThreadsGoal` in the managed one), starting at the minimum
//!   (`SetMinThreads`, by default the number of cores). A request adds a
//!   worker only while fewer threads work than the goal — and a thread
//!   blocked inside a work item (`Thread.Sleep`, a wait) still counts as
//!   working.
//! - **The gate thread and starvation.** So who raises the goal when every
//!   thread is blocked? A gate thread (Mono: the monitor thread) ticks about
//!   every 500 ms; when requests are pending and no work item was dequeued
//!   for longer than the starvation delay, the pool is *starved*: the goal
//!   goes up by one and a thread is added. A burst of blocking calls
//!   therefore gets about one or two threads a second ([`policy::gate`]).
//! - **Hill climbing.** On completions, a controller superimposes a square
//!   wave on the goal, measures throughput, and moves the goal where
//!   throughput rises ([`policy::hill_climbing`]).
//! - **Cooperative blocking.** From .NET 6, a pool thread blocked in
//!   `Task.Wait()` or `.Result` is counted as blocked, and the goal moves
//!   toward min + blocked at once (past a cap, one thread per delay step)
//!   instead of waiting for starvation ([`policy::portable`]).
//!
//! The engine ([`engine`]) owns what every pool shares — queues, thread
//! states, thread requests, timers, cores — and asks a [`policy::Policy`]
//! only what differs: each trait method is one decision point of the real
//! pool. Built-in models are named by policy files (`policies/*.toml`,
//! `poolsim policies` lists them) holding their constants.
//!
//! # 1. Simulate a scenario and read its trace
//!
//! A scenario says what the program does: a machine, the pool's policy and
//! settings, and groups of work items whose bodies are steps (CPU work,
//! `Thread.Sleep`, `Task.Delay(d).Wait()`, `await`, parallel loops, ...).
//! [`scenario::load::parse_scenario`] validates it (errors name the line and
//! column), [`policy_file::resolve_policy`] finds the policy file it names,
//! and [`engine::simulate`] runs it. The returned [`trace::Trace`] records
//! every item's queued, started and finished times and every thread's
//! creation and the reason for it; a [`trace::EventLog`] sink also keeps
//! the detail events, among them each decision with the inputs its rule
//! read (a [`trace::NullSink`] keeps nothing and costs nothing).
//!
//! Six items that each sleep two seconds, on two cores, under the native
//! pool of .NET Core 3.x / .NET 5 (`net-classic`):
//!
//! ```
//! use poolsim::engine::{self, SimOptions};
//! use poolsim::metrics;
//! use poolsim::policy_file::resolve_policy;
//! use poolsim::scenario::load::parse_scenario;
//! use poolsim::trace::{Decision, EventLog, GateOutcome, ThreadReason, TraceEvent};
//!
//! // gate_phase_ms pins the gate thread's first tick 200 ms after the first
//! // thread request. In a real process the phase is set by start-up work the
//! // program does not control, and the model draws it from the seed.
//! let text = r#"
//!     name = "6 sleepers on 2 cores"
//!     [machine]
//!     cores = 2
//!     [pool]
//!     policy = "net-classic"
//!     gate_phase_ms = 200
//!     [[group]]
//!     name = "sleepers"
//!     count = 6
//!     body = [ { sleep_ms = 2000 } ]
//! "#;
//! let scenario = parse_scenario(text, "sleepers.toml").unwrap();
//! let config = resolve_policy(&scenario.pool.policy).unwrap();
//! let mut log = EventLog::default();
//! let run = engine::simulate(&scenario, &config, &mut log, &SimOptions::default());
//! assert!(run.outcome.is_completed());
//!
//! // Every thread, when it was created (ms) and why: the goal starts at the
//! // minimum, 2 (one per core), so two threads come on demand; then every
//! // thread sleeps, nothing is dequeued, and the gate thread's starvation
//! // rule adds one thread a second.
//! let threads: Vec<(f64, ThreadReason)> = run
//!     .trace
//!     .threads
//!     .iter()
//!     .map(|t| (t.created.as_ms_f64(), t.reason))
//!     .collect();
//! assert_eq!(
//!     threads,
//!     [
//!         (0.0, ThreadReason::Demand),
//!         (0.0, ThreadReason::Demand),
//!         (700.0, ThreadReason::Starvation),
//!         (1700.0, ThreadReason::Starvation),
//!         (2700.0, ThreadReason::Starvation),
//!     ]
//! );
//!
//! // The items, in submission order. Item 2 starts on the first thread the
//! // starvation rule added (after its start latency); items 4 and 5 do not
//! // wait for more threads: at 2 s the first two sleepers end and their
//! // threads take them. The third starvation thread comes too late to get
//! // any work.
//! let items = &run.trace.items;
//! assert!(items[0].started.as_ms_f64() < 1.0 && items[1].started.as_ms_f64() < 1.0);
//! assert_eq!(items[2].thread, 2);
//! assert!(items[2].started >= run.trace.threads[2].created);
//! assert!(items[2].started.as_ms_f64() < 701.0);
//! assert_eq!((items[4].thread, items[5].thread), (0, 1));
//! assert!(items[4].started.as_ms_f64() >= 2000.0);
//! assert!(items.iter().all(|i| i.thread != 4));
//!
//! // Why 700 ms: the tick at 200 ms found the last dequeue 200 ms old, the
//! // one at 700 ms found it older than the 500 ms starvation delay. Each
//! // new thread's dequeue restarts that clock, so only every second tick
//! // injects.
//! let ticks: Vec<(f64, GateOutcome)> = log
//!     .events
//!     .iter()
//!     .filter_map(|(at, e)| match e {
//!         TraceEvent::Decision(Decision::GateTick { outcome, .. }) => {
//!             Some((at.as_ms_f64(), *outcome))
//!         }
//!         _ => None,
//!     })
//!     .collect();
//! assert_eq!(
//!     ticks[..3],
//!     [
//!         (200.0, GateOutcome::NotStarved),
//!         (700.0, GateOutcome::Inject),
//!         (1200.0, GateOutcome::NotStarved),
//!     ]
//! );
//!
//! // The summary `poolsim run` prints under its table.
//! let summary = metrics::summarize(&run.trace);
//! assert_eq!(summary.threads_created_by_reason["starvation"], 3);
//! assert!((summary.makespan_ms - 4000.2).abs() < 0.01);
//! ```
//!
//! # 2. Write your own policy
//!
//! A model is a [`policy::Policy`]. It holds a [`policy::PolicyBase`] — its
//! name and thread limits, which the provided `name`, `min_threads` and
//! `max_threads` read through the one required accessor `base` — and
//! answers the pool's decision points, of which only two have no default:
//! [`thread_requested`](policy::Policy::thread_requested) (the work queue
//! asked for a thread: add one?) and
//! [`work_completed`](policy::Policy::work_completed) (a worker finished an
//! item: does it keep dispatching?). It acts through
//! [`policy::PoolControl`]: read the pool's counts, add a worker (an idle
//! one is released first), ask to be woken at a time, record a goal change.
//!
//! [`engine::simulate_with_policy`] runs a model you built. The policy
//! config passed beside it still gives the mechanics every pool shares
//! (thread start latency, idle timeout, queues, timers), so a model can be
//! compared with a built-in one on equal terms.
//!
//! Here, a pool with no goal at all: one thread for every item waiting for
//! one, up to a maximum. Against the classic pool on the six sleepers of
//! section 1:
//!
//! ```
//! use poolsim::engine::{self, SimOptions};
//! use poolsim::metrics;
//! use poolsim::policy_file::resolve_policy;
//! use poolsim::policy::{Policy, PolicyBase, PoolControl, RequestCause};
//! use poolsim::scenario::load::parse_scenario;
//! use poolsim::trace::{NullSink, ThreadId, ThreadReason};
//!
//! /// A thread for every queued item not yet taken, up to `max` working.
//! struct OnePerItem {
//!     base: PolicyBase,
//! }
//!
//! impl Policy for OnePerItem {
//!     fn base(&self) -> &PolicyBase {
//!         &self.base
//!     }
//!     fn thread_requested(&mut self, pool: &mut dyn PoolControl, _cause: RequestCause) {
//!         let counts = pool.counts();
//!         // Threads still starting will each take one of the queued items.
//!         if counts.queued > u64::from(counts.starting) && counts.working < self.base.max {
//!             pool.add_worker(ThreadReason::Demand);
//!         }
//!     }
//!     fn work_completed(&mut self, _pool: &mut dyn PoolControl, _thread: ThreadId) -> bool {
//!         true // never retire a worker; idle ones exit after the idle timeout
//!     }
//! }
//!
//! let scenario = parse_scenario(r#"
//!     name = "6 sleepers on 2 cores"
//!     [machine]
//!     cores = 2
//!     [pool]
//!     policy = "net-classic"
//!     gate_phase_ms = 200
//!     [[group]]
//!     name = "sleepers"
//!     count = 6
//!     body = [ { sleep_ms = 2000 } ]
//! "#, "sleepers.toml").unwrap();
//! let classic = resolve_policy("net-classic").unwrap();
//! let options = SimOptions::default();
//!
//! let run_mine = |max: u32| {
//!     let mine = OnePerItem {
//!         base: PolicyBase {
//!             name: format!("one-per-item-{max}"),
//!             min: 1,
//!             max,
//!         },
//!     };
//!     // The classic pool's mechanics, my decisions.
//!     engine::simulate_with_policy(&scenario, &classic, Box::new(mine), &mut NullSink, &options)
//! };
//! let builtin = engine::simulate(&scenario, &classic, &mut NullSink, &options);
//! let builtin = metrics::summarize(&builtin.trace);
//! let eager = run_mine(16);
//! assert_eq!(eager.trace.policy, "one-per-item-16");
//! let eager = metrics::summarize(&eager.trace);
//! let capped = metrics::summarize(&run_mine(4).trace);
//!
//! // Six threads at once, all on demand: every item starts within a
//! // millisecond and the burst takes one sleep, two seconds, where the
//! // classic pool, waiting for the starvation rule, takes four.
//! assert_eq!(eager.threads_created, 6);
//! assert_eq!(eager.threads_created_by_reason["demand"], 6);
//! assert!(eager.start_delay_ms.max < 1.0);
//! assert!(eager.makespan_ms < 2010.0);
//! assert!(builtin.makespan_ms > 1.9 * eager.makespan_ms);
//! // At four threads the last two items wait for a sleeper to finish.
//! assert_eq!(capped.threads_peak, 4);
//! assert!(capped.makespan_ms >= 4000.0);
//! ```
//!
//! # 3. Compare two policies
//!
//! `poolsim compare` puts one [`metrics::Summary`] per policy side by side,
//! and with `--runs N` a [`spread::Spread`] each: the same scenario under
//! `N` seeds. A real pool does not give the same outcome twice (whether a
//! gate tick lands just before or just after a completion decides whole
//! threads), and the models draw each such source from the seed, so a
//! spread is the distribution of outcomes a model predicts. Random
//! (Poisson) arrivals are drawn per run too, as traffic differs from run
//! to run ([`scenario::ArrivalDraws`]; `--fixed-arrivals` holds them).
//!
//! Sixteen `Task.Delay(1000).Wait()` on two cores, under .NET 5's pool
//! (`net5`, an alias of `net-classic`) and .NET 6's (`net6`). Under .NET 5
//! the blocked threads wait for the starvation rule — and for their timers'
//! callbacks, which fire as pool work queued behind the backlog; .NET 6
//! counts the waits as cooperative blocking and adds threads at once:
//!
//! ```
//! use poolsim::engine::{self, SimOptions};
//! use poolsim::metrics;
//! use poolsim::policy_file::resolve_policy;
//! use poolsim::scenario::ArrivalDraws;
//! use poolsim::scenario::load::parse_scenario;
//! use poolsim::spread::spread;
//! use poolsim::trace::NullSink;
//!
//! let scenario = parse_scenario(r#"
//!     name = "16 blocking waits on 2 cores"
//!     [machine]
//!     cores = 2
//!     [pool]
//!     policy = "net5"
//!     [[group]]
//!     name = "waiters"
//!     count = 16
//!     body = [ { wait_ms = 1000 } ]
//! "#, "waits.toml").unwrap();
//! let options = SimOptions::default();
//! let [net5, net6] = ["net5", "net6"].map(|name| {
//!     let config = resolve_policy(name).unwrap();
//!     let run = engine::simulate(&scenario, &config, &mut NullSink, &options);
//!     assert!(run.outcome.is_completed());
//!     (metrics::summarize(&run.trace), spread(&scenario, &config, 20, ArrivalDraws::PerRun, &options))
//! });
//! let ((net5, net5_spread), (net6, net6_spread)) = (net5, net6);
//! assert_eq!(net5.policy, "net-classic"); // the canonical name
//!
//! // Who added the threads.
//! assert!(net5.threads_created_by_reason["starvation"] >= 5);
//! assert!(!net5.threads_created_by_reason.contains_key("cooperative-blocking"));
//! assert!(net6.threads_created_by_reason["cooperative-blocking"] >= 10);
//!
//! // Over 20 seeds: .NET 5's makespan depends on where the gate ticks fall;
//! // .NET 6's does not, and its worst run beats .NET 5's best by far.
//! assert!(net5_spread.makespan_ms.max > net5_spread.makespan_ms.min);
//! assert_eq!(net6_spread.outcomes.len(), 1);
//! assert!(net6_spread.makespan_ms.max * 2.0 < net5_spread.makespan_ms.min);
//! assert!(net6.makespan_ms < 2500.0);
//! ```
//!
//! # 4. Check a model against a recorded run
//!
//! The models are checked against real runs. [`measure`] runs a scenario on
//! a real runtime (Mono, .NET Core 3.1, .NET 8, or poolsim's own pool on OS
//! threads) and reads its trace into the same [`trace::Trace`] a
//! simulation fills; the runs recorded for the scenarios of
//! `scenarios/validation/` are kept in `tests/fixtures/validation/`, so no
//! runtime is needed to compare. [`validate::validate`] matches items by
//! group and submission order and checks makespan, start and end offsets,
//! peak threads and the thread-count curve, each median over the
//! repetitions against a stated tolerance — what `poolsim validate` prints.
//!
//! Twelve `Thread.Sleep(1300)` on two cores, recorded three times on .NET
//! Core 3.1, against the model of that runtime's pool on Linux:
//!
//! ```
//! use std::path::Path;
//!
//! use poolsim::engine::{self, SimOptions};
//! use poolsim::measure::{self, Runtime};
//! use poolsim::policy_file::resolve_policy;
//! use poolsim::scenario::load::load_scenario;
//! use poolsim::trace::NullSink;
//! use poolsim::validate::{self, Tolerances};
//!
//! let root = Path::new(env!("CARGO_MANIFEST_DIR"));
//! let scenario = load_scenario(&root.join("scenarios/validation/sleep-burst.toml")).unwrap();
//! let runtime = Runtime::Coreclr3;
//! let fixtures = root.join("tests/fixtures/validation/sleep-burst");
//! let runs = measure::read_recorded(&fixtures, runtime, &scenario).unwrap();
//! assert_eq!(runs.len(), 3);
//! assert!(runs.iter().all(|m| m.complete && m.trace.items.len() == 12));
//!
//! // The model of this runtime (`coreclr3-linux`), run with the settings
//! // the recordings say they ran with (tiered compilation off).
//! let config = resolve_policy(runtime.policy().unwrap()).unwrap();
//! let as_run = measure::as_recorded(&scenario, &runs);
//! assert!(!as_run.pool.tiered_compilation);
//! let sim = engine::simulate(&as_run, &config, &mut NullSink, &SimOptions::default());
//!
//! let measured: Vec<_> = runs.into_iter().map(|m| m.trace).collect();
//! let tolerances = Tolerances::default();
//! let report = validate::validate(&sim.trace, &measured, runtime.name(), &tolerances);
//! assert!(report.pass, "{:#?}", report.checks);
//! // Closer than the tolerances ask: the makespan within 1 % (10 % allowed),
//! // and the same peak thread count as every real run.
//! let makespan = report.checks.iter().find(|c| c.metric == "makespan error").unwrap();
//! assert!(makespan.value.abs() < 1.0, "{} %", makespan.value);
//! assert!(report
//!     .repetitions
//!     .iter()
//!     .all(|r| r.peak_threads_sim == r.peak_threads_measured));
//! ```
//!
//! # Where things live
//!
//! - [`scenario`]: scenario files in, a validated [`scenario::Scenario`]
//!   out; [`diagnostics`] words their errors; [`generate`] draws random
//!   ones.
//! - [`policy`]: the [`policy::Policy`] trait and the models;
//!   [`policy_file`]: the policy files (`policies/*.toml`) that give them
//!   their constants; [`pool`]: the pool state both the simulator and the
//!   native pool drive.
//! - [`engine`]: the discrete-event simulator; [`time`]: virtual time;
//!   [`rng`]: the seeded random streams.
//! - [`trace`], [`metrics`], [`spread`], [`verdict`], [`explain`],
//!   [`counters`], [`coordination`]: what a run produced and what it means.
//! - [`render`], [`output`]: charts and files.
//! - [`measure`], [`nettrace`], [`account`], [`validate`], [`reproduce`]:
//!   real runs, the runtime's own account of its pool, and how far the
//!   models are from them.
//! - [`sweep`]: parameter sweeps ("what should I set?"); [`remedy`]: the
//!   smallest setting that meets a goal, the one search behind the verdict's
//!   fix, `sweep --best 'minimize KEY …'` and `advise`.

pub use poolsim_real::{
    account, advise, coordination, counters, diagnostics, engine, explain, files, generate,
    generate_apps, measure, metrics, nettrace, output, policy, policy_file, pool, remedy, render,
    replay_check, reproduce, rng, scenario, spread, stream, sweep, time, trace, validate, verdict,
};
