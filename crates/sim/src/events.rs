//! The event queue: small typed events, ordered by time and, for equal times, by
//! insertion order (DESIGN.md principle 3: deterministic tie-breaking), in a sorted
//! vector while they are few and a binary heap while they are many (`Pending`).
//!
//! Endpoint timers are re-armed far more often than they fire (a delayed-ACK timer at every
//! data packet, a retransmission timer at every ACK), so they are not pushed at every
//! change. Each is a *slot* that holds its deadline and the sequence number it was given
//! when it was set, as a push would have; only the earliest entry a slot needs is in the
//! queue, and when that entry falls due with the deadline moved later it is pushed again
//! under the deadline's sequence number. A timer therefore fires in the order of its
//! deadline and, among events due at the same instant, of the moment its deadline was set,
//! at a fraction of the entries (a tenth fewer events on `bench-l4s-wired`, and a heap
//! that no longer grows with the packet rate times the delayed-ACK and retransmission
//! timeouts).

use l4s_core::Time;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ev {
    /// A wake-up a link asked for: link index, the link's own timer number.
    Link(u32, l4s_link::Timer),
    /// An endpoint's timer: flow index, side (0 = sender, 1 = receiver).
    Endpoint(u32, u8),
    FlowStart(u32),
    FlowStop(u32),
    /// Start of the statistics window.
    WindowStart,
    /// Periodic sampling of AQM probabilities.
    Sample,
    /// Periodic time-series snapshot.
    Snapshot,
}

/// Position in the order of events: time, then sequence number.
type Key = (u64, u64);

#[derive(Clone, Copy, Debug)]
struct Entry {
    at: u64,
    seq: u64,
    ev: Ev,
}

impl Entry {
    fn key(&self) -> Key {
        (self.at, self.seq)
    }
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.key() == o.key()
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    // Reversed: BinaryHeap is a max-heap and we want the earliest first.
    fn cmp(&self, o: &Self) -> Ordering {
        o.key().cmp(&self.key())
    }
}

/// One endpoint timer.
#[derive(Clone, Default)]
struct Slot {
    /// When it fires, under which sequence number.
    deadline: Option<Key>,
    /// Its entries in the queue, latest first (a few at most: an entry is pushed only
    /// ahead of all of them), so that the earliest comes and goes at the end.
    queued: Vec<Key>,
}

/// The slot of a flow's endpoint timer.
fn slot(flow: u32, side: u8) -> usize {
    2 * flow as usize + side as usize
}

/// The most entries a [`Pending`] keeps in a sorted vector; more go in a binary heap,
/// until they fall below half of this.
const FEW: usize = 128;

/// The pending entries, earliest first out. While there are few (about 10 in a run with a
/// handful of flows, 60 to 110 with twenty) they are a vector sorted latest first: the
/// earliest leaves from its end, and a new entry goes in behind the last entry due after
/// it, looked for from the end, which moves only the entries due before it (most often
/// none or one). That costs less than the sift-down of a heap at every pop. Beyond
/// [`FEW`] entries (thousands of flows) they are a binary heap, and a sorted vector again
/// below half of that, so that a burst of entries does not keep a run on the heap. Keys
/// are unique, so both give one order.
enum Pending {
    Sorted(Vec<Entry>),
    Heap(BinaryHeap<Entry>),
}

impl Default for Pending {
    fn default() -> Pending {
        Pending::Sorted(Vec::with_capacity(FEW))
    }
}

impl Pending {
    /// Takes the entry's fields rather than an `Entry`: built by the caller, an entry was
    /// read back in 16-byte words straddling the 8-byte stores that had just written it.
    #[inline]
    fn push(&mut self, at: u64, seq: u64, ev: Ev) {
        let e = Entry { at, seq, ev };
        match self {
            Pending::Sorted(v) if v.len() < FEW => {
                // After every entry due later, before every entry due earlier: looked for
                // from the end, as most new entries go among the earliest, and each entry
                // due earlier moved up one place on the way (no call to move a few).
                let key = e.key();
                v.push(e);
                let mut i = v.len() - 1;
                while i > 0 && v[i - 1].key() < key {
                    v[i] = v[i - 1];
                    i -= 1;
                }
                v[i] = e;
            }
            Pending::Sorted(v) => {
                let mut heap = BinaryHeap::from(std::mem::take(v));
                heap.push(e);
                *self = Pending::Heap(heap);
            }
            Pending::Heap(h) => h.push(e),
        }
    }

    #[inline]
    fn peek(&self) -> Option<&Entry> {
        match self {
            Pending::Sorted(v) => v.last(),
            Pending::Heap(h) => h.peek(),
        }
    }

    #[inline]
    fn pop(&mut self) -> Option<Entry> {
        match self {
            Pending::Sorted(v) => v.pop(),
            Pending::Heap(h) => {
                let e = h.pop();
                if h.len() < FEW / 2 {
                    // Ascending in the heap's order, which is latest first.
                    *self = Pending::Sorted(std::mem::take(h).into_sorted_vec());
                }
                e
            }
        }
    }

