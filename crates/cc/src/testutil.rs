//! A small deterministic ACK-clock harness for unit tests: one window-limited flow over an
//! ideal path with a fixed RTT and no capacity limit. Each packet is ACKed individually one
//! RTT after it was sent; a marking closure decides CE per packet. It emulates the
//! transport's CWR state (RFC 3168 §6.1.2 / AccECN): `on_ecn_congestion` at most once per
//! window, `on_recovery_exit` when `snd_una` passes the `snd_nxt` recorded at entry.

use crate::api::{AckSample, CongestionControl};
use l4s_core::{Dur, Time};
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug)]
struct InFlight {
    sent: Time,
    ack_at: Time,
    ce: bool,
    end_seq: u64,
    size: u64,
}

pub struct AckClock {
    pub mss: u64,
    pub rtt: Dur,
    pub now: Time,
    pub snd_una: u64,
    pub snd_nxt: u64,
    pub delivered: u64,
    pub delivered_ce: u64,
    pub delivered_bytes: u64,
    pub in_cwr: bool,
    cwr_end: u64,
    pub cwr_entries: u64,
    flight: VecDeque<InFlight>,
    started: bool,
    /// When true, the sender honours the controller's pacing rate between sends.
    pub paced: bool,
    next_send: Time,
    /// Optional bottleneck rate: packets serialise one after another (spreads the ACKs).
    pub link: Option<l4s_core::Rate>,
    link_free: Time,
    /// Random loss: each packet is lost with `p_loss` (drawn from `loss_rng`). The loss is
    /// detected when its ACK would have arrived (an idealised RACK), the transport enters
    /// Recovery once per window (`on_loss`), and the retransmission is assumed to succeed.
    pub p_loss: f64,
    pub loss_rng: Option<l4s_core::Rng>,
    pub in_recovery: bool,
    rec_end: u64,
    pub losses: u64,
    /// Step marking at the link: CE when the queueing delay at enqueue exceeds this.
    pub step_k: Option<Dur>,
    /// Queueing delays seen at enqueue (recorded when `record_qdelay`).
    pub qdelays: Vec<Dur>,
    pub record_qdelay: bool,
    /// A link shared with other clocks (its "free at" time); overrides the private one.
    pub shared_link: Option<std::rc::Rc<std::cell::Cell<Time>>>,
}

impl AckClock {
    pub fn new(mss: u64, rtt: Dur) -> AckClock {
        AckClock {
            mss,
            rtt,
            now: Time::ZERO,
            snd_una: 0,
            snd_nxt: 0,
            delivered: 0,
            delivered_ce: 0,
            delivered_bytes: 0,
            in_cwr: false,
            cwr_end: 0,
            cwr_entries: 0,
            flight: VecDeque::new(),
            started: false,
            paced: false,
            next_send: Time::ZERO,
            link: None,
            link_free: Time::ZERO,
            p_loss: 0.0,
            loss_rng: None,
            in_recovery: false,
            rec_end: 0,
            losses: 0,
            step_k: None,
            qdelays: Vec::new(),
            record_qdelay: false,
            shared_link: None,
        }
    }

    fn inflight(&self) -> u64 {
        self.snd_nxt - self.snd_una
    }

    fn send(&mut self, cc: &dyn CongestionControl) {
        let size = u64::from(cc.mss().unwrap_or(self.mss as u32)).max(1);
        // Always allow one packet when nothing is in flight (a window below one packet
        // still sends, as a real transport would after its timer).
        while self.inflight() + size <= cc.cwnd().max(size) {
            if self.paced && self.next_send > self.now {
                break;
            }
            self.snd_nxt += size;
            let mut ce = false;
            let depart = match self.link {
                Some(r) => {
                    if let Some(sh) = &self.shared_link {
                        self.link_free = sh.get();
                    }
                    let q = self.link_free.since(self.now);
                    if self.record_qdelay {
                        self.qdelays.push(q);
                    }
                    ce = self.step_k.is_some_and(|k| q > k);
                    self.link_free = self.link_free.max(self.now) + r.tx_time(size);
                    if let Some(sh) = &self.shared_link {
                        sh.set(self.link_free);
                    }
                    self.link_free
                }
                None => self.now,
            };
            self.flight.push_back(InFlight {
                sent: self.now,
                ack_at: depart + self.rtt,
                ce,
                end_seq: self.snd_nxt,
                size,
            });
            if self.paced {
                if let Some(r) = cc.pacing_rate(self.rtt, self.inflight()) {
                    self.next_send = self.now.max(self.next_send) + r.tx_time(size);
                }
            }
        }
    }

