//! Queue Protection for a shared low-latency queue: the DOCSIS 3.1 algorithm of RFC 9957
//! ("The DOCSIS Queue Protection Algorithm to Preserve Low Latency"), sans-IO.
//!
//! A low-latency queue relies on every flow in it not building a queue. Queue Protection
//! keeps a *queuing score* per microflow and, when the queue's delay is about to exceed a
//! threshold, ejects (*sanctions*) packets of the flows most likely to be responsible: the
//! caller sends a sanctioned packet to the Classic queue instead (RFC 9957 §2, §4).
//!
//! * **Buckets** (RFC 9957 §4.1, §4.2.1 `pick_bucket`): `2^bucket_bits` buckets indexed by
//!   successive `bucket_bits`-bit slices of the flow hash, `attempts` of them tried in turn,
//!   plus one default bucket shared by every flow that finds none free. A bucket holds the
//!   flow that owns it and an expiry time `t_exp`; it is free once `t_exp` has passed.
//! * **Queuing score** (§4.2.2 `fill_bucket`): each packet adds `probNative × size / AGING`
//!   to its bucket's `t_exp`, where `probNative` is the native (uncoupled) marking
//!   probability of the low-latency AQM at the current queue delay and AGING is a drain rate
//!   of `2^lg_aging` bytes per second (the RFC's `pow(2, LG_AGING − 30)` bytes per
//!   nanosecond: a 2^30 ns "second"). The score is `t_exp − now`, capped at `max_ql_score`;
//!   it ages by one second per second, so a flow's score is the time its recent
//!   congestion-weighted bytes would take to drain at AGING.
//! * **Decision** (§4.2.3 `qprotect`): sanction when the queue delay exceeds `critical_ql`
//!   *and* `qdelay × score > critical_ql × critical_ql_score` (the score threshold scaled
//!   down as the queue grows past the critical delay).
//!
//! Time resolution is 1 ns (the RFC's `T_RES`). The microflow identifier is the packet's
//! [`QueuePacket::flow_hash`] (a 5-tuple hash in the live forwarder, the flow and direction
//! in the simulator); its bits are also the bucket hash, as the RFC takes both from one
//! hash of the 5-tuple.
//!
//! What it records for the run's summary: per microflow, the packets and bytes sanctioned,
//! the first and last sanction and the largest score at a sanction ([`QpStats`]); its size
//! grows with the number of sanctioned flows, never with time.

use std::collections::BTreeMap;

use l4s_core::{Dur, QueuePacket, Time};
use serde::{Deserialize, Serialize};

use crate::config::ConfigError;

/// Queue Protection parameters as written in a scenario (`queue_protection = { ... }`).
/// Defaults are DOCSIS MULPI's and RFC 9957 §4.1's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct QueueProtectionConfig {
    /// QPROTECT_ON (on).
    pub enabled: bool,
    /// CRITICALqL: the queue delay above which sanctions can happen. `None` = the
    /// low-latency AQM's own threshold where the marking probability reaches 1 (DOCSIS:
    /// `MAXTH`; DualPI2's step: `step_thresh`; its ramp: `min_th + range`).
    pub critical_ql: Option<Dur>,
    /// CRITICALqLSCORE: the queuing score that, with the delay at `critical_ql`, sanctions
    /// (4 ms).
    pub critical_ql_score: Dur,
    /// LG_AGING: the score drains at 2^lg_aging bytes per second (19: about 4 Mbit/s).
    pub lg_aging: u32,
    /// MAX_QLSCORE: the cap on a bucket's score (5 s).
    pub max_ql_score: Dur,
    /// BI_SIZE: 2^bucket_bits flow buckets plus a default bucket (5: 33 buckets).
    pub bucket_bits: u32,
    /// ATTEMPTS: buckets tried per flow before the default bucket (2).
    pub attempts: u32,
}

impl Default for QueueProtectionConfig {
    fn default() -> Self {
        QueueProtectionConfig {
            enabled: true,
            critical_ql: None,
            critical_ql_score: Dur::from_millis(4),
            lg_aging: 19,
            max_ql_score: Dur::from_secs(5),
            bucket_bits: 5,
            attempts: 2,
        }
    }
}