    fn len(&self) -> usize {
        match self {
            Pending::Sorted(v) => v.len(),
            Pending::Heap(h) => h.len(),
        }
    }
}

/// Pending events.
#[derive(Default)]
pub struct EventQueue {
    pending: Pending,
    seq: u64,
    slots: Vec<Slot>,
    /// Heap entries popped so far (events, and slot entries that found their deadline
    /// moved).
    pub popped: u64,
}

impl EventQueue {
    /// A queue with the endpoint timers of `flows` flows (a sender and a receiver each).
    pub fn with_flows(flows: usize) -> EventQueue {
        EventQueue {
            slots: vec![Slot::default(); 2 * flows],
            ..Default::default()
        }
    }

    /// Push a one-off event (endpoint timers go through [`EventQueue::arm`]).
    pub fn push(&mut self, at: Time, ev: Ev) {
        debug_assert!(!matches!(ev, Ev::Endpoint(..)), "endpoint timers are armed");
        self.seq += 1;
        self.pending.push(at.as_nanos(), self.seq, ev);
    }

    /// Take the next sequence number, as a push would, for an entry that goes into the
    /// queue later ([`EventQueue::push_keyed`]) or that another entry stands for until then.
    pub fn take_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Push a one-off event under the sequence number [`EventQueue::take_seq`] gave it.
    pub fn push_keyed(&mut self, at: Time, seq: u64, ev: Ev) {
        debug_assert!(!matches!(ev, Ev::Endpoint(..)), "endpoint timers are armed");
        debug_assert!(seq <= self.seq, "a sequence number taken");
        self.pending.push(at.as_nanos(), seq, ev);
    }

    #[cfg(test)]
    fn deadline(&self, flow: u32, side: u8) -> Option<Time> {
        self.slots[slot(flow, side)].deadline.map(|(at, _)| Time(at))
    }

    /// Set (or, with `None`, cancel) the timer of flow `flow`'s endpoint `side`, which
    /// fires as [`Ev::Endpoint`]. Setting the deadline it has changes nothing; any other
    /// deadline takes the next sequence number, as a push would.
    pub fn arm(&mut self, flow: u32, side: u8, at: Option<Time>) {
        let ev = Ev::Endpoint(flow, side);
        let s = &mut self.slots[slot(flow, side)];
        let Some(at) = at.map(|t| t.as_nanos()) else {
            s.deadline = None;
            return;
        };
        if s.deadline.is_some_and(|(d, _)| d == at) {
            return;
        }
        self.seq += 1;
        let key = (at, self.seq);
        s.deadline = Some(key);
        if s.queued.last().is_none_or(|q| key < *q) {
            s.queued.push(key);
            self.pending.push(at, key.1, ev);
        }
    }

    /// The next event if it is due at or before `limit`.
    pub fn pop_until(&mut self, limit: Time) -> Option<(Time, Ev)> {
        loop {
            let e = match self.pending.peek() {
                Some(e) if e.at <= limit.as_nanos() => self.pending.pop()?,
                _ => return None,
            };
            self.popped += 1;
            let Ev::Endpoint(f, side) = e.ev else {
                return Some((Time(e.at), e.ev));
            };
            let s = &mut self.slots[slot(f, side)];
            let key = e.key();
            // The queue gives a slot's entries in order: this one is its earliest, the last.
            debug_assert_eq!(s.queued.last(), Some(&key));
            if s.queued.last() == Some(&key) {
                s.queued.pop();
            }
            if s.deadline == Some(key) {
                s.deadline = None;
                return Some((Time(e.at), e.ev));
            }
            // The deadline moved later (or went): unless an entry of the slot is already
            // due by then, one goes where it now is.
            if let Some(d) = s.deadline {
                if s.queued.last().is_none_or(|q| d < *q) {
                    s.queued.push(d);
                    self.pending.push(d.0, d.1, e.ev);
                }
            }
        }
    }

