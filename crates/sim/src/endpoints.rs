//! The endpoints of a flow, behind one enum so that the event loop dispatches without
//! trait objects and each endpoint keeps its own header type.

use crate::packet::{Payload, PayloadId, Payloads};
use l4s_apps::{AppReceiver, AppSender};
use l4s_core::{Dur, Ecn, Time};
use l4s_media::{MediaHeader, MediaReceiver, MediaSender};
use l4s_scenario::FlowKind;
use l4s_transport::probe::{ProbeReceiver, ProbeSender};
use l4s_transport::tcp::{TcpReceiver, TcpSender};
use l4s_transport::udp_prague::{UdpPragueReceiver, UdpPragueSender};
use l4s_transport::{Endpoint, EndpointStats};

pub enum Ep {
    TcpS(Box<TcpSender>),
    TcpR(Box<TcpReceiver>),
    UdpS(Box<UdpPragueSender>),
    UdpR(Box<UdpPragueReceiver>),
    ProbeS(Box<ProbeSender>),
    ProbeR(Box<ProbeReceiver>),
    MediaS(Box<MediaSender>),
    MediaR(Box<MediaReceiver>),
    AppS(Box<AppSender>),
    AppR(Box<AppReceiver>),
}

/// A packet an endpoint emitted, before the simulator wraps it: its transport header is
/// already in the [`Payloads`] slab, put there as it came out of the endpoint (one copy of
/// the header fewer than handing it on by value).
pub struct Out {
    pub payload: PayloadId,
    pub size: u32,
    pub ecn: Ecn,
    pub is_data: bool,
}

macro_rules! each {
    ($self:expr, $e:ident => $body:expr) => {
        match $self {
            Ep::TcpS($e) => $body,
            Ep::TcpR($e) => $body,
            Ep::UdpS($e) => $body,
            Ep::UdpR($e) => $body,
            Ep::ProbeS($e) => $body,
            Ep::ProbeR($e) => $body,
            Ep::MediaS($e) => $body,
            Ep::MediaR($e) => $body,
            Ep::AppS($e) => $body,
            Ep::AppR($e) => $body,
        }
    };
}

impl Ep {
    /// Build the sender and receiver of a flow at its start time. `seed` feeds the
    /// endpoints that draw random numbers (media scene complexity, sync pauses).
    pub fn pair(kind: &FlowKind, now: Time, seed: u64) -> Result<(Ep, Ep), String> {
        Ok(match kind {
            FlowKind::Tcp {
                cc,
                ecn,
                bytes,
                sender,
                receiver,
                cc_params,
            } => {
                // The scenario loader already folded `ecn` into the parameters.
                let _ = ecn;
                let ctl = l4s_cc::factory::build(cc, cc_params)?;
                let mut cfg = sender.clone();
                if let Some(b) = bytes {
                    cfg.bytes = Some(*b);
                }
                (
                    Ep::TcpS(Box::new(TcpSender::new(cfg, ctl, now))),
                    Ep::TcpR(Box::new(TcpReceiver::new(receiver.clone()))),
                )
            }
            FlowKind::UdpPrague { sender, receiver } => (
                Ep::UdpS(Box::new(UdpPragueSender::new(sender.clone(), now))),
                Ep::UdpR(Box::new(UdpPragueReceiver::new(receiver.clone()))),
            ),
            FlowKind::Media { params } => (
                Ep::MediaS(Box::new(MediaSender::new(params, l4s_core::Rng::new(seed), now))),
                Ep::MediaR(Box::new(MediaReceiver::new(params, now))),
            ),
            FlowKind::App { cfg } => {
                let mut cfg = (**cfg).clone();
                cfg.seed = seed;
                (
                    Ep::AppS(Box::new(AppSender::new(&cfg, now)?)),
                    Ep::AppR(Box::new(AppReceiver::new(&cfg, now))),
                )
            }
            FlowKind::Probe { sender, .. } => (
                Ep::ProbeS(Box::new(ProbeSender::new(sender.clone(), now))),
                Ep::ProbeR(Box::new(ProbeReceiver::new())),
            ),
        })
    }