impl QueueProtectionConfig {
    /// Errors name the key as `queue_protection.<key>`.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let e = |k: &str, m: String| Err(ConfigError::new(&format!("queue_protection.{k}"), m));
        if let Some(c) = self.critical_ql {
            if c.is_zero() {
                return e(
                    "critical_ql",
                    "expected a delay greater than zero, such as \"1ms\"".into(),
                );
            }
        }
        if self.critical_ql_score.is_zero() {
            return e(
                "critical_ql_score",
                "expected a score (a duration) greater than zero, such as \"4ms\"".into(),
            );
        }
        if !(1..=30).contains(&self.lg_aging) {
            return e(
                "lg_aging",
                format!("expected an integer from 1 to 30, found {}", self.lg_aging),
            );
        }
        if self.max_ql_score.is_zero() {
            return e(
                "max_ql_score",
                "expected a duration greater than zero, such as \"5s\"".into(),
            );
        }
        if self.bucket_bits > 14 {
            return e(
                "bucket_bits",
                format!("expected an integer from 0 to 14, found {}", self.bucket_bits),
            );
        }
        if self.attempts == 0 || self.attempts as u64 * self.bucket_bits as u64 > 32 {
            return e(
                "attempts",
                format!(
                    "expected at least 1 attempt and attempts × bucket_bits ≤ 32 (the hash has 32 bits), found {}",
                    self.attempts
                ),
            );
        }
        Ok(())
    }
}

/// The outcome of [`QueueProtection::protect`] (RFC 9957 `EXIT_SUCCESS` / `EXIT_SANCTION`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Queue the packet in the low-latency queue.
    Pass,
    /// Redirect the packet to the Classic queue.
    Sanction,
}

/// What Queue Protection did to one microflow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpFlowRecord {
    /// Packets and bytes sanctioned (sent to the Classic queue).
    pub packets: u64,
    pub bytes: u64,
    /// First and last sanction.
    pub first: Time,
    pub last: Time,
    /// The largest queuing score at a sanction.
    pub max_score: Dur,
    /// The largest queue delay at a sanction.
    pub max_qdelay: Dur,
    /// The destination port of its first sanctioned packet, to name the flow by where a
    /// hash alone does not (the live testbed).
    pub dst_port: Option<u16>,
}

/// Queue Protection's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QpStats {
    /// CRITICALqL in effect.
    pub critical_ql: Dur,
    /// Packets that passed through [`QueueProtection::protect`].
    pub checked_packets: u64,
    pub sanctioned_packets: u64,
    pub sanctioned_bytes: u64,
    /// Times a flow found no free bucket among its attempts and used the default bucket
    /// while another flow held it (RFC 9957 §4.2.1: "default bucket collisions").
    pub default_bucket_collisions: u64,
    /// Per microflow (its [`QueuePacket::flow_hash`]), the flows sanctioned at least once.
    pub flows: BTreeMap<u32, QpFlowRecord>,
}

#[derive(Clone, Copy, Debug)]
struct Bucket {
    /// The owning microflow; `None` until first claimed.
    id: Option<u32>,
    /// Expiry in ns; the score is `t_exp − now` while positive.
    t_exp: i128,
}

/// RFC 9957 Queue Protection state.
#[derive(Clone, Debug)]
pub struct QueueProtection {
    critical_ql: Dur,
    critical_ql_score: i128,
    /// Nanoseconds of score per byte at probNative = 1: 2^(30 − LG_AGING).
    ns_per_byte: f64,
    max_ql_score: i128,
    bits: u32,
    attempts: u32,
    buckets: Vec<Bucket>,
    stats: QpStats,
}

