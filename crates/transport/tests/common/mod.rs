//! A small deterministic in-memory network for endpoint tests: one FIFO bottleneck (rate,
//! one-way delay, byte queue limit, random loss, random or step CE marking) per direction.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use l4s_cc::{AckSample, CongestionControl, EcnMode};
use l4s_core::{Dur, Ecn, Rate, Rng, Time};
use l4s_transport::{Endpoint, Transmit};

pub type DropFn<H> = Box<dyn FnMut(Time, &H) -> bool>;

#[derive(Clone, Debug)]
pub struct PathCfg {
    /// Bottleneck rate; zero = infinitely fast.
    pub rate: Rate,
    pub delay: Dur,
    /// Queue limit in bytes (0 = unlimited).
    pub queue_limit: u64,
    pub loss: f64,
    pub ce_prob: f64,
    /// Mark ECT packets CE when the queue delay exceeds this.
    pub ce_step: Option<Dur>,
    pub seed: u64,
}

impl Default for PathCfg {
    fn default() -> Self {
        PathCfg {
            rate: Rate::ZERO,
            delay: Dur::ZERO,
            queue_limit: 0,
            loss: 0.0,
            ce_prob: 0.0,
            ce_step: None,
            seed: 1,
        }
    }
}

pub struct Link<H> {
    pub cfg: PathCfg,
    busy_until: Time,
    rng: Rng,
    q: VecDeque<(Time, H, u32, Ecn)>,
    pub drop_fn: Option<DropFn<H>>,
    pub offered: u64,
    pub random_drops: u64,
    pub queue_drops: u64,
    pub forced_drops: u64,
    pub ce_marks: u64,
    pub max_qdelay: Dur,
    pub sum_qdelay: Dur,
    pub enqueued: u64,
    /// (send time, size) of every packet offered, if `log` is set.
    pub log: Option<Vec<(Time, H, u32, Ecn)>>,
}

impl<H: Clone> Link<H> {
    pub fn new(cfg: PathCfg) -> Self {
        Link {
            rng: Rng::new(cfg.seed),
            cfg,
            busy_until: Time::ZERO,
            q: VecDeque::new(),
            drop_fn: None,
            offered: 0,
            random_drops: 0,
            queue_drops: 0,
            forced_drops: 0,
            ce_marks: 0,
            max_qdelay: Dur::ZERO,
            sum_qdelay: Dur::ZERO,
            enqueued: 0,
            log: None,
        }
    }
    /// Mean queueing delay seen by enqueued packets since the last reset.
    pub fn mean_qdelay(&self) -> Dur {
        self.sum_qdelay / self.enqueued
    }
    pub fn reset_qdelay(&mut self) {
        self.max_qdelay = Dur::ZERO;
        self.sum_qdelay = Dur::ZERO;
        self.enqueued = 0;
    }
    pub fn drops(&self) -> u64 {
        self.random_drops + self.queue_drops + self.forced_drops
    }
    pub fn send(&mut self, now: Time, t: Transmit<H>) {
        self.offered += 1;
        if let Some(l) = &mut self.log {
            l.push((now, t.header.clone(), t.size, t.ecn));
        }
        if let Some(f) = &mut self.drop_fn {
            if f(now, &t.header) {
                self.forced_drops += 1;
                return;
            }
        }
        if self.cfg.loss > 0.0 && self.rng.chance(self.cfg.loss) {
            self.random_drops += 1;
            return;
        }
        let qdelay = self.busy_until - now;
        if self.cfg.rate.0 > 0
            && self.cfg.queue_limit > 0
            && self.cfg.rate.bytes_in(qdelay) + t.size as u64 > self.cfg.queue_limit
        {
            self.queue_drops += 1;
            return;
        }
        self.max_qdelay = self.max_qdelay.max(qdelay);
        self.sum_qdelay += qdelay;
        self.enqueued += 1;
        let mut ecn = t.ecn;
        if ecn.is_ect() && ecn != Ecn::Ce {
            let mark = (self.cfg.ce_prob > 0.0 && self.rng.chance(self.cfg.ce_prob))
                || self.cfg.ce_step.is_some_and(|s| qdelay > s);
            if mark {
                ecn = Ecn::Ce;
                self.ce_marks += 1;
            }
        }
        let dep = if self.cfg.rate.0 > 0 {
            now.max(self.busy_until) + self.cfg.rate.tx_time(t.size as u64)
        } else {
            now
        };
        self.busy_until = dep;
        self.q.push_back((dep + self.cfg.delay, t.header, t.size, ecn));
    }
    fn next_arrival(&self) -> Option<Time> {
        self.q.front().map(|x| x.0)
    }
    fn pop_due(&mut self, now: Time) -> Option<(H, u32, Ecn)> {
        if self.q.front().is_some_and(|x| x.0 <= now) {
            self.q.pop_front().map(|(_, h, s, e)| (h, s, e))
        } else {
            None
        }
    }
}

