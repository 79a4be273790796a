//! How late the testbed's own threads hand packets on: the self-check of a live run.
//!
//! A userspace element (the forwarder's pacer, a delay line) has a time at which each
//! packet is due: the end of its serialisation on the emulated link, or its arrival plus
//! the propagation delay. When the host does not give the element's thread the CPU in
//! time (other load, or a virtual machine whose vCPU the hypervisor holds back: "steal"),
//! the packet leaves late, and that lateness is added to every delay the run measures.
//! Recording it per packet tells a user whether the tail of a live result is the network's
//! or the host's, and is what the live cross-validation test checks before it compares
//! tails with the simulator.

use hdrhistogram::Histogram;
use serde::Serialize;

/// Lateness of more than this counts as a disruption of the packet's timing.
pub const LATE_NS: u64 = 1_000_000;

/// Per-packet lateness, recorded in nanoseconds (1 ns to 60 s, 2 significant digits).
#[derive(Clone, Debug)]
pub struct Lateness {
    hist: Histogram<u64>,
    over: u64,
    over_ns: u64,
}

impl Default for Lateness {
    fn default() -> Self {
        Lateness::new()
    }
}

impl Lateness {
    pub fn new() -> Lateness {
        Lateness {
            hist: Histogram::new_with_bounds(1, 60_000_000_000, 2).expect("valid histogram bounds"),
            over: 0,
            over_ns: 0,
        }
    }

    /// One packet left `ns` after it was due.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.hist.saturating_record(ns.max(1));
        if ns > LATE_NS {
            self.over += 1;
            self.over_ns += ns;
        }
    }

    /// Packets over 1 ms late so far.
    pub fn over_1ms(&self) -> u64 {
        self.over
    }

    pub fn stats(&self) -> LatenessStats {
        let q = |x: f64| {
            if self.hist.is_empty() {
                0.0
            } else {
                self.hist.value_at_quantile(x) as f64 / 1e3
            }
        };
        LatenessStats {
            packets: self.hist.len(),
            p50_us: q(0.5),
            p99_us: q(0.99),
            p999_us: q(0.999),
            max_us: if self.hist.is_empty() {
                0.0
            } else {
                self.hist.max() as f64 / 1e3
            },
            over_1ms: self.over,
            over_1ms_total_ms: self.over_ns as f64 / 1e6,
        }
    }
}

/// What [`Lateness`] recorded, for statistics files.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct LatenessStats {
    pub packets: u64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
    /// Packets that left more than 1 ms late, and their lateness summed.
    pub over_1ms: u64,
    pub over_1ms_total_ms: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_quantiles() {
        let mut l = Lateness::new();
        assert_eq!(l.stats(), LatenessStats::default());
        for _ in 0..997 {
            l.record(20_000);
        }
        l.record(0);
        l.record(1_500_000);
        l.record(3_000_000);
        let s = l.stats();
        assert_eq!((s.packets, s.over_1ms, l.over_1ms()), (1000, 2, 2));
        assert!((s.over_1ms_total_ms - 4.5).abs() < 1e-9, "{s:?}");
        assert!(
            (s.p50_us - 20.0).abs() <= 0.2 && (s.p99_us - 20.0).abs() <= 0.2,
            "{s:?}"
        );
        // The 999th of 1000 is the 1.5 ms packet (within the histogram's 1 % precision).
        assert!((s.p999_us - 1500.0).abs() <= 15.0, "{s:?}");
        assert!((s.max_us - 3000.0).abs() <= 30.0, "{s:?}");
        // Exactly 1 ms is not over.
        l.record(LATE_NS);
        assert_eq!(l.stats().over_1ms, 2);
    }
}
