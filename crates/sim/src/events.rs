//! The event queue: a binary heap of small typed events, ordered by time and, for equal
//! times, by insertion order (DESIGN.md principle 3: deterministic tie-breaking).

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

#[derive(Clone, Copy, Debug)]
struct Entry {
    at: u64,
    seq: u64,
    ev: Ev,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.at == o.at && self.seq == o.seq
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
        o.at.cmp(&self.at).then_with(|| o.seq.cmp(&self.seq))
    }
}

/// Pending events.
#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<Entry>,
    seq: u64,
    /// Events popped so far.
    pub popped: u64,
}

impl EventQueue {
    pub fn push(&mut self, at: Time, ev: Ev) {
        self.seq += 1;
        self.heap.push(Entry {
            at: at.as_nanos(),
            seq: self.seq,
            ev,
        });
    }
    /// The next event if it is due at or before `limit`.
    pub fn pop_until(&mut self, limit: Time) -> Option<(Time, Ev)> {
        match self.heap.peek() {
            Some(e) if e.at <= limit.as_nanos() => {
                let e = self.heap.pop()?;
                self.popped += 1;
                Some((Time(e.at), e.ev))
            }
            _ => None,
        }
    }
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
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
}
