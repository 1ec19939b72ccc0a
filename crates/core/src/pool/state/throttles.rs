//! The throttles of the groups: `ConcurrentExclusiveSchedulerPair`s
//! ([`Pair`]) and `SemaphoreSlim`s ([`Semaphore`]), one per group that
//! runs under one ([`Throttles`]).

use std::collections::VecDeque;

use crate::policy::PolicyConfig;
use crate::policy::config::ThrottleKind;
use crate::scenario::{Scenario, Throttle};

/// A `ConcurrentExclusiveSchedulerPair(n)`: tasks wait in the pair's queue;
/// at most `n` processing items are in the pool, each running the pair's
/// tasks in order until the queue is empty.
#[derive(Debug)]
pub struct Pair<W> {
    limit: u32,
    active: u32,
    queue: VecDeque<W>,
}

impl<W> Pair<W> {
    fn new(limit: u32) -> Self {
        Pair {
            limit: limit.max(1),
            active: 0,
            queue: VecDeque::new(),
        }
    }

    /// A task (or continuation) enters the queue. True when a processing
    /// item must be queued to the pool (fewer than the limit are active).
    pub fn push(&mut self, work: W) -> bool {
        self.queue.push_back(work);
        if self.active < self.limit {
            self.active += 1;
            true
        } else {
            false
        }
    }

    /// The next task for a processing item.
    pub fn pop(&mut self) -> Option<W> {
        self.queue.pop_front()
    }

    /// A processing item found the queue empty and ends.
    pub fn processor_done(&mut self) {
        self.active -= 1;
    }

    /// The pair's `maxConcurrencyLevel`.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// Tasks waiting in the pair's queue.
    pub fn waiting(&self) -> usize {
        self.queue.len()
    }
}

/// A `SemaphoreSlim(n)` awaited with `WaitAsync()` around a body: granted
/// at once while the count is positive, else the waiter `T` queues; a
/// release hands the count to the first waiter.
#[derive(Debug)]
pub struct Semaphore<T> {
    count: u32,
    limit: u32,
    waiters: VecDeque<T>,
}

impl<T> Semaphore<T> {
    fn new(limit: u32) -> Self {
        Semaphore {
            count: limit,
            limit,
            waiters: VecDeque::new(),
        }
    }

    /// The initial count.
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// Waiters not yet granted the semaphore.
    pub fn waiting(&self) -> usize {
        self.waiters.len()
    }

    /// Takes the count if it is positive.
    pub fn try_acquire(&mut self) -> bool {
        if self.count > 0 {
            self.count -= 1;
            true
        } else {
            false
        }
    }

    /// Queues a waiter for a later release.
    pub fn wait(&mut self, waiter: T) {
        self.waiters.push_back(waiter);
    }

    /// `Release()`: the first waiter, which now holds the semaphore, or
    /// (none waiting) the count goes back up.
    pub fn release(&mut self) -> Option<T> {
        let waiter = self.waiters.pop_front();
        if waiter.is_none() {
            self.count += 1;
        }
        waiter
    }
}

/// The throttles of a run, one per group that has one
/// ([`group_throttle`](crate::pool::group_throttle)).
pub struct Throttles<W, T> {
    pub pairs: Vec<Pair<W>>,
    pub semaphores: Vec<Semaphore<T>>,
    /// Per group: the pair and the semaphore its tasks go through.
    pub of_group: Vec<(Option<u32>, Option<u32>)>,
}

impl<W, T> Throttles<W, T> {
    pub fn new(scenario: &Scenario, config: &PolicyConfig) -> Self {
        let mut throttles = Throttles {
            pairs: Vec::new(),
            semaphores: Vec::new(),
            of_group: Vec::with_capacity(scenario.groups.len()),
        };
        for g in 0..scenario.groups.len() {
            let throttle = crate::pool::group_throttle(scenario, g, Some(config));
            let (mut pair, mut semaphore) = (None, None);
            match throttle {
                Some(Throttle {
                    kind: ThrottleKind::ConcurrentExclusive,
                    limit,
                }) => {
                    pair = Some(throttles.pairs.len() as u32);
                    throttles.pairs.push(Pair::new(limit));
                }
                Some(Throttle {
                    kind: ThrottleKind::Semaphore,
                    limit,
                }) => {
                    semaphore = Some(throttles.semaphores.len() as u32);
                    throttles.semaphores.push(Semaphore::new(limit));
                }
                None => {}
            }
            throttles.of_group.push((pair, semaphore));
        }
        throttles
    }
}
