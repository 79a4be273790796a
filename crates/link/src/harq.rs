//! HARQ on a radio link, around any other link: a transport block that fails to decode
//! is sent again one HARQ round trip later, and the receiver's RLC hands packets on in
//! order, so a packet behind a retransmitted block waits for it (head-of-line blocking).
//!
//! The first transmission of a block fails with the block error rate `bler` (the usual
//! link-adaptation target is about 10 %), and so does each retransmission, independently:
//! a block needs `k` retransmissions with probability `bler^k·(1 − bler)`, and each adds the
//! HARQ round trip `rtt` (LTE FDD 8 ms, K = 4; NR about 2–5 ms, depending on the numerology,
//! K1 and the TDD pattern: 3GPP TS 38.321 §5.3.2 and §5.4.2 for the HARQ entity, TS 38.322
//! §5.2.3 for RLC AM in-sequence delivery). The mean added delay of a block is then
//! `rtt·bler/(1 − bler)`, and a share `bler` of blocks is delayed by at least `rtt`.
//!
//! Packets the inner link delivers at the same time make one block (a trace link's
//! opportunity, for example) and share its fate. Nothing is lost here: HARQ and RLC
//! retransmissions end in delivery; residual loss is a loss model's
//! ([`crate::gilbert_elliott`]).

use crate::{Action, Io, Link, LinkPacket, LinkStats, Port, QueueInfo, Timer};
use l4s_aqm::{QueueId, QueueStats};
use l4s_core::{Dur, Rate, Rng, Time};
use std::collections::VecDeque;

/// The wake-up of the next packet HARQ holds back. Links wrapped by [`Harq`] use timer
/// numbers below it.
pub const RELEASE: Timer = 0x100;

/// The longest HARQ round trip taken. NR over a geostationary satellite has the longest
/// there is: 3GPP TR 38.821 puts the GEO round-trip delay at up to 541.46 ms, which is why
/// Release 17 allows 32 HARQ processes and HARQ feedback to be disabled. Terrestrial radio's
/// round trips are a few milliseconds.
pub const MAX_RTT: Dur = Dur::from_secs(1);

/// The highest block error rate taken. A block needs on average `bler/(1 − bler)`
/// retransmissions, each drawn in turn; at 0.99 that is 99, far beyond any link adaptation's
/// target (about 10 %), and closer to 1 the draws of one block would never end.
pub const MAX_BLER: f64 = 0.99;

/// HARQ parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HarqConfig {
    /// Probability that a transmission of a block fails, in [0, [`MAX_BLER`]].
    pub bler: f64,
    /// The HARQ round trip a retransmission adds, at most [`MAX_RTT`].
    pub rtt: Dur,
}

impl HarqConfig {
    /// Check the parameters; the error names the key and what was expected.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if !(0.0..=MAX_BLER).contains(&self.bler) {
            return Err((
                "bler",
                format!("expected a block error rate in [0, {MAX_BLER}], found {}", self.bler),
            ));
        }
        if self.rtt.is_zero() || self.rtt > MAX_RTT {
            return Err((
                "rtt",
                format!(
                    "expected a HARQ round trip above zero and at most {MAX_RTT}, such as \"8ms\", found {}",
                    self.rtt
                ),
            ));
        }
        Ok(())
    }

    /// Draw how many times a block is sent again (each transmission fails with `bler`,
    /// independently) and the delay that adds, `k·rtt`.
    pub fn draw(&self, rng: &mut Rng) -> (u64, Dur) {
        let mut k = 0u64;
        while rng.chance(self.bler) {
            k += 1;
        }
        (k, Dur(self.rtt.as_nanos().saturating_mul(k)))
    }

    /// Mean delay HARQ adds to a block: `rtt·bler/(1 − bler)`.
    pub fn mean_added(&self) -> Dur {
        Dur((self.rtt.as_nanos() as f64 * self.bler / (1.0 - self.bler)) as u64)
    }
}