/// Sender `s` → forward link → receiver `r` → reverse link → `s`.
pub struct Net<H, S: Endpoint<Header = H>, R: Endpoint<Header = H>> {
    pub now: Time,
    pub s: S,
    pub r: R,
    pub fwd: Link<H>,
    pub rev: Link<H>,
}

fn min_opt(a: Option<Time>, b: Option<Time>) -> Option<Time> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

impl<H: Clone, S: Endpoint<Header = H>, R: Endpoint<Header = H>> Net<H, S, R> {
    pub fn new(s: S, r: R, fwd: PathCfg, rev: PathCfg) -> Self {
        Net {
            now: Time::ZERO,
            s,
            r,
            fwd: Link::new(fwd),
            rev: Link::new(rev),
        }
    }

    fn flush(&mut self) {
        loop {
            let mut any = false;
            // The sender drained as the simulator drains it; every answer it gives instead
            // of a packet must be the one `poll_timeout` gives then.
            loop {
                match self.s.poll_transmit_or_timeout(self.now) {
                    Ok(t) => {
                        self.fwd.send(self.now, t);
                        any = true;
                    }
                    Err(timeout) => {
                        assert_eq!(timeout, self.s.poll_timeout(), "the sender's timer at {}", self.now);
                        break;
                    }
                }
            }
            while let Some(t) = self.r.poll_transmit(self.now) {
                self.rev.send(self.now, t);
                any = true;
            }
            if !any {
                break;
            }
        }
    }

    /// Run until `end` or until `stop` holds (checked after every event).
    pub fn run_until(&mut self, end: Time, mut stop: impl FnMut(&mut Self) -> bool) {
        self.flush();
        let mut spins = 0u32;
        loop {
            if stop(self) {
                return;
            }
            let next = min_opt(
                min_opt(self.fwd.next_arrival(), self.rev.next_arrival()),
                min_opt(self.s.poll_timeout(), self.r.poll_timeout()),
            );
            let Some(next) = next else {
                self.now = end;
                return;
            };
            if next > end {
                self.now = end;
                return;
            }
            if next <= self.now {
                spins += 1;
                assert!(spins < 100_000, "event loop stuck at {}", self.now);
            } else {
                spins = 0;
            }
            self.now = self.now.max(next);
            let now = self.now;
            while let Some((h, size, ecn)) = self.fwd.pop_due(now) {
                self.r.handle_packet(now, &h, size, ecn);
                self.flush();
            }
            while let Some((h, size, ecn)) = self.rev.pop_due(now) {
                self.s.handle_packet(now, &h, size, ecn);
                self.flush();
            }
            if self.s.poll_timeout().is_some_and(|t| t <= now) {
                self.s.handle_timeout(now);
            }
            if self.r.poll_timeout().is_some_and(|t| t <= now) {
                self.r.handle_timeout(now);
            }
            self.flush();
        }
    }
}

/// Log of controller events shared with the test.
#[derive(Debug, Default, Clone)]
pub struct CcLog {
    pub negotiated: Option<EcnMode>,
    pub ecn_events: Vec<Time>,
    pub losses: Vec<Time>,
    pub rtos: Vec<Time>,
    pub exits: u64,
    pub acks: u64,
    pub ce_pkts: u64,
    pub acked_pkts: u64,
}

