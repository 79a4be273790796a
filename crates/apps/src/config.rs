//! The configuration of an application flow, as written in a scenario's flow table, and
//! its validation.
//!
//! One flat table for every kind: `kind` says which keys apply, and [`AppConfig::validate`]
//! rejects a key that does not apply to the kind, naming it (a flat table keeps
//! `deny_unknown_fields` working, which serde cannot do through `flatten`).
//!
//! Schedules (every kind but `sync`): `repeat = "D"` (alias `interval`) starts a new
//! instance (transfer, request, page, query) every D whatever the previous ones are doing
//! (open loop); `think = "D"` starts the next one D after the previous one completed (closed
//! loop). `count` bounds the number of instances; it defaults to 1 without `repeat` or
//! `think` and to "until the flow stops" with either. `sync` sends `count` chunks (default:
//! until the flow stops) with `pause` (or a uniform draw in `[pause, pause_max]`) between the
//! acknowledgement of one chunk and the offer of the next.

/// The most objects one page may have (`objects`, `object_sizes`): each is a transfer with
/// its own state, so the bound keeps a page's memory bounded.
pub const MAX_OBJECTS: u32 = 100_000;

/// The shortest `repeat`: instances started faster than they can complete would pile up
/// in memory for as long as the run goes.
pub const MIN_INTERVAL: Dur = Dur::from_millis(1);

use l4s_cc::factory::{CcParams, NAMES as CC_NAMES};
use l4s_cc::CongestionControl;
use l4s_core::{Dur, Ecn};
use l4s_transport::tcp::{TcpConfig, TcpReceiverConfig, DATA_OVERHEAD};
use serde::Deserialize;

/// Largest UDP payload in one 1500-byte IP packet (1500 − 20 IP − 8 UDP): the limit of a
/// query and of its reply.
pub const MAX_UDP_PAYLOAD: u64 = 1472;
/// Ethernet + IPv4 + UDP header bytes of a query or reply frame.
pub const UDP_OVERHEAD: u32 = 14 + 20 + 8;
/// Smallest Ethernet frame counted (60 bytes without FCS).
pub const MIN_FRAME: u32 = 60;

