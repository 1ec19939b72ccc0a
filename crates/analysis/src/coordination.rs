//! Coordination overhead of the submitting APIs: what it costs the caller,
//! in time and allocated bytes, to start and await a batch of work.
//!
//! A per-submitter cost model, `fixed + per_item × count`, fitted once to
//! seed 002's BenchmarkDotNet table (docs/reference.md#seed-002):
//! - `Task.WhenAll` over already-started tasks: 31.0 ns + 13.38 ns per task;
//!   104 B + 8 B per task (the array of tasks and the promise);
//! - `Parallel.ForEachAsync`-style scheduling with unlimited parallelism:
//!   180.5 ns + 124.56 ns per item; 392 B whatever the count (one state
//!   object and its workers, reused).
//!
//! The time constants minimise the largest relative error over the five
//! published counts (2, 5, 10, 25, 300); the byte constants are exact.

use crate::scenario::Submit;

/// Cost of one call over `count` items.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cost {
    pub fixed_ns: f64,
    pub per_item_ns: f64,
    pub fixed_bytes: f64,
    pub per_item_bytes: f64,
}

impl Cost {
    pub fn time_ns(&self, count: u64) -> f64 {
        self.fixed_ns + self.per_item_ns * count as f64
    }
    pub fn bytes(&self, count: u64) -> f64 {
        self.fixed_bytes + self.per_item_bytes * count as f64
    }
}

/// `Task.WhenAll` over tasks that are already running.
pub const WHEN_ALL: Cost = Cost {
    fixed_ns: 31.0,
    per_item_ns: 13.38,
    fixed_bytes: 104.0,
    per_item_bytes: 8.0,
};

/// `Parallel.ForEachAsync` with unlimited degree of parallelism.
pub const PARALLEL_FOREACH_ASYNC: Cost = Cost {
    fixed_ns: 180.5,
    per_item_ns: 124.56,
    fixed_bytes: 392.0,
    per_item_bytes: 0.0,
};

/// The coordination cost model of a submission shape, where one is known.
pub fn cost(submit: Submit) -> Option<Cost> {
    match submit {
        Submit::WhenAll => Some(WHEN_ALL),
        Submit::ParallelForEachAsync => Some(PARALLEL_FOREACH_ASYNC),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_follow_the_published_allocations_exactly() {
        for (n, b) in [
            (2, 120.0),
            (5, 144.0),
            (10, 184.0),
            (25, 304.0),
            (300, 2504.0),
        ] {
            assert_eq!(WHEN_ALL.bytes(n), b);
            assert_eq!(PARALLEL_FOREACH_ASYNC.bytes(n), 392.0);
        }
    }
}
