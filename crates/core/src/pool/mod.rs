//! The layer under both pools: what the simulator ([`crate::engine`]) and
//! the native pool (`crate::measure::native`) share, written once so the
//! two cannot drift apart.
//!
//! - `state`: the pool mechanics (queues and dequeue order, thread
//!   requests, the worker loop's decisions, timer queues, throttles, thread
//!   counts), as plain data with methods that take the instant.
//! - The vocabulary both pools speak: what kind of thread runs work
//!   ([`ThreadKind`]), what an expired timer does ([`TimerAction`]), and
//!   which throttle a group runs under ([`group_throttle`], also what the
//!   measure plan gives the real runtimes).
//!
//! Above it sit the two pools; below it the policies (which it asks, never
//! the other way round), the scenario and the seeded streams
//! ([`crate::rng`]).

pub mod state;

use crate::policy::PolicyConfig;
use crate::scenario::{Scenario, Throttle};
use crate::trace::ThreadId;

/// What a thread of a run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThreadKind {
    /// A pool worker.
    Pool,
    /// A thread of its own for one work item (`TaskCreationOptions.LongRunning`,
    /// the dedicated model).
    Dedicated,
    /// The program's main thread (the simulator models it; the native pool's
    /// main thread is the process's own and has no slot).
    Main,
}

/// What a timer does when it expires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimerAction {
    /// Release a thread blocked in `Task.Delay(d).Wait()`.
    ReleaseWaiter(ThreadId),
    /// Queue the continuation after `await Task.Delay(d)`: the simulator's
    /// continuation record, or the item that the native pool resumes.
    Resume(u32),
    /// The callback of a program's periodic timer (`new Timer(callback,
    /// null, 0, period)`, a group with `from = "timer"`): it queues the
    /// group's next `per_tick` items from the pool thread it runs on.
    Tick(u32),
}

/// The throttle group `g` runs under: its own `throttle`, else a wrapping
/// policy's `[throttle]` for the shapes a throttle goes on
/// ([`Submit::takes_throttle`](crate::scenario::Submit::takes_throttle)).
/// The simulator, the native pool and the measure plan (what the real
/// runtimes run) all resolve it here.
pub fn group_throttle(
    scenario: &Scenario,
    g: usize,
    policy: Option<&PolicyConfig>,
) -> Option<Throttle> {
    let group = &scenario.groups[g];
    group.throttle.or_else(|| {
        let t = policy?.throttle.as_ref()?;
        group.submit.takes_throttle().then(|| Throttle {
            kind: t.kind,
            limit: t.limit.resolve(scenario.machine.processors()).max(1),
        })
    })
}
