//! A thread per work item: `new Thread(...).Start()` for everything, the
//! comparison seed 004 makes against the .NET 2.0 pool.
//!
//! Every submitted item runs on a new thread that exits when the item ends
//! (the engine does this when [`Policy::dedicated_threads`] is true); the
//! start cost is the policy's `threads.start_ms` (seed 004 measured 3–25
//! ms, 97 ms at worst under load). Pool-internal work — timer callbacks,
//! `await` continuations — still needs threads: each request gets one at
//! once (an idle one, or a new one), and idle threads exit after
//! `idle_timeout`.

use crate::policy::config::PolicyConfig;
use crate::policy::{Policy, PolicyBase, PoolControl, RequestCause};
use crate::scenario::Scenario;
use crate::trace::{ThreadId, ThreadReason};

#[derive(Debug)]
pub struct Dedicated {
    base: PolicyBase,
}

impl Dedicated {
    pub fn new(config: &PolicyConfig, scenario: &Scenario) -> Dedicated {
        Dedicated {
            base: PolicyBase::new(config, scenario),
        }
    }
}

impl Policy for Dedicated {
    fn base(&self) -> &PolicyBase {
        &self.base
    }
    fn dedicated_threads(&self) -> bool {
        true
    }
    fn thread_requested(&mut self, pool: &mut dyn PoolControl, _cause: RequestCause) {
        let counts = pool.counts();
        if counts.pending_requests > counts.starting {
            pool.add_worker(ThreadReason::Dedicated);
        }
    }
    fn work_completed(&mut self, _pool: &mut dyn PoolControl, _thread: ThreadId) -> bool {
        true
    }
}

impl crate::policy::Model for Dedicated {
    fn new(config: &PolicyConfig, scenario: &Scenario) -> Dedicated {
        Dedicated::new(config, scenario)
    }
}