/// A size in bytes: an integer, or text with a unit (`"100KB"`, `"480MB"`, `"64KiB"`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Size(pub u64);

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Size;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a size in bytes, such as 1500, \"100KB\" or \"480MB\"")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Size, E> {
                Ok(Size(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Size, E> {
                u64::try_from(v).map(Size).map_err(|_| {
                    E::custom(format!(
                        "expected a size in bytes, found {v} (sizes cannot be negative)"
                    ))
                })
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Size, E> {
                l4s_core::units::parse_bytes(v).map(Size).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// What the application does (`kind = "..."`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AppKind {
    /// A transfer of `bytes` over a new connection (a CDN download, an OS update).
    Bulk,
    /// Chunks of `chunk` bytes with application pauses, over one persistent connection.
    Sync,
    /// Requests of `request` bytes answered by `response` bytes.
    RequestResponse,
    /// Page loads of `objects` over `connections` parallel connections.
    Web,
    /// DNS-like UDP queries with a one-packet reply, retried after a timeout.
    Query,
}

impl AppKind {
    pub const NAMES: &'static [&'static str] = &["bulk", "sync", "request-response", "web", "query"];
    pub fn name(self) -> &'static str {
        match self {
            AppKind::Bulk => "bulk",
            AppKind::Sync => "sync",
            AppKind::RequestResponse => "request-response",
            AppKind::Web => "web",
            AppKind::Query => "query",
        }
    }
}

/// ECN use (`ecn = "..."`), with the meanings of a `tcp` flow's `ecn` key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AppEcn {
    /// What the controller asks for: AccECN for prague and dctcp, off for reno and cubic.
    #[default]
    Auto,
    #[serde(alias = "none")]
    Off,
    /// RFC 3168 (reno, cubic).
    #[serde(alias = "rfc3168")]
    Classic,
    /// AccECN, RFC 9768 (prague, dctcp).
    #[serde(alias = "accurate")]
    Accecn,
}

/// An application flow's configuration (see the module documentation for the keys).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AppConfig {
    pub kind: AppKind,
    /// Congestion control of the connections (`reno`, `cubic`, `dctcp`, `prague`). For a
    /// `query` app it only chooses the codepoint (prague: ECT(1)).
    #[serde(default = "default_cc")]
    pub cc: String,
    #[serde(default)]
    pub ecn: AppEcn,
    /// The controller's parameters from the flow's `cc_params` (set by the scenario
    /// loader; not a key of the app table). `mss` and the initial window are the app's.
    #[serde(skip)]
    pub cc_params: Option<CcParams>,
    /// Initial window in segments (RFC 6928: 10).
    #[serde(default = "default_iw")]
    pub initial_cwnd: u32,
    /// bulk: bytes per transfer.
    #[serde(default)]
    pub bytes: Option<Size>,
    /// sync: bytes per chunk.
    #[serde(default)]
    pub chunk: Option<Size>,
    /// sync: pause between the acknowledgement of a chunk and the offer of the next.
    #[serde(default)]
    pub pause: Option<Dur>,
    /// sync: if given, pauses are uniform in `[pause, pause_max]` (drawn from the app's
    /// seeded [`l4s_core::Rng`]).
    #[serde(default)]
    pub pause_max: Option<Dur>,
    /// Request payload bytes (one packet). Default 300 (an HTTP/1.1 GET) for the TCP kinds,
    /// 64 for `query` (a DNS question with EDNS(0)).
    #[serde(default)]
    pub request: Option<Size>,
    /// request-response: response bytes (required); query: reply payload bytes (default 256,
    /// at most one packet).
    #[serde(default)]
    pub response: Option<Size>,
    /// request-response: keep one connection for all requests (default true) or open a new
    /// one per request.
    #[serde(default)]
    pub persistent: Option<bool>,
    /// web: number of objects per page, each `object_size` bytes.
    #[serde(default)]
    pub objects: Option<u32>,
    #[serde(default)]
    pub object_size: Option<Size>,
    /// web: explicit object sizes (instead of `objects` and `object_size`).
    #[serde(default)]
    pub object_sizes: Option<Vec<Size>>,
    /// web: parallel connections per page (default 6, the HTTP/1.1 per-host limit of
    /// current browsers).
    #[serde(default)]
    pub connections: Option<u32>,
    /// Open loop: a new instance every D.
    #[serde(default, alias = "interval")]
    pub repeat: Option<Dur>,
    /// Closed loop: the next instance D after the previous one completed.
    #[serde(default)]
    pub think: Option<Dur>,
    /// Number of instances (transfers, requests, pages, queries; chunks for sync).
    #[serde(default)]
    pub count: Option<u32>,
    /// First retry timeout of a request or query with no answer yet (default 1 s; see
    /// [`crate::DEFAULT_TIMEOUT`]).
    #[serde(default)]
    pub timeout: Option<Dur>,
    /// Seed of the app's random source (sync pauses); the simulator derives it from the
    /// run seed and the flow.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// TCP sender options of every connection (`bytes` must not be set: sizes are the app's).
    #[serde(default)]
    pub tcp: TcpConfig,
    /// TCP receiver options of every connection.
    #[serde(default)]
    pub receiver: TcpReceiverConfig,
}

fn default_cc() -> String {
    "cubic".to_string()
}
fn default_iw() -> u32 {
    10
}
fn default_seed() -> u64 {
    1
}

/// An invalid configuration: the key (relative to the app table, dotted for nested keys)
/// and what was expected.
pub type ConfigError = (String, String);

fn err<T>(key: &str, what: impl Into<String>) -> Result<T, ConfigError> {
    Err((key.to_string(), what.into()))
}

impl AppConfig {
    /// A configuration of `kind` with every optional key absent (programmatic use).
    pub fn new(kind: AppKind) -> AppConfig {
        AppConfig {
            kind,
            cc: default_cc(),
            ecn: AppEcn::Auto,
            cc_params: None,
            initial_cwnd: default_iw(),
            bytes: None,
            chunk: None,
            pause: None,
            pause_max: None,
            request: None,
            response: None,
            persistent: None,
            objects: None,
            object_size: None,
            object_sizes: None,
            connections: None,
            repeat: None,
            think: None,
            count: None,
            timeout: None,
            seed: default_seed(),
            tcp: TcpConfig::default(),
            receiver: TcpReceiverConfig::default(),
        }
    }

