//! The items alive, and what the engine keeps of each.
//!
//! The items alive are a window from the oldest unfinished item to the
//! newest. Items end roughly in the order they were submitted, so with
//! spread arrivals the window stays small however many items the run has.
//! An item leaves the window, in submission order, once it and every item
//! before it ended; its [`ItemRecord`] is then made and goes to the trace
//! ([`TraceSink::KEEP_ITEMS`]) or to the sink ([`TraceSink::item`]), never
//! both, or is not made at all ([`TraceSink::ITEM_RECORDS`] false).
//!
//! What an item costs depends on how far it got. Submitted and not yet run,
//! an item is its queue time and its group ([`Item`], 16 B): its owner is
//! its group's (the owner the group's first item was submitted with), it is
//! at its first step and holds nothing. A backlog of millions queued at
//! once is that and the queue's [`Work`](super::Work) entry (8 B) an item.
//! Once an item runs, or needs more before (an owner of its own, its
//! group's semaphore), it gets a [`Run`] slot (40 B) for its step, owner,
//! thread, start and end; the slot is reused once the item leaves the
//! window.
//!
//! [`TraceSink::KEEP_ITEMS`]: crate::trace::TraceSink::KEEP_ITEMS
//! [`TraceSink::item`]: crate::trace::TraceSink::item
//! [`TraceSink::ITEM_RECORDS`]: crate::trace::TraceSink::ITEM_RECORDS

use super::Owner;
use crate::time::SimTime;
use crate::trace::{ItemId, ItemRecord, ThreadId};

/// An item in the window: all a queued item needs.
#[derive(Clone, Copy, Debug)]
pub(super) struct Item {
    queued: SimTime,
    group: u32,
    /// Its slot in [`ItemStates::runs`], or [`Item::NO_RUN`].
    run: u32,
}

impl Item {
    /// No [`Run`] slot yet: the item has not run.
    const NO_RUN: u32 = u32::MAX;
}

/// The state of an item that runs (or ran, or is about to).
#[derive(Clone, Copy, Debug)]
pub(super) struct Run {
    pub owner: Owner,
    /// The body step it is at.
    pub step: u32,
    /// The thread its first segment ran on ([`ThreadId::MAX`] before).
    pub thread: ThreadId,
    /// When it started ([`SimTime::MAX`] before).
    pub started: SimTime,
    /// When it ended ([`SimTime::MAX`] before).
    pub finished: SimTime,
    /// Whether it holds its group's semaphore.
    pub acquired: bool,
}

/// The engine's state of one item, as read ([`ItemStates::get`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct ItemState {
    pub owner: Owner,
    /// The body step it is at.
    pub step: u32,
    pub group: u32,
    /// Whether it holds its group's semaphore.
    pub acquired: bool,
    pub started: bool,
}

/// The items alive (see the module head).
#[derive(Debug)]
pub(super) struct ItemStates {
    /// The id of `states[start]`, the oldest item alive.
    base: ItemId,
    /// The items alive from `start` on; those before it left and are
    /// dropped in one go once they are half the vector (a plain index
    /// costs less than a ring buffer's, and items are read often).
    states: Vec<Item>,
    start: usize,
    /// The owner of each group's items without a slot: the owner its
    /// first item was submitted with (`None`: no item yet).
    owners: Vec<Option<Owner>>,
    /// The slots of the items that run; those in `free` are unused.
    runs: Vec<Run>,
    free: Vec<u32>,
    /// Whether the records are kept when their items leave (for the trace).
    keep: bool,
    /// Whether there are records at all (a sink may want none:
    /// [`TraceSink::ITEM_RECORDS`](crate::trace::TraceSink::ITEM_RECORDS)).
    recorded: bool,
    /// The records of the items that left, with `keep`, in submission order.
    kept: Vec<ItemRecord>,
}

impl ItemStates {
    /// The fewest ended items that are dropped from the vector at once.
    pub const DROP_AT: usize = 4096;

    /// No items yet; with `keep`, room for `reserve` records.
    pub fn new(keep: bool, reserve: usize) -> Self {
        ItemStates {
            base: 0,
            states: Vec::new(),
            start: 0,
            owners: Vec::new(),
            runs: Vec::new(),
            free: Vec::new(),
            keep,
            recorded: true,
            kept: Vec::with_capacity(if keep { reserve } else { 0 }),
        }
    }

    /// No records at all: only the engine's part of each item, alive.
    pub fn unrecorded() -> Self {
        ItemStates {
            recorded: false,
            ..ItemStates::new(false, 0)
        }
    }

    /// How many items are alive.
    pub fn len(&self) -> usize {
        self.states.len() - self.start
    }

    /// The id the next item gets.
    pub fn next_id(&self) -> ItemId {
        self.base + self.len() as ItemId
    }

    /// A new item of `group`, owned by `owner`, queued at `queued`.
    pub fn push(&mut self, group: u32, owner: Owner, queued: SimTime) -> ItemId {
        let item = self.next_id();
        let g = group as usize;
        if self.owners.len() <= g {
            self.owners.resize(g + 1, None);
        }
        let group_owner = *self.owners[g].get_or_insert(owner);
        self.states.push(Item {
            queued,
            group,
            run: Item::NO_RUN,
        });
        if owner != group_owner {
            self.run_mut(item).owner = owner;
        }
        item
    }

