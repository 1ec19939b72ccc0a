//! Idle threads' timeouts, kept outside the event heap so that none can go
//! stale.
//!
//! A pool thread that finds no work waits for some with a timeout (the
//! policy file's `idle_timeout_ms`), and a retired thread waits to be
//! brought back the same way. Every idle period is one such wait, and most
//! end early, with work. Scheduled as events,
//! those waits would sit in the queue long after they stopped meaning
//! anything (tens of thousands at two arrivals a millisecond). Here each
//! thread has at most one deadline, removed the moment its wait ends
//! (woken, brought back from retirement, exited), so every deadline that
//! falls due is a real timeout.
//!
//! Every deadline is the same time after its wait began (one timeout per
//! run), so the threads in the order they began waiting are in deadline
//! order: an intrusive doubly linked list over the threads, O(1) to add at
//! the tail, remove anywhere and read the head.

use crate::trace::ThreadId;

use super::EventKey;

const NONE: u32 = u32::MAX;

/// One thread's deadline and its links.
#[derive(Clone, Copy, Debug)]
struct Node {
    key: Option<(EventKey, u64)>,
    prev: u32,
    next: u32,
}

/// The armed deadlines, in order (see the module head).
#[derive(Clone, Debug)]
pub(super) struct IdleDeadlines {
    nodes: Vec<Node>,
    head: u32,
    tail: u32,
}

impl Default for IdleDeadlines {
    fn default() -> Self {
        IdleDeadlines {
            nodes: Vec::new(),
            head: NONE,
            tail: NONE,
        }
    }
}

impl IdleDeadlines {
    /// `thread` waits until `key` (its event key), in its state of
    /// `generation`; a deadline it had is replaced. `key` must not be
    /// earlier than the last deadline armed.
    pub fn arm(&mut self, thread: ThreadId, key: EventKey, generation: u64) {
        self.disarm(thread);
        let i = thread as usize;
        if self.nodes.len() <= i {
            self.nodes.resize(
                i + 1,
                Node {
                    key: None,
                    prev: NONE,
                    next: NONE,
                },
            );
        }
        debug_assert!(
            self.tail == NONE
                || self.nodes[self.tail as usize]
                    .key
                    .is_some_and(|(k, _)| k <= key)
        );
        self.nodes[i] = Node {
            key: Some((key, generation)),
            prev: self.tail,
            next: NONE,
        };
        match self.tail {
            NONE => self.head = thread,
            t => self.nodes[t as usize].next = thread,
        }
        self.tail = thread;
    }

    /// `thread`'s wait ended before its deadline (or it has none).
    pub fn disarm(&mut self, thread: ThreadId) {
        let Some(node) = self.nodes.get_mut(thread as usize) else {
            return;
        };
        if node.key.take().is_none() {
            return;
        }
        let (prev, next) = (node.prev, node.next);
        match prev {
            NONE => self.head = next,
            p => self.nodes[p as usize].next = next,
        }
        match next {
            NONE => self.tail = prev,
            n => self.nodes[n as usize].prev = prev,
        }
    }

    /// The earliest deadline: its key, thread and generation.
    pub fn first(&self) -> Option<(EventKey, ThreadId, u64)> {
        if self.head == NONE {
            return None;
        }
        let (key, generation) = self.nodes[self.head as usize].key?;
        Some((key, self.head, generation))
    }

    /// Removes the earliest deadline and returns it.
    pub fn pop(&mut self) -> Option<(EventKey, ThreadId, u64)> {
        let first = self.first()?;
        self.disarm(first.1);
        Some(first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::SimTime;

    fn key(at: u64, seq: u64) -> EventKey {
        EventKey {
            at: SimTime(at),
            seq,
        }
    }

    #[test]
    fn deadlines_come_out_in_order_and_a_disarmed_one_never_does() {
        let mut d = IdleDeadlines::default();
        d.arm(3, key(10, 1), 7);
        d.arm(0, key(10, 2), 1);
        d.arm(5, key(12, 3), 2);
        d.arm(1, key(15, 4), 4);
        // Thread 0 is woken; thread 3 goes idle again later.
        d.disarm(0);
        d.arm(3, key(20, 5), 8);
        d.disarm(9); // never armed: nothing
        let order: Vec<_> = std::iter::from_fn(|| d.pop()).collect();
        assert_eq!(
            order,
            vec![(key(12, 3), 5, 2), (key(15, 4), 1, 4), (key(20, 5), 3, 8)]
        );
        assert_eq!(d.first(), None);
        // Usable again once empty.
        d.arm(2, key(30, 6), 1);
        assert_eq!(d.pop(), Some((key(30, 6), 2, 1)));
    }
}