    /// Check the configuration for a run of length `run`. The error names the key and says
    /// what was expected.
    pub fn validate(&self, run: Dur) -> Result<(), ConfigError> {
        let kind = self.kind.name();
        let applies = |key: &str, present: bool, kinds: &[AppKind]| -> Result<(), ConfigError> {
            if present && !kinds.contains(&self.kind) {
                let names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
                return err(
                    key,
                    format!("`{key}` does not apply to a {kind} app (only to {})", names.join(", ")),
                );
            }
            Ok(())
        };
        use AppKind::*;
        applies("bytes", self.bytes.is_some(), &[Bulk])?;
        applies("chunk", self.chunk.is_some(), &[Sync])?;
        applies("pause", self.pause.is_some(), &[Sync])?;
        applies("pause_max", self.pause_max.is_some(), &[Sync])?;
        applies("request", self.request.is_some(), &[Bulk, RequestResponse, Web, Query])?;
        applies("response", self.response.is_some(), &[RequestResponse, Query])?;
        applies("persistent", self.persistent.is_some(), &[RequestResponse])?;
        applies("objects", self.objects.is_some(), &[Web])?;
        applies("object_size", self.object_size.is_some(), &[Web])?;
        applies("object_sizes", self.object_sizes.is_some(), &[Web])?;
        applies("connections", self.connections.is_some(), &[Web])?;
        applies("repeat", self.repeat.is_some(), &[Bulk, RequestResponse, Web, Query])?;
        applies("think", self.think.is_some(), &[Bulk, RequestResponse, Web, Query])?;
        applies("timeout", self.timeout.is_some(), &[Bulk, RequestResponse, Web, Query])?;

        // Congestion control and ECN (the rules of a `tcp` flow).
        if !CC_NAMES.contains(&self.cc.as_str()) {
            return err(
                "cc",
                format!(
                    "unknown congestion control {:?}: expected one of {}",
                    self.cc,
                    CC_NAMES.join(", ")
                ),
            );
        }
        match (self.cc.as_str(), self.ecn) {
            ("prague" | "dctcp", AppEcn::Classic) => {
                return err(
                    "ecn",
                    format!(
                        "{} needs Accurate ECN feedback: use ecn = \"accecn\" or \"off\"",
                        self.cc
                    ),
                )
            }
            ("reno" | "cubic", AppEcn::Accecn) => {
                return err(
                    "ecn",
                    format!(
                        "{} responds to classic ECN only: use ecn = \"classic\" or \"off\"",
                        self.cc
                    ),
                )
            }
            _ => {}
        }
        if self.initial_cwnd == 0 {
            return err("initial_cwnd", "expected at least 1 segment");
        }
        self.validate_tcp()?;

        // Sizes.
        let positive = |key: &str, v: Option<Size>| -> Result<(), ConfigError> {
            match v {
                Some(Size(0)) => err(key, "expected a size above zero"),
                _ => Ok(()),
            }
        };
        positive("bytes", self.bytes)?;
        positive("chunk", self.chunk)?;
        positive("request", self.request)?;
        positive("response", self.response)?;
        positive("object_size", self.object_size)?;
        let max_request = match self.kind {
            Query => MAX_UDP_PAYLOAD,
            _ => self.tcp.mss as u64,
        };
        if let Some(Size(r)) = self.request {
            if r > max_request {
                return err(
                    "request",
                    format!("a request is one packet: expected at most {max_request} bytes, found {r}"),
                );
            }
        }
        match self.kind {
            Bulk => {
                if self.bytes.is_none() {
                    return err(
                        "bytes",
                        "a bulk app needs `bytes`, the size of each transfer (e.g. \"480MB\")",
                    );
                }
            }
            Sync => {
                if self.chunk.is_none() {
                    return err(
                        "chunk",
                        "a sync app needs `chunk`, the bytes of each chunk (e.g. \"4MB\")",
                    );
                }
                let Some(p) = self.pause else {
                    return err(
                        "pause",
                        "a sync app needs `pause`, the pause between chunks (e.g. \"2s\")",
                    );
                };
                if p >= run {
                    return err(
                        "pause",
                        format!("expected a pause shorter than the run ({run}), found {p}"),
                    );
                }
                if let Some(m) = self.pause_max {
                    if m < p {
                        return err("pause_max", format!("expected at least `pause` ({p}), found {m}"));
                    }
                }
            }
            RequestResponse => {
                if self.response.is_none() {
                    return err(
                        "response",
                        "a request-response app needs `response`, the bytes of each response",
                    );
                }
            }
            Web => {
                match (&self.object_sizes, self.objects, self.object_size) {
                    (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
                        return err(
                            "object_sizes",
                            "give either `object_sizes` or `objects` with `object_size`, not both",
                        );
                    }
                    (Some(list), None, None) => {
                        if list.is_empty() {
                            return err("object_sizes", "expected at least one object size");
                        }
                        if list.len() > MAX_OBJECTS as usize {
                            return err(
                                "object_sizes",
                                format!("expected at most {MAX_OBJECTS} objects per page, found {}", list.len()),
                            );
                        }
                        if let Some(i) = list.iter().position(|s| s.0 == 0) {
                            return err(&format!("object_sizes[{i}]"), "expected a size above zero");
                        }
                    }
                    (None, Some(0), _) => return err("objects", "expected at least one object"),
                    (None, Some(n), _) if n > MAX_OBJECTS => {
                        return err(
                            "objects",
                            format!("expected at most {MAX_OBJECTS} objects per page, found {n}"),
                        )
                    }
                    (None, Some(_), None) => {
                        return err("object_size", "`objects` needs `object_size`, the bytes of each object")
                    }
                    (None, None, _) => {
                        return err(
                            "objects",
                            "a web app needs `objects` and `object_size`, or `object_sizes`",
                        )
                    }
                    (None, Some(_), Some(_)) => {}
                }
                if self.connections == Some(0) {
                    return err(
                        "connections",
                        "expected at least one connection to fetch the objects over",
                    );
                }
            }
            Query => {
                if let Some(Size(r)) = self.response {
                    if r > MAX_UDP_PAYLOAD {
                        return err(
                            "response",
                            format!("a reply is one packet: expected at most {MAX_UDP_PAYLOAD} bytes, found {r}"),
                        );
                    }
                }
            }
        }

        // Schedule.
        if self.repeat.is_some() && self.think.is_some() {
            return err(
                "think",
                "give either `repeat` (open loop) or `think` (closed loop), not both",
            );
        }
        if let Some(d) = self.repeat {
            if d < MIN_INTERVAL {
                return err(
                    "repeat",
                    format!("expected an interval of at least {MIN_INTERVAL} (a new instance every {d} would pile up without end), found {d}"),
                );
            }
            if d >= run {
                return err(
                    "repeat",
                    format!("expected an interval shorter than the run ({run}), found {d}"),
                );
            }
        }
        if let Some(d) = self.think {
            if d >= run {
                return err(
                    "think",
                    format!("expected a think time shorter than the run ({run}), found {d}"),
                );
            }
        }
        if self.count == Some(0) {
            return err(
                "count",
                "expected at least 1 (leave `count` out to run until the flow stops)",
            );
        }
        if let Some(t) = self.timeout {
            if t < Dur::from_millis(1) {
                return err(
                    "timeout",
                    format!("expected a retry timeout of at least 1ms, found {t}"),
                );
            }
        }
        Ok(())
    }