/// HARQ around an inner link; see the module documentation.
pub struct Harq<P> {
    inner: Box<dyn Link<P>>,
    cfg: HarqConfig,
    rng: Rng,
    /// The block being delivered: its time in the inner link and the delay it was given.
    block: Option<(Time, Dur)>,
    /// When the last packet is handed on (RLC delivers in order).
    last: Time,
    /// Packets held back, in order: when each goes, where, and the packet.
    held: VecDeque<(Time, Port, P)>,
    scratch: Vec<Action<P>>,
    retransmissions: u64,
    /// Blocks (the packets handed on at one time) and their bytes, all data.
    blocks: u64,
    block_bytes: u64,
}

impl<P: LinkPacket + 'static> Harq<P> {
    pub fn new(inner: Box<dyn Link<P>>, cfg: HarqConfig, rng: Rng) -> Harq<P> {
        Harq {
            inner,
            cfg,
            rng,
            block: None,
            last: Time::ZERO,
            held: VecDeque::new(),
            scratch: Vec::new(),
            retransmissions: 0,
            blocks: 0,
            block_bytes: 0,
        }
    }

    /// Give every packet the inner link delivered in this call (the actions from `from`
    /// on) its block's HARQ delay, in order.
    fn delay(&mut self, from: usize, io: &mut Io<'_, P>) {
        let mut scratch = std::mem::take(&mut self.scratch);
        crate::stage::each_delivery(io, from, &mut scratch, |io, port, pkt, due| {
            let extra = match self.block {
                Some((t, extra)) if t == due => extra,
                _ => {
                    let (k, extra) = self.cfg.draw(&mut self.rng);
                    self.retransmissions += k;
                    self.blocks += 1;
                    self.block = Some((due, extra));
                    extra
                }
            };
            self.block_bytes += u64::from(pkt.wire_len());
            let at = (due + extra).max(self.last);
            self.last = at;
            if at == due && self.held.is_empty() {
                io.deliver(port, pkt, due);
            } else {
                if self.held.is_empty() {
                    io.wake(RELEASE, at);
                }
                self.held.push_back((at, port, pkt));
            }
        });
        self.scratch = scratch;
    }
}