impl QueueProtection {
    /// `native_critical_ql` is the low-latency AQM's own threshold, used when the
    /// configuration does not set `critical_ql`. Never panics on an unvalidated
    /// configuration: out-of-range values are clamped.
    pub fn new(cfg: &QueueProtectionConfig, native_critical_ql: Dur) -> QueueProtection {
        let bits = cfg.bucket_bits.min(14);
        let attempts = cfg.attempts.clamp(1, 32 / bits.max(1));
        let lg = cfg.lg_aging.clamp(1, 30);
        let critical_ql = cfg.critical_ql.unwrap_or(native_critical_ql).max(Dur(1));
        QueueProtection {
            critical_ql,
            critical_ql_score: cfg.critical_ql_score.as_nanos().max(1) as i128,
            ns_per_byte: (1u64 << (30 - lg)) as f64,
            max_ql_score: cfg.max_ql_score.as_nanos().max(1) as i128,
            bits,
            attempts,
            buckets: vec![Bucket { id: None, t_exp: 0 }; (1usize << bits) + 1],
            stats: QpStats {
                critical_ql,
                ..QpStats::default()
            },
        }
    }

    /// CRITICALqL in effect.
    pub fn critical_ql(&self) -> Dur {
        self.critical_ql
    }

    pub fn stats(&self) -> &QpStats {
        &self.stats
    }

    /// The current queuing score of a microflow (zero if it owns no bucket or its bucket
    /// has drained).
    pub fn score(&self, flow: u32, now: Time) -> Dur {
        let now = now.as_nanos() as i128;
        self.buckets
            .iter()
            .filter(|b| b.id == Some(flow))
            .map(|b| (b.t_exp - now).max(0))
            .max()
            .map(|s| Dur(s as u64))
            .unwrap_or(Dur::ZERO)
    }

    /// RFC 9957 §4.2.1 `pick_bucket`: the bucket this flow owns among its attempts, else
    /// the first expired one (reset and claimed), else the default bucket.
    fn pick_bucket(&mut self, flow: u32, now: i128) -> usize {
        let n = 1usize << self.bits;
        let mask = (n - 1) as u32;
        let mut h32 = flow;
        let mut saved = n;
        for _ in 0..self.attempts {
            let h = (h32 & mask) as usize;
            let b = &mut self.buckets[h];
            if b.id == Some(flow) {
                if b.t_exp <= now {
                    b.t_exp = now;
                }
                return h;
            }
            if saved == n && b.t_exp <= now {
                saved = h;
            }
            h32 = h32.checked_shr(self.bits).unwrap_or(0);
        }
        let b = &mut self.buckets[saved];
        if b.t_exp <= now {
            b.t_exp = now;
        } else if saved == n && b.id != Some(flow) {
            self.stats.default_bucket_collisions += 1;
        }
        b.id = Some(flow);
        saved
    }

    /// RFC 9957 §4.2.2 `fill_bucket`: add the packet's congestion-weighted size and return
    /// the score in ns.
    fn fill_bucket(&mut self, bucket: usize, size: u32, prob_native: f64, now: i128) -> i128 {
        let add = (prob_native.clamp(0.0, 1.0) * size as f64 * self.ns_per_byte) as i128;
        let b = &mut self.buckets[bucket];
        b.t_exp = (b.t_exp + add).min(now + self.max_ql_score);
        b.t_exp - now
    }