    fn validate_tcp(&self) -> Result<(), ConfigError> {
        let t = &self.tcp;
        if t.bytes.is_some() {
            return err(
                "tcp.bytes",
                "sizes of an app come from its own keys (`bytes`, `chunk`, ...): remove `tcp.bytes`",
            );
        }
        if !(64..=9000).contains(&t.mss) {
            return err(
                "tcp.mss",
                format!("expected an MSS from 64 to 9000 bytes, found {}", t.mss),
            );
        }
        for (k, v) in [
            ("tcp.min_rto", t.min_rto),
            ("tcp.initial_rto", t.initial_rto),
            ("tcp.syn_rto", t.syn_rto),
        ] {
            if v.is_zero() {
                return err(k, "expected a duration above zero");
            }
        }
        if t.max_rto < t.min_rto {
            return err("tcp.max_rto", format!("expected at least tcp.min_rto ({})", t.min_rto));
        }
        let r = &self.receiver;
        if r.rwnd < t.mss as u64 {
            return err("receiver.rwnd", format!("expected at least one MSS ({} bytes)", t.mss));
        }
        if r.ack_every == 0 {
            return err("receiver.ack_every", "expected at least 1 segment");
        }
        if r.delayed_ack && r.ack_delay.is_zero() {
            return err("receiver.ack_delay", "expected a delay above zero with delayed ACKs on");
        }
        if !(1..=7).contains(&r.accecn_ce_ack_n) {
            return err(
                "receiver.accecn_ce_ack_n",
                format!("expected 1 to 7, found {}", r.accecn_ce_ack_n),
            );
        }
        Ok(())
    }