    #[inline]
    fn index(&self, item: ItemId) -> usize {
        self.start + (item - self.base) as usize
    }

    /// The owner of `group`'s items without a slot.
    #[inline]
    fn group_owner(&self, group: u32) -> Owner {
        self.owners[group as usize].unwrap_or(Owner::Task)
    }

    /// The state of `item`, alive.
    #[inline]
    pub fn get(&self, item: ItemId) -> ItemState {
        let Item { group, run, .. } = self.states[self.index(item)];
        if run == Item::NO_RUN {
            return ItemState {
                owner: self.group_owner(group),
                step: 0,
                group,
                acquired: false,
                started: false,
            };
        }
        let r = &self.runs[run as usize];
        ItemState {
            owner: r.owner,
            step: r.step,
            group,
            acquired: r.acquired,
            started: r.started != SimTime::MAX,
        }
    }

    /// The group of `item`, alive.
    #[inline]
    pub fn group(&self, item: ItemId) -> u32 {
        self.states[self.index(item)].group
    }

    /// The run state of `item`, alive, given a slot if it has none.
    #[inline]
    pub fn run_mut(&mut self, item: ItemId) -> &mut Run {
        let i = self.index(item);
        let mut slot = self.states[i].run;
        if slot == Item::NO_RUN {
            slot = self.new_run(i);
        }
        &mut self.runs[slot as usize]
    }

    /// A slot for `states[i]`, which has none.
    #[cold]
    #[inline(never)]
    fn new_run(&mut self, i: usize) -> u32 {
        let run = Run {
            owner: self.group_owner(self.states[i].group),
            step: 0,
            thread: ThreadId::MAX,
            started: SimTime::MAX,
            finished: SimTime::MAX,
            acquired: false,
        };
        let slot = match self.free.pop() {
            Some(slot) => {
                self.runs[slot as usize] = run;
                slot
            }
            None => {
                self.runs.push(run);
                (self.runs.len() - 1) as u32
            }
        };
        self.states[i].run = slot;
        slot
    }

    /// `item` started at `at` on `thread`.
    pub fn start(&mut self, item: ItemId, thread: ThreadId, at: SimTime) {
        let run = self.run_mut(item);
        run.started = at;
        run.thread = thread;
    }

    /// `item` ended at `at`: marked, to leave the window with [`ItemStates::pop_ended`].
    pub fn finish(&mut self, item: ItemId, at: SimTime) {
        self.run_mut(item).finished = at;
    }

    /// Whether the oldest item ended (or, with `all`, whether there is
    /// one: the run is over); if so it leaves the window, with its record
    /// unless the records are kept (or there are none).
    pub fn pop_ended(&mut self, all: bool) -> Option<Option<ItemRecord>> {
        let front = *self.states.get(self.start)?;
        let run = (front.run != Item::NO_RUN).then(|| self.runs[front.run as usize]);
        if !(all || run.is_some_and(|r| r.finished != SimTime::MAX)) {
            return None;
        }
        let item = self.base;
        self.start += 1;
        self.base += 1;
        if run.is_some() {
            self.free.push(front.run);
        }
        if self.start >= ItemStates::DROP_AT && self.start * 2 >= self.states.len() {
            self.states.drain(..self.start);
            self.start = 0;
        }
        if !self.recorded {
            return Some(None);
        }
        let record = ItemRecord {
            item,
            group: front.group,
            thread: run.map_or(ThreadId::MAX, |r| r.thread),
            queued: front.queued,
            started: run.map_or(SimTime::MAX, |r| r.started),
            finished: run.map_or(SimTime::MAX, |r| r.finished),
        };
        if self.keep {
            self.kept.push(record);
            return Some(None);
        }
        Some(Some(record))
    }

    /// Every record kept, in submission order (with `keep`; else none).
    pub fn into_records(self) -> Vec<ItemRecord> {
        self.kept
    }
}

#[cfg(test)]
mod tests {
    use super::{Item, ItemStates, Owner, Run};
    use crate::engine::Work;
    use crate::time::SimTime;

    #[test]
    fn a_queued_item_takes_at_most_32_bytes() {
        // A backlog queued at once is an `Item` in the window and a `Work`
        // in a queue per item, nothing else (a `Run` slot comes when the
        // item runs): its memory is this an item. Growing either past the
        // bound brings back the gigabytes of a 100 M-item backlog.
        let queued = std::mem::size_of::<Item>() + std::mem::size_of::<Work>();
        assert!(queued <= 32, "{queued} B a queued item");
        assert_eq!(std::mem::size_of::<Item>(), 16);
        assert_eq!(std::mem::size_of::<Run>(), 40);
    }