    /// Hand a packet to this endpoint. Packets of another transport are ignored.
    #[inline]
    pub fn handle(&mut self, now: Time, p: &Payload, size: u32, ecn: Ecn) {
        match (self, p) {
            (Ep::TcpS(e), Payload::Tcp(h)) => e.handle_packet(now, h, size, ecn),
            (Ep::TcpR(e), Payload::Tcp(h)) => e.handle_packet(now, h, size, ecn),
            (Ep::UdpS(e), Payload::UdpPrague(h)) => e.handle_packet(now, h, size, ecn),
            (Ep::UdpR(e), Payload::UdpPrague(h)) => e.handle_packet(now, h, size, ecn),
            (Ep::ProbeS(e), Payload::Probe(h)) => e.handle_packet(now, h, size, ecn),
            (Ep::ProbeR(e), Payload::Probe(h)) => e.handle_packet(now, h, size, ecn),
            (Ep::MediaS(e), Payload::Media(h)) => e.handle_packet(now, h, size, ecn),
            (Ep::MediaR(e), Payload::Media(h)) => e.handle_packet(now, h, size, ecn),
            (Ep::AppS(e), Payload::App(h)) => e.handle_packet(now, h, size, ecn),
            (Ep::AppR(e), Payload::App(h)) => e.handle_packet(now, h, size, ecn),
            _ => {}
        }
    }

    /// The next packet to send now, or when there is none, when to be called next
    /// ([`Endpoint::poll_transmit_or_timeout`]).
    #[inline]
    pub fn poll_or_timeout(&mut self, now: Time, slab: &mut Payloads) -> Result<Out, Option<Time>> {
        match self {
            Ep::TcpS(e) => e.poll_transmit_or_timeout(now).map(|t| Out {
                is_data: t.header.len > 0,
                payload: slab.insert(Payload::Tcp(t.header)),
                size: t.size,
                ecn: t.ecn,
            }),
            Ep::TcpR(e) => e.poll_transmit_or_timeout(now).map(|t| Out {
                is_data: t.header.len > 0,
                payload: slab.insert(Payload::Tcp(t.header)),
                size: t.size,
                ecn: t.ecn,
            }),
            Ep::UdpS(e) => e.poll_transmit_or_timeout(now).map(|t| Out {
                is_data: true,
                payload: slab.insert(Payload::UdpPrague(t.header)),
                size: t.size,
                ecn: t.ecn,
            }),
            Ep::UdpR(e) => e.poll_transmit_or_timeout(now).map(|t| Out {
                is_data: false,
                payload: slab.insert(Payload::UdpPrague(t.header)),
                size: t.size,
                ecn: t.ecn,
            }),
            Ep::ProbeS(e) => e.poll_transmit_or_timeout(now).map(|t| Out {
                is_data: true,
                payload: slab.insert(Payload::Probe(t.header)),
                size: t.size,
                ecn: t.ecn,
            }),
            Ep::ProbeR(e) => e.poll_transmit_or_timeout(now).map(|t| Out {
                is_data: false,
                payload: slab.insert(Payload::Probe(t.header)),
                size: t.size,
                ecn: t.ecn,
            }),
            Ep::MediaS(e) => e.poll_transmit_or_timeout(now).map(|t| Out {
                is_data: matches!(t.header, MediaHeader::Data(_)),
                payload: slab.insert(Payload::Media(t.header)),
                size: t.size,
                ecn: t.ecn,
            }),
            Ep::MediaR(e) => e.poll_transmit_or_timeout(now).map(|t| Out {
                is_data: false,
                payload: slab.insert(Payload::Media(t.header)),
                size: t.size,
                ecn: t.ecn,
            }),
            Ep::AppS(e) => e.poll_transmit_or_timeout(now).map(|t| Out {
                is_data: t.header.is_data(),
                payload: slab.insert(Payload::App(t.header)),
                size: t.size,
                ecn: t.ecn,
            }),
            Ep::AppR(e) => e.poll_transmit_or_timeout(now).map(|t| Out {
                is_data: false,
                payload: slab.insert(Payload::App(t.header)),
                size: t.size,
                ecn: t.ecn,
            }),
        }
    }

    #[inline]
    pub fn poll_timeout(&self) -> Option<Time> {
        each!(self, e => e.poll_timeout())
    }
    #[inline]
    pub fn handle_timeout(&mut self, now: Time) {
        each!(self, e => e.handle_timeout(now))
    }
    pub fn close(&mut self, now: Time) {
        each!(self, e => e.close(now))
    }
    pub fn stats(&self) -> EndpointStats {
        each!(self, e => e.stats())
    }
    #[inline]
    pub fn take_rtt_sample(&mut self) -> Option<Dur> {
        each!(self, e => e.take_rtt_sample())
    }
}