    /// Congestion controller parameters and the receiver configuration after the `ecn` key
    /// is applied: prague/dctcp with `ecn = "off"` meet a receiver without any ECN (a `tcp`
    /// flow's receiver keeps its RFC 3168 fallback there); reno/cubic use RFC 3168 only
    /// with `ecn = "classic"`.
    pub fn tcp_setup(&self) -> (CcParams, TcpReceiverConfig) {
        let mut p = CcParams {
            mss: self.tcp.mss,
            initial_cwnd_pkts: self.initial_cwnd.max(1),
            ..self.cc_params.unwrap_or_default()
        };
        let mut r = self.receiver.clone();
        match self.cc.as_str() {
            "prague" | "dctcp" => {
                if self.ecn == AppEcn::Off {
                    // A receiver without ECN: no AccECN and no RFC 3168 fallback, so the
                    // connection runs without ECN (Prague behaves as Reno, Not-ECT).
                    r.accecn = false;
                    r.ecn = false;
                }
            }
            _ => p.classic_ecn = self.ecn == AppEcn::Classic,
        }
        (p, r)
    }

    /// A new congestion controller for one connection.
    pub fn build_cc(&self) -> Result<Box<dyn CongestionControl>, String> {
        l4s_cc::factory::build(&self.cc, &self.tcp_setup().0)
    }

    /// The codepoint the app's data is meant to carry (for classification and reports):
    /// ECT(1) for prague (AccECN), ECT(0) for dctcp and for reno/cubic with classic ECN,
    /// Not-ECT otherwise. Queries and replies are sent with it.
    pub fn nominal_ecn(&self) -> Ecn {
        match (self.cc.as_str(), self.ecn) {
            (_, AppEcn::Off) => Ecn::NotEct,
            ("prague", _) => Ecn::Ect1,
            ("dctcp", _) => Ecn::Ect0,
            (_, AppEcn::Classic) => Ecn::Ect0,
            _ => Ecn::NotEct,
        }
    }

    /// Request payload bytes (with the kind's default).
    pub fn request_bytes(&self) -> u64 {
        match (self.request, self.kind) {
            (Some(s), _) => s.0,
            (None, AppKind::Query) => 64,
            (None, _) => 300,
        }
    }

    /// Object sizes of one page (web).
    pub fn page_objects(&self) -> Vec<u64> {
        match (&self.object_sizes, self.objects, self.object_size) {
            (Some(list), _, _) => list.iter().map(|s| s.0).collect(),
            (None, Some(n), Some(s)) => vec![s.0; n as usize],
            _ => Vec::new(),
        }
    }

    /// Instances to run: `None` = until the flow stops.
    pub fn instances(&self) -> Option<u32> {
        match (
            self.count,
            self.repeat.is_some() || self.think.is_some() || self.kind == AppKind::Sync,
        ) {
            (Some(n), _) => Some(n),
            (None, true) => None,
            (None, false) => Some(1),
        }
    }

    /// Wire size of a request packet (TCP/IP headers with timestamps, or UDP for a query).
    pub fn request_wire_size(&self) -> u32 {
        let b = self.request_bytes().min(u32::MAX as u64 / 2) as u32;
        match self.kind {
            AppKind::Query => (UDP_OVERHEAD + b).max(MIN_FRAME),
            _ => DATA_OVERHEAD + b,
        }
    }
}
