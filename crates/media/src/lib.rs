//! # l4s-media
//!
//! Sans-IO real-time media over L4S: an encoder/source model with built-in profiles
//! ([`source`], [`config`]), two rate controllers — SCReAM v2 with and without L4S
//! ([`scream`], EricssonResearch/scream `ScreamV2Tx`) and RT-Prague, udp_prague's controller in
//! frame mode ([`rt_prague`], L4STeam/udp_prague `GetCCInfoVideo`) — RFC 8888 feedback
//! ([`rfc8888`]), ECN validation with fallback to a classic sender (RFC 9000 §13.4.2 style),
//! and per-frame metrics ([`frames`]).
//!
//! [`MediaSender`] and [`MediaReceiver`] implement [`l4s_transport::Endpoint`] with the
//! header [`MediaHeader`], so the simulator and the live testbed drive them like any other
//! endpoint ([`wire`] is their byte encoding on real sockets). Nothing here reads a clock,
//! opens a socket or draws unseeded randomness.

#![forbid(unsafe_code)]

pub mod config;
pub mod endpoint;
pub mod frames;
pub mod rfc8888;
pub mod rt_prague;
pub mod scream;
pub mod source;
pub mod wire;

pub use config::{
    AudioParams, Controller, CountConvention, FeedbackInterval, MediaConfig, MediaParams, CONTROLLERS, PROFILES,
};
pub use endpoint::{Feedback, MediaData, MediaHeader, MediaReceiver, MediaSender, MediaSenderStats};
pub use frames::{FrameDone, FrameInterval, FrameMeter, FrameMeterConfig, FrameSummary};
