//! Helpers shared by the two endpoints: summing connection counters, and a compact set of
//! the ids seen.

use std::collections::BTreeSet;

use l4s_transport::EndpointStats;

/// Add the counters of `x` (not the state fields: cwnd, srtt, modes) to `into`.
pub(crate) fn add_counters(into: &mut EndpointStats, x: &EndpointStats) {
    into.sent_packets += x.sent_packets;
    into.sent_bytes += x.sent_bytes;
    into.retransmits += x.retransmits;
    into.lost_packets += x.lost_packets;
    into.delivered_bytes += x.delivered_bytes;
    into.received_packets += x.received_packets;
    into.ce_packets += x.ce_packets;
    into.congestion_events += x.congestion_events;
}

/// The distinct ids seen, for ids handed out in increasing order by the peer: every id
/// below `floor` was seen, and `above` holds those seen beyond it. Memory is proportional
/// to how far out of order ids arrive, not to how many were seen.
#[derive(Clone, Debug, Default)]
pub(crate) struct SeenIds {
    floor: u64,
    above: BTreeSet<u64>,
    count: u64,
}

/// Ids further than this above the floor are not remembered (a hostile or broken peer).
const MAX_AHEAD: u64 = 1 << 20;

impl SeenIds {
    /// Record `id`; true if it was not seen before.
    pub(crate) fn insert(&mut self, id: u32) -> bool {
        let id = id as u64;
        if id < self.floor || id >= self.floor + MAX_AHEAD || !self.above.insert(id) {
            return false;
        }
        self.count += 1;
        while self.above.first() == Some(&self.floor) {
            self.above.pop_first();
            self.floor += 1;
        }
        true
    }
    /// Distinct ids seen.
    pub(crate) fn count(&self) -> u64 {
        self.count
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn seen_ids_count_distinct_and_stay_small() {
        let mut s = SeenIds::default();
        assert!(s.insert(1));
        assert!(s.insert(0));
        assert!(!s.insert(1));
        assert!(!s.insert(0));
        assert_eq!((s.count(), s.floor, s.above.len()), (2, 2, 0));
        for i in (2..1000).rev() {
            assert!(s.insert(i));
        }
        assert_eq!((s.count(), s.floor, s.above.len()), (1000, 1000, 0));
        assert!(!s.insert(u32::MAX));
    }
}