impl<P: LinkPacket + 'static> Link<P> for Harq<P> {
    delegate_queries!();
    fn start(&mut self, origin: Time, io: &mut Io<'_, P>) {
        let from = io.actions_mut().len();
        self.inner.start(origin, io);
        self.delay(from, io);
    }
    fn send(&mut self, from: Port, to: Port, pkt: P, io: &mut Io<'_, P>) {
        let mark = io.actions_mut().len();
        self.inner.send(from, to, pkt, io);
        self.delay(mark, io);
    }
    fn handle_timeout(&mut self, timer: Timer, at: Time, io: &mut Io<'_, P>) {
        if timer == RELEASE {
            while self.held.front().is_some_and(|h| h.0 <= io.now) {
                if let Some((t, port, pkt)) = self.held.pop_front() {
                    io.deliver(port, pkt, t);
                }
            }
            if let Some(h) = self.held.front() {
                io.wake(RELEASE, h.0);
            }
            let _ = at;
            return;
        }
        let mark = io.actions_mut().len();
        self.inner.handle_timeout(timer, at, io);
        self.delay(mark, io);
    }
    fn stats(&self) -> LinkStats {
        let inner = self.inner.stats();
        LinkStats {
            harq_retransmissions: inner.harq_retransmissions + self.retransmissions,
            blocks: inner.blocks + self.blocks,
            block_bytes: inner.block_bytes + self.block_bytes,
            block_bytes_used: inner.block_bytes_used + self.block_bytes,
            ..inner
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{drive, Pkt, Seen};
    use crate::Wired;
    use l4s_aqm::{AqmConfig, FifoConfig};
    use l4s_core::Ecn;

    fn wire(delay_ms: u64) -> Box<dyn Link<Pkt>> {
        let fifo = AqmConfig::Fifo(FifoConfig {
            limit: 10_000,
            ..Default::default()
        });
        Box::new(Wired::new(
            Some(Rate::mbps(100)),
            Dur::from_millis(delay_ms),
            &fifo,
            None,
            Default::default(),
            Dur::from_millis(2),
            Rng::new(1),
        ))
    }

    fn pkt(id: u64) -> Pkt {
        Pkt {
            id,
            size: 1000,
            ecn: Ecn::Ect1,
        }
    }

    /// BLER 0.1, HARQ RTT 8 ms, light load: the mean added delay is 8·0.1/0.9 = 0.89 ms and
    /// about 10 % of the packets are at least 8 ms late, in steps of 8 ms.
    #[test]
    fn the_added_delay_has_the_geometric_law_of_retransmissions() {
        let cfg = HarqConfig {
            bler: 0.1,
            rtt: Dur::from_millis(8),
        };
        assert_eq!(cfg.mean_added(), Dur(888_888));
        let mut l = Harq::new(wire(5), cfg, Rng::new(3));
        // One packet every 50 ms: no block waits behind another.
        let n = 20_000u64;
        let offers = (0..n).map(|i| (Time::from_millis(50 * i), 0, 1, pkt(i))).collect();
        let out = drive(&mut l, offers, Time::from_secs(2_000), &mut Seen::default());
        assert_eq!(out.len() as u64, n, "HARQ loses nothing");
        // 5 ms of propagation and 80 us of serialisation.
        let added: Vec<u64> = out
            .iter()
            .map(|o| o.0.as_nanos() - 50_000_000 * o.2.id - 5_080_000)
            .collect();
        assert!(added.iter().all(|a| a % 8_000_000 == 0), "steps of the HARQ round trip");
        let mean = added.iter().sum::<u64>() as f64 / n as f64 / 1e6;
        assert!((mean - 0.889).abs() < 0.06, "mean added {mean} ms");
        let late = added.iter().filter(|&&a| a >= 8_000_000).count() as f64 / n as f64;
        assert!((late - 0.1).abs() < 0.01, "share delayed by a round trip {late}");
        // One block per packet here, every byte of it data, and about b/(1-b) = 0.11
        // retransmissions per block.
        let s = l.stats();
        assert_eq!((s.blocks, s.block_bytes, s.block_bytes_used), (n, n * 1000, n * 1000));
        let per_block = s.harq_retransmissions as f64 / s.blocks as f64;
        assert!((per_block - 0.111).abs() < 0.01, "{per_block}");
    }

    #[test]
    fn rlc_delivers_in_order_behind_a_retransmitted_block() {
        // Half the blocks (one packet each here) are retransmitted at least once; the
        // packets behind one wait for it.
        let cfg = HarqConfig {
            bler: 0.5,
            rtt: Dur::from_millis(8),
        };
        let mut l = Harq::new(wire(0), cfg, Rng::new(7));
        let offers = (0..200).map(|i| (Time::from_micros(200 * i), 0, 1, pkt(i))).collect();
        let out = drive(&mut l, offers, Time::from_secs(10), &mut Seen::default());
        assert_eq!(out.len(), 200);
        assert!(
            out.windows(2).all(|w| w[0].2.id < w[1].2.id && w[0].0 <= w[1].0),
            "in order"
        );
        // Some packets were held behind another's retransmission: handed on at the same time
        // as the block ahead of them, later than their own fate required.
        let bunched = out.windows(2).filter(|w| w[0].0 == w[1].0).count();
        assert!(bunched > 20, "{bunched} packets released together");
    }

    #[test]
    fn bad_parameters_name_their_key() {
        let c = |bler, rtt| HarqConfig { bler, rtt };
        assert_eq!(c(1.0, Dur::from_millis(8)).validate().unwrap_err().0, "bler");
        assert_eq!(c(-0.1, Dur::from_millis(8)).validate().unwrap_err().0, "bler");
        assert_eq!(c(0.991, Dur::from_millis(8)).validate().unwrap_err().0, "bler");
        assert_eq!(c(f64::NAN, Dur::from_millis(8)).validate().unwrap_err().0, "bler");
        assert_eq!(c(0.1, Dur::ZERO).validate().unwrap_err().0, "rtt");
        // 584 years overflowed `k·rtt` before it was refused.
        let (key, msg) = c(0.1, Dur(u64::MAX)).validate().unwrap_err();
        assert_eq!(key, "rtt");
        assert!(msg.contains("at most 1s"), "{msg}");
        assert_eq!(c(0.1, MAX_RTT + Dur(1)).validate().unwrap_err().0, "rtt");
        assert!(c(0.0, Dur::from_millis(4)).validate().is_ok());
        assert!(c(MAX_BLER, MAX_RTT).validate().is_ok());
    }
}