/// A minimal Reno (RFC 5681) with classic/AccECN halving, for tests only.
#[derive(Debug)]
pub struct MiniReno {
    pub request: EcnMode,
    pub mode: EcnMode,
    pub cwnd: u64,
    pub ssthresh: u64,
    pub mss: u64,
    /// `None`: the trait's default pacing; `Some(None)`: unpaced; `Some(Some(r))`: fixed.
    pub pacing: Option<Option<Rate>>,
    /// Fixed window: never change cwnd.
    pub fixed: bool,
    /// Segments per paced burst (`tso_segs`); `None`: the transport's autosizing.
    pub tso: Option<u32>,
    pub log: Arc<Mutex<CcLog>>,
}

impl MiniReno {
    pub fn new(request: EcnMode) -> (Self, Arc<Mutex<CcLog>>) {
        let log = Arc::new(Mutex::new(CcLog::default()));
        (
            MiniReno {
                request,
                mode: EcnMode::Off,
                cwnd: 10 * 1448,
                ssthresh: u64::MAX,
                mss: 1448,
                pacing: Some(None),
                fixed: false,
                tso: None,
                log: log.clone(),
            },
            log,
        )
    }
    pub fn boxed(request: EcnMode) -> (Box<dyn CongestionControl>, Arc<Mutex<CcLog>>) {
        let (c, l) = Self::new(request);
        (Box::new(c), l)
    }
    fn halve(&mut self, base: u64) {
        if self.fixed {
            return;
        }
        self.ssthresh = (base / 2).max(2 * self.mss);
        self.cwnd = self.ssthresh;
    }
}

impl CongestionControl for MiniReno {
    fn name(&self) -> &'static str {
        "mini-reno"
    }
    fn ecn_request(&self) -> EcnMode {
        self.request
    }
    fn on_ecn_negotiated(&mut self, mode: EcnMode) {
        self.mode = mode;
        self.log.lock().unwrap().negotiated = Some(mode);
    }
    fn data_ecn(&self) -> Ecn {
        match self.mode {
            EcnMode::Off => Ecn::NotEct,
            EcnMode::Classic => Ecn::Ect0,
            EcnMode::Accurate { ect } => ect,
        }
    }
    fn on_ack(&mut self, s: &AckSample) {
        {
            let mut l = self.log.lock().unwrap();
            l.acks += 1;
            l.ce_pkts += s.ce_pkts;
            l.acked_pkts += s.acked_pkts;
        }
        if self.fixed || s.in_recovery || !s.cwnd_limited {
            return;
        }
        if self.cwnd < self.ssthresh {
            self.cwnd += s.acked_bytes.min(2 * self.mss);
        } else {
            self.cwnd += (s.acked_bytes * self.mss / self.cwnd).max(1);
        }
    }
    fn on_ecn_congestion(&mut self, s: &AckSample) {
        self.log.lock().unwrap().ecn_events.push(s.now);
        self.halve(self.cwnd);
    }
    fn on_loss(&mut self, now: Time, bytes_in_flight: u64) {
        self.log.lock().unwrap().losses.push(now);
        let _ = bytes_in_flight;
        self.halve(self.cwnd);
    }
    fn on_recovery_exit(&mut self, _now: Time) {
        self.log.lock().unwrap().exits += 1;
    }
    fn on_rto(&mut self, now: Time) {
        self.log.lock().unwrap().rtos.push(now);
        if !self.fixed {
            self.ssthresh = (self.cwnd / 2).max(2 * self.mss);
            self.cwnd = self.mss;
        }
    }
    fn on_undo(&mut self, _now: Time) {}
    fn cwnd(&self) -> u64 {
        self.cwnd
    }
    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }
    fn tso_segs(&self) -> Option<u32> {
        self.tso
    }
    fn pacing_rate(&self, srtt: Dur, _bif: u64) -> Option<Rate> {
        match self.pacing {
            Some(p) => p,
            None => {
                if srtt.is_zero() {
                    return None;
                }
                let f = if self.cwnd < self.ssthresh { 2.0 } else { 1.2 };
                Some(Rate::from_bytes_per_sec(self.cwnd as f64 * f / srtt.as_secs_f64()))
            }
        }
    }
}