    #[test]
    fn a_queued_item_has_no_run_slot_until_it_needs_one() {
        let mut items = ItemStates::new(false, 0);
        let at = |ms| SimTime::ZERO + crate::time::SimDuration::from_ms(ms);
        for k in 0..3 {
            items.push(0, Owner::Pair(1), at(k));
        }
        // The group's owner is its first item's: no slot for any of them.
        assert!(items.runs.is_empty());
        assert_eq!(items.get(2).owner, Owner::Pair(1));
        // An owner of its own needs a slot.
        items.push(0, Owner::Task, at(3));
        assert_eq!(items.runs.len(), 1);
        assert_eq!(items.get(3).owner, Owner::Task);
        items.start(0, 5, at(4));
        assert_eq!(items.runs.len(), 2);
        let zero = items.get(0);
        assert!(zero.started);
        assert_eq!(zero.owner, Owner::Pair(1));
        items.finish(0, at(6));
        let record = items.pop_ended(false).flatten().expect("item 0 ended");
        assert_eq!(
            (
                record.thread,
                record.queued,
                record.started,
                record.finished
            ),
            (5, at(0), at(4), at(6))
        );
        // Its slot is free again, and taken by the next item that runs.
        assert_eq!(items.free, [1]);
        items.start(1, 2, at(7));
        assert!(items.free.is_empty());
        assert_eq!(items.runs.len(), 2);
        assert_eq!(items.get(1).owner, Owner::Pair(1));
    }

    #[test]
    fn item_states_keep_their_ids_when_the_ended_ones_are_dropped() {
        // Enough items that the ended ones are dropped from the vector
        // several times while others are pushed and read.
        let mut items = ItemStates::new(false, 0);
        let mut next_end = 0;
        for k in 0..20_000u32 {
            assert_eq!(items.push(k % 3, Owner::Task, SimTime::ZERO), k);
            items.run_mut(k).step = k;
            if k % 2 == 1 {
                // Two pushed, one ends: the window grows by one an item pair.
                items.finish(next_end, SimTime::ZERO);
                assert!(items.pop_ended(false).is_some());
                next_end += 1;
            }
            let oldest = items.base;
            assert_eq!(oldest, next_end);
            assert_eq!(items.get(oldest).step, oldest);
            assert_eq!(items.get(k).group, k % 3);
        }
        assert_eq!(items.len(), 10_000);
        // 20 000 pushed; the first DROP_AT ended were dropped once they
        // were half the vector.
        assert_eq!(items.states.len(), 20_000 - ItemStates::DROP_AT);
    }

    #[test]
    fn item_states_let_the_ended_items_go_from_the_oldest_on() {
        let mut items = ItemStates::new(false, 0);
        let at = |ms| SimTime::ZERO + crate::time::SimDuration::from_ms(ms);
        for k in 0..4 {
            assert_eq!(items.push(k % 2, Owner::Task, at(k as u64)), k);
        }
        items.run_mut(2).step = 7;
        items.finish(1, at(9));
        // 0 has not ended: nothing leaves.
        assert_eq!(items.pop_ended(false), None);
        assert_eq!((items.base, items.len()), (0, 4));
        items.finish(0, at(8));
        // 0 and 1 ended: they leave in order; 2 is the oldest alive.
        assert_eq!(items.pop_ended(false).flatten().map(|r| r.item), Some(0));
        let one = items.pop_ended(false).flatten().expect("item 1 ended");
        assert_eq!(
            (one.item, one.group, one.queued, one.finished),
            (1, 1, at(1), at(9))
        );
        assert_eq!(items.pop_ended(false), None);
        assert_eq!((items.base, items.len()), (2, 2));
        assert_eq!(items.get(2).step, 7);
        assert_eq!(items.push(0, Owner::Parent, at(5)), 4);
        assert_eq!(items.get(4).owner, Owner::Parent);
        // At the end of a run every item leaves, ended or not.
        let rest: Vec<_> = std::iter::from_fn(|| items.pop_ended(true).flatten()).collect();
        assert_eq!(rest.iter().map(|r| r.item).collect::<Vec<_>>(), [2, 3, 4]);
        assert_eq!(rest[0].finished, SimTime::MAX);
        assert!(items.into_records().is_empty());
    }

    #[test]
    fn kept_item_records_stay_when_their_items_leave() {
        let mut items = ItemStates::new(true, 4);
        let at = |ms| SimTime::ZERO + crate::time::SimDuration::from_ms(ms);
        for k in 0..3 {
            items.push(0, Owner::Task, at(k as u64));
        }
        items.run_mut(0).started = at(1);
        items.finish(0, at(2));
        assert_eq!(items.pop_ended(false), Some(None));
        assert_eq!(items.pop_ended(false), None);
        // Item 0 left the window; its record is still there for the trace.
        assert_eq!(items.kept[0].finished, at(2));
        items.finish(2, at(3));
        while items.pop_ended(true).is_some() {}
        let records = items.into_records();
        assert_eq!(
            records.iter().map(|r| r.item).collect::<Vec<_>>(),
            [0, 1, 2]
        );
        assert_eq!(
            records.iter().map(|r| r.finished).collect::<Vec<_>>(),
            [at(2), SimTime::MAX, at(3)]
        );
        assert_eq!(records[0].started, at(1));
    }
}