    /// Run the clock until `t_end` (inclusive). `mark(seq)` decides CE for each packet.
    pub fn run_until(&mut self, cc: &mut dyn CongestionControl, t_end: Time, mut mark: impl FnMut(u64) -> bool) {
        if !self.started {
            self.started = true;
            self.send(cc);
        }
        loop {
            let ack_t = match self.flight.front() {
                Some(p) => p.ack_at,
                None => {
                    // Nothing in flight (window below one packet): wake at pacing time.
                    self.now = self.now.max(self.next_send);
                    self.send(cc);
                    if self.flight.is_empty() {
                        return;
                    }
                    continue;
                }
            };
            let t = if self.paced && self.next_send < ack_t && self.next_send > self.now {
                self.next_send
            } else {
                ack_t
            };
            if t > t_end {
                self.now = t_end;
                return;
            }
            self.now = t;
            if t < ack_t {
                self.send(cc);
                continue;
            }
            let p = self.flight.pop_front().unwrap();
            let lost = match self.loss_rng.as_mut() {
                Some(r) => r.chance(self.p_loss),
                None => false,
            };
            if self.in_recovery && p.end_seq >= self.rec_end {
                self.in_recovery = false;
                cc.on_recovery_exit(self.now);
            }
            if lost {
                self.losses += 1;
                self.snd_una = p.end_seq;
                if !self.in_recovery {
                    cc.on_loss(self.now, self.inflight());
                    self.in_recovery = true;
                    self.rec_end = self.snd_nxt;
                }
                self.send(cc);
                continue;
            }
            let ce = mark(p.end_seq) || p.ce;
            let rtt = p.ack_at.since(p.sent);
            self.snd_una = p.end_seq;
            self.delivered += 1;
            self.delivered_bytes += p.size;
            if ce {
                self.delivered_ce += 1;
            }
            let mut s = AckSample {
                now: self.now,
                acked_bytes: p.size,
                acked_pkts: 1,
                ce_pkts: ce as u64,
                ce_bytes: if ce { p.size } else { 0 },
                ece: ce,
                rtt: Some(rtt),
                srtt: rtt,
                min_rtt: self.rtt,
                snd_una: self.snd_una,
                snd_nxt: self.snd_nxt,
                bytes_in_flight: self.inflight(),
                delivered_pkts: self.delivered,
                delivered_ce_pkts: self.delivered_ce,
                mss: p.size as u32,
                cwnd_limited: true,
                in_recovery: self.in_recovery,
                in_cwr: self.in_cwr,
                paced: true,
            };
            if self.in_cwr && self.snd_una >= self.cwr_end {
                self.in_cwr = false;
                s.in_cwr = false;
                cc.on_recovery_exit(self.now);
            }
            if ce && !self.in_cwr {
                cc.on_ecn_congestion(&s);
                self.in_cwr = true;
                self.cwr_end = self.snd_nxt;
                self.cwr_entries += 1;
                s.in_cwr = true;
            }
            cc.on_ack(&s);
            self.send(cc);
        }
    }

    /// Run exactly one RTT.
    pub fn round(&mut self, cc: &mut dyn CongestionControl, mark: impl FnMut(u64) -> bool) {
        let t = self.now + self.rtt;
        self.run_until(cc, t, mark);
    }
}

/// A sample for direct calls.
pub fn sample(now: Time, mss: u32) -> AckSample {
    AckSample {
        now,
        mss,
        cwnd_limited: true,
        srtt: Dur::from_millis(25),
        ..Default::default()
    }
}

/// Run several flows over one shared link (rate `link`, step marking at `k`), in slices of
/// `slice`; returns the bytes each delivered between `warm` and `end`.
#[allow(clippy::too_many_arguments)]
pub fn shared_run(
    ccs: &mut [&mut dyn CongestionControl],
    rtts: &[Dur],
    mss: u64,
    link: l4s_core::Rate,
    k: Dur,
    warm: Time,
    end: Time,
    slice: Dur,
) -> Vec<u64> {
    let shared = std::rc::Rc::new(std::cell::Cell::new(Time::ZERO));
    let mut clocks: Vec<AckClock> = rtts
        .iter()
        .map(|r| {
            let mut c = AckClock::new(mss, *r);
            c.paced = true;
            c.link = Some(link);
            c.step_k = Some(k);
            c.shared_link = Some(shared.clone());
            c
        })
        .collect();
    let mut base = vec![0u64; clocks.len()];
    let mut t = Time::ZERO;
    let mut warmed = false;
    let n = clocks.len();
    let mut round = 0usize;
    while t < end {
        t += slice;
        // Rotate which flow goes first in each slice so none is favoured at the link.
        for j in 0..n {
            let i = (round + j) % n;
            clocks[i].run_until(&mut *ccs[i], t, |_| false);
        }
        round += 1;
        if !warmed && t >= warm {
            warmed = true;
            for (b, c) in base.iter_mut().zip(&clocks) {
                *b = c.delivered_bytes;
            }
        }
    }
    clocks.iter().zip(base).map(|(c, b)| c.delivered_bytes - b).collect()
}
