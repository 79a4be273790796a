//! A tiny deterministic two-node path for driving an [`AppSender`] (node A, the source)
//! and an [`AppReceiver`] (node B) without the simulator: a fixed delay each way, an
//! optional rate with a FIFO of N packets per direction, optional constant-rate cross
//! traffic into the forward FIFO (to hold a standing queue), and drop filters.

#![allow(dead_code)]

use std::collections::VecDeque;

use l4s_apps::{AppConfig, AppHeader, AppReceiver, AppSender, Completion};
use l4s_core::{Dur, Ecn, Rate, Time};
use l4s_transport::Endpoint;

#[derive(Clone, Copy, Debug)]
pub enum Pkt {
    App(AppHeader),
    /// Cross traffic, absorbed at the far end.
    Cross,
}

/// One direction: FIFO + serialiser (if rated) + constant delay.
pub struct Link {
    pub delay: Dur,
    pub rate: Option<Rate>,
    pub limit: usize,
    /// Departure (end of serialisation) times of packets in the FIFO or being sent.
    backlog: VecDeque<Time>,
    busy_until: Time,
    /// Packets on the wire, in arrival order (FIFO + constant delay keeps it sorted).
    wire: VecDeque<(Time, Pkt, u32, Ecn)>,
    pub dropped: u64,
    /// A middlebox on the link rewriting the ECN field (bleaching, remarking).
    pub rewrite: Option<fn(Ecn) -> Ecn>,
}

impl Link {
    pub fn new(delay: Dur, rate: Option<Rate>, limit: usize) -> Link {
        Link {
            delay,
            rate,
            limit,
            backlog: VecDeque::new(),
            busy_until: Time::ZERO,
            wire: VecDeque::new(),
            dropped: 0,
            rewrite: None,
        }
    }
    /// Packets queued or in service at `now`.
    pub fn queued(&mut self, now: Time) -> usize {
        while self.backlog.front().is_some_and(|t| *t <= now) {
            self.backlog.pop_front();
        }
        self.backlog.len()
    }
    /// Queueing delay a packet arriving now would see before its own serialisation.
    pub fn queue_delay(&self, now: Time) -> Dur {
        self.busy_until - now
    }
    fn send(&mut self, now: Time, p: Pkt, size: u32, ecn: Ecn) {
        let ecn = self.rewrite.map_or(ecn, |f| f(ecn));
        let depart = match self.rate {
            None => now,
            Some(r) => {
                if self.queued(now) >= self.limit {
                    self.dropped += 1;
                    return;
                }
                let start = self.busy_until.max(now);
                self.busy_until = start + r.tx_time(size as u64);
                self.backlog.push_back(self.busy_until);
                self.busy_until
            }
        };
        self.wire.push_back((depart + self.delay, p, size, ecn));
    }
    fn next_arrival(&self) -> Option<Time> {
        self.wire.front().map(|x| x.0)
    }
}

/// What the trace records for each packet handed to a link.
#[derive(Clone, Copy, Debug)]
pub struct Sent {
    pub at: Time,
    pub forward: bool,
    pub header: AppHeader,
    pub size: u32,
    pub ecn: Ecn,
}

type Filter = Box<dyn FnMut(Time, &AppHeader) -> bool>;

pub struct Net {
    pub now: Time,
    pub snd: AppSender,
    pub rcv: AppReceiver,
    pub fwd: Link,
    pub rev: Link,
    /// Cross traffic into the forward link: (interval, frame size, next injection).
    pub cross: Option<(Dur, u32, Time)>,
    /// Return true to drop a packet the sender (forward) / receiver (reverse) emits.
    pub drop_fwd: Filter,
    pub drop_rev: Filter,
    pub trace: Vec<Sent>,
    pub completions: Vec<Completion>,
    /// When to call `close` on both endpoints.
    pub close_at: Option<Time>,
}

impl Net {
    /// An idle path with `one_way` delay each way and no rate limit.
    pub fn idle(cfg: &AppConfig, one_way: Dur) -> Net {
        Net::new(
            cfg,
            Link::new(one_way, None, usize::MAX),
            Link::new(one_way, None, usize::MAX),
        )
    }

    pub fn new(cfg: &AppConfig, fwd: Link, rev: Link) -> Net {
        Net {
            now: Time::ZERO,
            snd: AppSender::new(cfg, Time::ZERO).expect("valid app"),
            rcv: AppReceiver::new(cfg, Time::ZERO),
            fwd,
            rev,
            cross: None,
            drop_fwd: Box::new(|_, _| false),
            drop_rev: Box::new(|_, _| false),
            trace: Vec::new(),
            completions: Vec::new(),
            close_at: None,
        }
    }