    /// RFC 9957 §4.2.3 `qprotect` for a packet classified to the low-latency queue:
    /// `qdelay` is that queue's current delay (the packet's own included where the AQM
    /// estimates it from the backlog), `prob_native` the native AQM's marking probability
    /// at that delay.
    pub fn protect<P: QueuePacket>(&mut self, pkt: &P, qdelay: Dur, prob_native: f64, now: Time) -> Verdict {
        let t = now.as_nanos() as i128;
        let flow = pkt.flow_hash();
        let bucket = self.pick_bucket(flow, t);
        let score = self.fill_bucket(bucket, pkt.wire_len(), prob_native, t);
        self.stats.checked_packets += 1;
        let q = qdelay.as_nanos() as i128;
        let critical = self.critical_ql.as_nanos() as i128;
        if q > critical && q * score > critical * self.critical_ql_score {
            let size = pkt.wire_len() as u64;
            self.stats.sanctioned_packets += 1;
            self.stats.sanctioned_bytes += size;
            let score = Dur(score.max(0) as u64);
            let r = self.stats.flows.entry(flow).or_insert(QpFlowRecord {
                packets: 0,
                bytes: 0,
                first: now,
                last: now,
                max_score: Dur::ZERO,
                max_qdelay: Dur::ZERO,
                dst_port: pkt.dst_port(),
            });
            r.packets += 1;
            r.bytes += size;
            r.last = now;
            r.max_score = r.max_score.max(score);
            r.max_qdelay = r.max_qdelay.max(qdelay);
            Verdict::Sanction
        } else {
            Verdict::Pass
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use l4s_core::Ecn;

    struct P {
        flow: u32,
        len: u32,
    }
    impl QueuePacket for P {
        fn wire_len(&self) -> u32 {
            self.len
        }
        fn ecn(&self) -> Ecn {
            Ecn::Ect1
        }
        fn set_ce(&mut self) -> bool {
            true
        }
        fn flow_hash(&self) -> u32 {
            self.flow
        }
    }

    fn qp() -> QueueProtection {
        QueueProtection::new(&QueueProtectionConfig::default(), Dur::from_millis(1))
    }

    #[test]
    fn score_grows_by_size_over_aging_and_drains_in_real_time() {
        let mut q = qp();
        let p = P { flow: 7, len: 1500 };
        // probNative 1: 1500 B × 2^11 ns/B = 3.072 ms of score per packet.
        assert_eq!(q.protect(&p, Dur::ZERO, 1.0, Time::ZERO), Verdict::Pass);
        assert_eq!(q.score(7, Time::ZERO), Dur(3_072_000));
        // Half the probability, half the score.
        q.protect(&p, Dur::ZERO, 0.5, Time::ZERO);
        assert_eq!(q.score(7, Time::ZERO), Dur(4_608_000));
        // It drains one ns per ns.
        assert_eq!(q.score(7, Time(1_000_000)), Dur(3_608_000));
        assert_eq!(q.score(7, Time(10_000_000)), Dur::ZERO);
        // probNative 0 adds nothing.
        q.protect(&p, Dur::ZERO, 0.0, Time(20_000_000));
        assert_eq!(q.score(7, Time(20_000_000)), Dur::ZERO);
    }

    #[test]
    fn score_is_capped_at_max_ql_score() {
        let mut q = qp();
        let p = P { flow: 3, len: 1500 };
        for _ in 0..10_000 {
            q.protect(&p, Dur::ZERO, 1.0, Time::ZERO);
        }
        assert_eq!(q.score(3, Time::ZERO), Dur::from_secs(5));
    }

    #[test]
    fn sanctions_need_both_the_delay_and_the_score() {
        let mut q = qp();
        let p = P { flow: 9, len: 1500 };
        // Score 3.07 ms at qdelay 1.2 ms: product 3.69 < 4 ms × 1 ms → pass.
        assert_eq!(q.protect(&p, Dur::from_micros(1200), 1.0, Time::ZERO), Verdict::Pass);
        // Score 6.14 ms at qdelay 1.2 ms: product 7.37 > 4 → sanction.
        assert_eq!(
            q.protect(&p, Dur::from_micros(1200), 1.0, Time::ZERO),
            Verdict::Sanction
        );
        // A huge score but the delay at CRITICALqL exactly: pass (strictly greater).
        for _ in 0..10 {
            q.protect(&p, Dur::ZERO, 1.0, Time::ZERO);
        }
        assert_eq!(q.protect(&p, Dur::from_millis(1), 1.0, Time::ZERO), Verdict::Pass);
        // With the delay at 4 ms, a score just above 1 ms suffices: a fresh flow with one
        // 1500 B packet (3.07 ms) is sanctioned, one with 300 B (0.61 ms) is not.
        let mut q = qp();
        assert_eq!(
            q.protect(&P { flow: 1, len: 300 }, Dur::from_millis(4), 1.0, Time::ZERO),
            Verdict::Pass
        );
        assert_eq!(
            q.protect(&P { flow: 2, len: 1500 }, Dur::from_millis(4), 1.0, Time::ZERO),
            Verdict::Sanction
        );
        let s = q.stats();
        assert_eq!(
            (s.checked_packets, s.sanctioned_packets, s.sanctioned_bytes),
            (2, 1, 1500)
        );
        let r = s.flows[&2];
        assert_eq!(
            (r.packets, r.max_score, r.max_qdelay),
            (1, Dur(3_072_000), Dur::from_millis(4))
        );
    }

    #[test]
    fn flows_with_distinct_buckets_keep_separate_scores() {
        let mut q = qp();
        // Flow A hashes to bucket 1, B to bucket 2 (low 5 bits).
        let a = P { flow: 1, len: 1500 };
        let b = P { flow: 2, len: 1500 };
        for _ in 0..3 {
            q.protect(&a, Dur::ZERO, 1.0, Time::ZERO);
        }
        q.protect(&b, Dur::ZERO, 1.0, Time::ZERO);
        assert_eq!(q.score(1, Time::ZERO), Dur(3 * 3_072_000));
        assert_eq!(q.score(2, Time::ZERO), Dur(3_072_000));
    }

    #[test]
    fn a_held_bucket_sends_a_colliding_flow_to_its_second_choice_then_the_default() {
        let mut q = qp();
        // Flows 1, 1 + 32·2 and 1 + 32·3 share the first slice (bucket 1); the second slices
        // are 0, 2 and 3.
        let a = P { flow: 1, len: 1500 };
        let b = P {
            flow: 1 + (2 << 5),
            len: 1500,
        };
        let c = P {
            flow: 1 + (2 << 5) + (1 << 10),
            len: 1500,
        };
        q.protect(&a, Dur::ZERO, 1.0, Time::ZERO); // bucket 1
        q.protect(&b, Dur::ZERO, 1.0, Time::ZERO); // bucket 1 busy → bucket 2
        q.protect(&c, Dur::ZERO, 1.0, Time::ZERO); // buckets 1 and 2 busy → default
        let d = P {
            flow: 1 + (2 << 5) + (2 << 10),
            len: 1500,
        };
        q.protect(&d, Dur::ZERO, 1.0, Time::ZERO); // same two, default held by c
        assert_eq!(q.stats().default_bucket_collisions, 1);
        // c and d share the default bucket's score: 2 packets' worth, owned by d now.
        assert_eq!(q.score(d.flow, Time::ZERO), Dur(2 * 3_072_000));
        // Once bucket 1 has drained, a new flow recycles it.
        let later = Time(10_000_000);
        let e = P {
            flow: 1 + (5 << 5),
            len: 1500,
        };
        q.protect(&e, Dur::ZERO, 1.0, later);
        assert_eq!(q.score(e.flow, later), Dur(3_072_000));
        assert_eq!(q.score(a.flow, later), Dur::ZERO);
    }

    #[test]
    fn validation_names_the_nested_key() {
        let bad = QueueProtectionConfig {
            lg_aging: 31,
            ..Default::default()
        };
        assert_eq!(bad.validate().unwrap_err().key, "queue_protection.lg_aging");
        let bad = QueueProtectionConfig {
            attempts: 7,
            ..Default::default()
        };
        assert_eq!(bad.validate().unwrap_err().key, "queue_protection.attempts");
        assert!(QueueProtectionConfig::default().validate().is_ok());
        // Unvalidated values never panic.
        let wild = QueueProtectionConfig {
            enabled: true,
            bucket_bits: 99,
            attempts: 0,
            lg_aging: 0,
            critical_ql: Some(Dur::ZERO),
            critical_ql_score: Dur::ZERO,
            max_ql_score: Dur::ZERO,
        };
        let mut q = QueueProtection::new(&wild, Dur::ZERO);
        q.protect(
            &P {
                flow: u32::MAX,
                len: 9000,
            },
            Dur::from_secs(1),
            1.0,
            Time::ZERO,
        );
    }
}