    pub fn len(&self) -> usize {
        self.pending.len()
    }
    pub fn is_empty(&self) -> bool {
        self.pending.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn time_then_insertion_order() {
        let mut q = EventQueue::default();
        q.push(Time(5), Ev::Sample);
        q.push(Time(3), Ev::Link(1, 0));
        q.push(Time(5), Ev::Link(2, 0));
        q.push(Time(3), Ev::Link(3, 0));
        let order: Vec<_> = std::iter::from_fn(|| q.pop_until(Time(10))).collect();
        assert_eq!(
            order,
            vec![
                (Time(3), Ev::Link(1, 0)),
                (Time(3), Ev::Link(3, 0)),
                (Time(5), Ev::Sample),
                (Time(5), Ev::Link(2, 0))
            ]
        );
        q.push(Time(20), Ev::Sample);
        assert!(q.pop_until(Time(10)).is_none());
        assert_eq!(q.len(), 1);
    }

    #[test]
    fn a_timer_fires_once_at_its_last_deadline_and_ties_go_by_when_it_was_set() {
        let mut q = EventQueue::with_flows(1);
        let ev = Ev::Endpoint(0, 1);
        // Re-armed later a thousand times (a delayed-ACK timer): one heap entry.
        for i in 0..1000 {
            q.arm(0, 1, Some(Time(100 + i)));
        }
        assert_eq!(q.len(), 1);
        assert_eq!(q.deadline(0, 1), Some(Time(1099)));
        // An event due at the same instant, pushed after the last re-arm, comes after it.
        q.push(Time(1099), Ev::Sample);
        // Moved earlier: a second entry, and the first is skipped when it comes up.
        q.arm(0, 0, Some(Time(50)));
        q.arm(0, 0, Some(Time(40)));
        q.arm(0, 0, None);
        q.arm(0, 0, Some(Time(60)));
        let order: Vec<_> = std::iter::from_fn(|| q.pop_until(Time(2000))).collect();
        assert_eq!(
            order,
            vec![
                (Time(60), Ev::Endpoint(0, 0)),
                (Time(1099), ev),
                (Time(1099), Ev::Sample)
            ]
        );
        assert!(q.is_empty());
        assert_eq!(q.deadline(0, 0), None);
        // The entries popped: 40 (skipped, 60 pushed), 50 (skipped), 60, 100 (moved to
        // 1099), 1099 twice.
        assert_eq!(q.popped, 6);
    }

    #[test]
    fn many_entries_leave_in_the_same_order_through_the_heap_and_back() {
        // One-off events and timers at pseudo-random times with many ties, in bursts of
        // 3 * FEW and of 20, popped between bursts down to 10 or to none: the queue passes
        // from the sorted vector to the heap and back, and must give exactly the order of
        // (time, insertion).
        let mut q = EventQueue::with_flows(50);
        let mut expect: Vec<(u64, u64, Ev)> = Vec::new();
        let mut x: u64 = 12345;
        let mut next = |m: u64| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) % m
        };
        let mut seq = 0;
        let mut got = Vec::new();
        let mut now = 0;
        for round in 0..40 {
            // Bursts of up to 3 * FEW, then drain to a few, so both forms are crossed.
            let burst = if round % 4 == 0 { 3 * FEW } else { 20 };
            for _ in 0..burst {
                let at = now + next(1000);
                seq += 1;
                if next(4) == 0 {
                    let f = next(50) as u32;
                    // A timer set once here; its sequence number is this one.
                    if q.deadline(f, 0).is_none() {
                        q.arm(f, 0, Some(Time(at)));
                        expect.push((at, seq, Ev::Endpoint(f, 0)));
                        continue;
                    }
                }
                q.push(Time(at), Ev::Link(seq as u32, 0));
                expect.push((at, seq, Ev::Link(seq as u32, 0)));
            }
            let keep = if round % 4 == 3 { 0 } else { 10 };
            while q.len() > keep {
                let (t, e) = q.pop_until(Time::MAX).unwrap();
                assert!(t.as_nanos() >= now, "time went back");
                now = t.as_nanos();
                got.push((t.as_nanos(), e));
            }
        }
        while let Some((t, e)) = q.pop_until(Time::MAX) {
            got.push((t.as_nanos(), e));
        }
        expect.sort_by_key(|&(at, seq, _)| (at, seq));
        let expect: Vec<(u64, Ev)> = expect.into_iter().map(|(at, _, e)| (at, e)).collect();
        assert_eq!(got.len(), expect.len());
        assert_eq!(got, expect);
        assert!(matches!(q.pending, Pending::Sorted(_)), "back to the sorted vector");
    }

    #[test]
    fn a_timer_that_alternates_between_two_deadlines_keeps_few_entries() {
        // A paced sender: its timer is the next send, 1 later, then its retransmission
        // timeout, 1000 later, again and again.
        let mut q = EventQueue::with_flows(1);
        let ev = Ev::Endpoint(0, 0);
        let mut now = 0;
        let mut fired = 0;
        for _ in 0..10_000 {
            q.arm(0, 0, Some(Time(now + 1000)));
            q.arm(0, 0, Some(Time(now + 1)));
            assert!(q.len() <= 3, "{} entries", q.len());
            let (t, e) = q.pop_until(Time::MAX).unwrap();
            assert_eq!((t, e), (Time(now + 1), ev));
            fired += 1;
            now = t.as_nanos();
        }
        assert_eq!(fired, 10_000);
        // The timeouts left were skipped or moved, not fired.
        q.arm(0, 0, None);
        assert!(q.pop_until(Time::MAX).is_none());
    }
}