    /// Fill the forward FIFO with `n` cross packets of `size` bytes now, and keep it at
    /// that depth with one more every `interval` (= the serialisation time at the link
    /// rate, so that the cross traffic alone neither grows nor drains the queue).
    pub fn standing_queue(&mut self, n: usize, size: u32, interval: Dur) {
        for _ in 0..n {
            self.fwd.send(self.now, Pkt::Cross, size, Ecn::NotEct);
        }
        self.cross = Some((interval, size, self.now + interval));
    }

    /// Inject a packet as if emitted by the receiver (reverse path) now.
    pub fn inject_rev(&mut self, h: AppHeader, size: u32) {
        self.rev.send(self.now, Pkt::App(h), size, Ecn::NotEct);
    }

    fn flush(&mut self) {
        let now = self.now;
        while let Some(t) = self.snd.poll_transmit(now) {
            self.trace.push(Sent {
                at: now,
                forward: true,
                header: t.header,
                size: t.size,
                ecn: t.ecn,
            });
            if !(self.drop_fwd)(now, &t.header) {
                self.fwd.send(now, Pkt::App(t.header), t.size, t.ecn);
            }
        }
        while let Some(t) = self.rcv.poll_transmit(now) {
            self.trace.push(Sent {
                at: now,
                forward: false,
                header: t.header,
                size: t.size,
                ecn: t.ecn,
            });
            if !(self.drop_rev)(now, &t.header) {
                self.rev.send(now, Pkt::App(t.header), t.size, t.ecn);
            }
        }
        self.rcv.drain_completions(&mut self.completions);
    }

    /// Run until `end` (inclusive of events at `end`).
    pub fn run_until(&mut self, end: Time) {
        let mut spins = 0u32;
        loop {
            self.flush();
            let mut next: Option<Time> = None;
            let mut take = |x: Option<Time>| {
                if let Some(x) = x {
                    next = Some(next.map_or(x, |y: Time| y.min(x)));
                }
            };
            take(self.fwd.next_arrival());
            take(self.rev.next_arrival());
            take(self.snd.poll_timeout());
            take(self.rcv.poll_timeout());
            take(self.cross.map(|c| c.2));
            take(self.close_at);
            let Some(t) = next else {
                self.now = end;
                return;
            };
            if t > end {
                self.now = end;
                return;
            }
            let t = t.max(self.now);
            if t == self.now {
                spins += 1;
                assert!(spins < 100_000, "no progress at {}", self.now);
            } else {
                spins = 0;
            }
            self.now = t;
            let now = t;
            if self.close_at.is_some_and(|c| c <= now) {
                self.close_at = None;
                self.snd.close(now);
                self.rcv.close(now);
            }
            if let Some((iv, size, at)) = self.cross {
                if at <= now {
                    self.fwd.send(now, Pkt::Cross, size, Ecn::NotEct);
                    self.cross = Some((iv, size, at + iv));
                }
            }
            // One packet per step, then both endpoints are polled (as the simulator does),
            // so that packets arriving together are still acknowledged one by one.
            if self.fwd.next_arrival().is_some_and(|a| a <= now) {
                let (_, p, size, ecn) = self.fwd.wire.pop_front().unwrap();
                if let Pkt::App(h) = p {
                    self.rcv.handle_packet(now, &h, size, ecn);
                }
                continue;
            }
            if self.rev.next_arrival().is_some_and(|a| a <= now) {
                let (_, p, size, ecn) = self.rev.wire.pop_front().unwrap();
                if let Pkt::App(h) = p {
                    self.snd.handle_packet(now, &h, size, ecn);
                }
                continue;
            }
            if self.snd.poll_timeout().is_some_and(|x| x <= now) {
                self.snd.handle_timeout(now);
            }
            if self.rcv.poll_timeout().is_some_and(|x| x <= now) {
                self.rcv.handle_timeout(now);
            }
        }
    }

    pub fn of(&self, what: l4s_apps::CompletionKind) -> Vec<Completion> {
        self.completions.iter().filter(|c| c.what == what).copied().collect()
    }
}

pub fn ms(x: u64) -> Dur {
    Dur::from_millis(x)
}

pub fn t_ms(x: u64) -> Time {
    Time::from_millis(x)
}

/// Milliseconds as f64, for messages and tolerances.
pub fn f_ms(d: Dur) -> f64 {
    d.as_millis_f64()
}

/// Parse an app table written in TOML.
pub fn cfg(toml_text: &str) -> AppConfig {
    toml::from_str(toml_text).expect("valid app config")
}
