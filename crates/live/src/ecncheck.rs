//! `l4s ecn-check` and `l4s reflect`: does the ECN field survive a path, in each direction?
//!
//! The client sends probes marked Not-ECT, ECT(0), ECT(1) and CE to a reflector. The
//! reflector answers each with the codepoint it **received** written in the payload, and
//! sends the answer with the codepoint the request **was sent with** (which the request
//! states in its payload), so that the reverse path is tested with the same four
//! codepoints. The client reads the codepoint the answer arrived with.
//!
//! Per direction the verdict says whether ECT(1), the L4S identifier (RFC 9331 §4), arrives
//! intact, is bleached to Not-ECT (RFC 9331 §5 forbids it, RFC 3168 §6.1.1.1 calls it a
//! broken path), is remarked to ECT(0) (again forbidden by RFC 9331 §5), or is marked CE
//! (congestion, or a box that marks everything), and whether CE is seen at all (a CE
//! probe that arrives CE shows that the path keeps congestion signals).
//!
//! Safety of the reflector (it listens on the Internet):
//! * never an amplifier: a reply is [`REPLY_LEN`] bytes and requests shorter than that
//!   are not answered, so a reply is never larger than its request;
//! * a token bucket per source address ([`RateLimit`]), in a table of bounded size;
//! * malformed datagrams (wrong magic or version, wrong type, too short, truncated) are
//!   counted and ignored.
//!
//! Wire format, all integers big-endian:
//! ```text
//! request: "L4SE" | ver=1 | type=1 | sent_ecn | 0 | nonce u32 | seq u32 | padding (to the probe size)
//! reply:   "L4SE" | ver=1 | type=2 | sent_ecn | received_ecn | nonce u32 | seq u32 | reply_ecn | 0 0 0
//! ```
//! `received_ecn` is 0..=3, or 0xff when the reflector's kernel did not report the field.

use crate::udp::EcnUdpSocket;
use l4s_core::Ecn;
use std::collections::HashMap;
use std::fmt;
use std::io;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Magic bytes that open every probe and reply.
pub const MAGIC: [u8; 4] = *b"L4SE";
/// Wire format version.
pub const VERSION: u8 = 1;
const TYPE_REQUEST: u8 = 1;
const TYPE_REPLY: u8 = 2;
/// Length of a reply, and so the shortest request that is answered.
pub const REPLY_LEN: usize = 20;
/// Smallest request the client sends (and the reflector accepts).
pub const MIN_REQUEST_LEN: usize = REPLY_LEN;
/// Default UDP port of `l4s reflect`.
pub const DEFAULT_PORT: u16 = 4739;
/// Codepoints probed, in this order.
pub const CODEPOINTS: [Ecn; 4] = [Ecn::NotEct, Ecn::Ect0, Ecn::Ect1, Ecn::Ce];
const UNKNOWN_ECN: u8 = 0xff;

/// A parsed request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub sent_ecn: Ecn,
    pub nonce: u32,
    pub seq: u32,
}

/// A parsed reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reply {
    pub sent_ecn: Ecn,
    /// What the reflector saw (`None`: its kernel did not say).
    pub received_ecn: Option<Ecn>,
    pub nonce: u32,
    pub seq: u32,
    /// The codepoint the reflector put on the reply.
    pub reply_ecn: Ecn,
}

/// Why a datagram was not a valid probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Malformed {
    TooShort,
    BadMagic,
    BadVersion,
    BadType,
    BadField,
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

impl Request {
    /// Encode into `buf` (at least [`MIN_REQUEST_LEN`] bytes; the rest is zero padding).
    pub fn encode(&self, buf: &mut [u8]) -> Option<usize> {
        if buf.len() < MIN_REQUEST_LEN {
            return None;
        }
        buf.fill(0);
        buf[..4].copy_from_slice(&MAGIC);
        buf[4] = VERSION;
        buf[5] = TYPE_REQUEST;
        buf[6] = self.sent_ecn.bits();
        buf[8..12].copy_from_slice(&self.nonce.to_be_bytes());
        buf[12..16].copy_from_slice(&self.seq.to_be_bytes());
        Some(buf.len())
    }
    pub fn parse(b: &[u8]) -> Result<Request, Malformed> {
        header(b, TYPE_REQUEST)?;
        if b[6] > 3 {
            return Err(Malformed::BadField);
        }
        Ok(Request {
            sent_ecn: Ecn::from_bits(b[6]),
            nonce: be32(&b[8..12]),
            seq: be32(&b[12..16]),
        })
    }
}

fn header(b: &[u8], ty: u8) -> Result<(), Malformed> {
    if b.len() < REPLY_LEN {
        return Err(Malformed::TooShort);
    }
    if b[..4] != MAGIC {
        return Err(Malformed::BadMagic);
    }
    if b[4] != VERSION {
        return Err(Malformed::BadVersion);
    }
    if b[5] != ty {
        return Err(Malformed::BadType);
    }
    Ok(())
}

impl Reply {
    pub fn encode(&self) -> [u8; REPLY_LEN] {
        let mut b = [0u8; REPLY_LEN];
        b[..4].copy_from_slice(&MAGIC);
        b[4] = VERSION;
        b[5] = TYPE_REPLY;
        b[6] = self.sent_ecn.bits();
        b[7] = self.received_ecn.map_or(UNKNOWN_ECN, Ecn::bits);
        b[8..12].copy_from_slice(&self.nonce.to_be_bytes());
        b[12..16].copy_from_slice(&self.seq.to_be_bytes());
        b[16] = self.reply_ecn.bits();
        b
    }
    pub fn parse(b: &[u8]) -> Result<Reply, Malformed> {
        header(b, TYPE_REPLY)?;
        if b[6] > 3 || (b[7] > 3 && b[7] != UNKNOWN_ECN) || b[16] > 3 {
            return Err(Malformed::BadField);
        }
        Ok(Reply {
            sent_ecn: Ecn::from_bits(b[6]),
            received_ecn: (b[7] != UNKNOWN_ECN).then(|| Ecn::from_bits(b[7])),
            nonce: be32(&b[8..12]),
            seq: be32(&b[12..16]),
            reply_ecn: Ecn::from_bits(b[16]),
        })
    }
}

/// A token bucket per source address: `rate` replies per second with bursts of `burst`.
/// The table holds at most `max_sources` addresses; when full, idle (refilled) entries are
/// dropped first, and a new source is refused if none is idle, so memory stays bounded
/// under a flood of spoofed sources.
#[derive(Debug)]
pub struct RateLimit {
    rate: f64,
    burst: f64,
    max_sources: usize,
    buckets: HashMap<IpAddr, (f64, Instant)>,
}

impl RateLimit {
    pub fn new(rate_per_sec: f64, burst: u32, max_sources: usize) -> RateLimit {
        RateLimit {
            rate: rate_per_sec.max(0.0),
            burst: f64::from(burst.max(1)),
            max_sources: max_sources.max(1),
            buckets: HashMap::new(),
        }
    }
    /// May `src` have one more reply at `now`?
    pub fn allow(&mut self, src: IpAddr, now: Instant) -> bool {
        if !self.buckets.contains_key(&src) && self.buckets.len() >= self.max_sources {
            let (rate, burst) = (self.rate, self.burst);
            self.buckets
                .retain(|_, (tokens, t)| *tokens + now.saturating_duration_since(*t).as_secs_f64() * rate < burst);
            if self.buckets.len() >= self.max_sources {
                return false;
            }
        }
        let (tokens, t) = self.buckets.entry(src).or_insert((self.burst, now));
        *tokens = (*tokens + now.saturating_duration_since(*t).as_secs_f64() * self.rate).min(self.burst);
        *t = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            true
        } else {
            false
        }
    }
    /// Sources currently tracked.
    pub fn sources(&self) -> usize {
        self.buckets.len()
    }
}

/// Counters of a reflector.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReflectorStats {
    pub replies: u64,
    pub malformed: u64,
    pub rate_limited: u64,
    /// Replies the socket refused to send.
    pub send_errors: u64,
}

/// Reflector settings.
#[derive(Clone, Copy, Debug)]
pub struct ReflectorConfig {
    /// Replies per second per source address.
    pub rate_per_source: f64,
    pub burst: u32,
    pub max_sources: usize,
}

impl Default for ReflectorConfig {
    fn default() -> Self {
        ReflectorConfig {
            rate_per_source: 100.0,
            burst: 100,
            max_sources: 4096,
        }
    }
}

/// The reflector's decision logic without I/O.
#[derive(Debug)]
pub struct Reflector {
    limit: RateLimit,
    pub stats: ReflectorStats,
}

impl Reflector {
    pub fn new(cfg: ReflectorConfig) -> Reflector {
        Reflector {
            limit: RateLimit::new(cfg.rate_per_source, cfg.burst, cfg.max_sources),
            stats: ReflectorStats::default(),
        }
    }
    /// What to answer a datagram from `src` that arrived with TOS byte `tos` (`None` if
    /// unknown): the reply bytes and the codepoint to send them with, or nothing.
    pub fn handle(
        &mut self,
        datagram: &[u8],
        truncated: bool,
        src: SocketAddr,
        tos: Option<u8>,
        now: Instant,
    ) -> Option<([u8; REPLY_LEN], Ecn)> {
        let req = match Request::parse(datagram) {
            Ok(r) if !truncated => r,
            _ => {
                self.stats.malformed += 1;
                return None;
            }
        };
        if !self.limit.allow(src.ip(), now) {
            self.stats.rate_limited += 1;
            return None;
        }
        let reply = Reply {
            sent_ecn: req.sent_ecn,
            received_ecn: tos.map(Ecn::from_bits),
            nonce: req.nonce,
            seq: req.seq,
            reply_ecn: req.sent_ecn,
        };
        self.stats.replies += 1;
        Some((reply.encode(), req.sent_ecn))
    }
}

/// Answer probes on `sock` until `stop` is set (checked at least every 100 ms). Returns the
/// counters. `on_reply` sees each answered source (for logging).
pub fn serve(
    sock: &EcnUdpSocket,
    cfg: ReflectorConfig,
    stop: &AtomicBool,
    on_reply: &mut dyn FnMut(SocketAddr, &ReflectorStats),
) -> io::Result<ReflectorStats> {
    sock.set_read_timeout(Some(Duration::from_millis(100)))?;
    let mut r = Reflector::new(cfg);
    // A datagram longer than this is malformed anyway; reading it whole tells us its size.
    let mut buf = vec![0u8; 65_536];
    while !stop.load(Ordering::Relaxed) {
        let got = match sock.recv_from(&mut buf) {
            Ok(g) => g,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => continue,
            // An ICMP error from an earlier reply surfaces here; it says nothing about us.
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => continue,
            Err(e) => return Err(e),
        };
        if let Some((reply, ecn)) = r.handle(&buf[..got.len], got.truncated, got.from, got.tos, Instant::now()) {
            if sock.send_to(&reply, got.from, ecn).is_err() {
                r.stats.send_errors += 1;
            } else {
                on_reply(got.from, &r.stats);
            }
        }
    }
    Ok(r.stats)
}

/// What happened to one codepoint in one direction: how many probes arrived with each
/// codepoint (index = [`Ecn::bits`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Arrivals(pub [u32; 4]);

impl Arrivals {
    pub fn total(&self) -> u32 {
        self.0.iter().sum()
    }
    pub fn of(&self, e: Ecn) -> u32 {
        self.0[e.bits() as usize]
    }
    /// The codepoint most probes arrived with.
    pub fn dominant(&self) -> Option<Ecn> {
        if self.total() == 0 {
            return None;
        }
        (0..4u8).max_by_key(|&b| self.0[b as usize]).map(Ecn::from_bits)
    }
}

/// What became of ECT(1) on a path direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ect1Fate {
    /// Every ECT(1) probe arrived ECT(1) (or CE: a congestion mark is allowed).
    Survives,
    /// ECT(1) arrived as Not-ECT.
    Bleached,
    /// ECT(1) arrived as ECT(0).
    Remarked,
    /// Every ECT(1) probe arrived CE (a box that marks everything, or heavy congestion).
    AllCe,
    /// Different probes fared differently (e.g. load balancing over unequal paths).
    Mixed,
    /// No ECT(1) probe came back.
    Unknown,
}

impl Ect1Fate {
    pub fn describe(self) -> &'static str {
        match self {
            Ect1Fate::Survives => "ECT(1) survives",
            Ect1Fate::Bleached => "ECT(1) is bleached to Not-ECT",
            Ect1Fate::Remarked => "ECT(1) is remarked to ECT(0)",
            Ect1Fate::AllCe => "ECT(1) always arrives CE-marked",
            Ect1Fate::Mixed => "ECT(1) arrives inconsistently",
            Ect1Fate::Unknown => "unknown (no ECT(1) probe came back)",
        }
    }
    fn of(a: &Arrivals) -> Ect1Fate {
        let n = a.total();
        if n == 0 {
            Ect1Fate::Unknown
        } else if a.of(Ecn::Ect1) + a.of(Ecn::Ce) == n && a.of(Ecn::Ect1) > 0 {
            Ect1Fate::Survives
        } else if a.of(Ecn::Ce) == n {
            Ect1Fate::AllCe
        } else if a.of(Ecn::NotEct) == n {
            Ect1Fate::Bleached
        } else if a.of(Ecn::Ect0) == n {
            Ect1Fate::Remarked
        } else {
            Ect1Fate::Mixed
        }
    }
}

/// The verdict for one direction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Direction {
    /// Per codepoint sent (index = [`Ecn::bits`]): what arrived.
    pub arrivals: [Arrivals; 4],
    pub ect1: Ect1Fate,
    /// Any probe of this direction arrived CE.
    pub ce_seen: bool,
    /// CE probes arrived CE (`None`: none came back).
    pub ce_preserved: Option<bool>,
    /// ECT(0) probes arrived ECT(0) or CE (`None`: none came back).
    pub ect0_preserved: Option<bool>,
    /// Not-ECT probes arrived with an ECN codepoint (a box that sets ECN on traffic that
    /// did not ask for it, RFC 3168 §5 forbids it).
    pub not_ect_upgraded: bool,
}

impl Direction {
    fn from_arrivals(arrivals: [Arrivals; 4]) -> Direction {
        let sent = |e: Ecn| &arrivals[e.bits() as usize];
        let ce = sent(Ecn::Ce);
        let e0 = sent(Ecn::Ect0);
        Direction {
            ect1: Ect1Fate::of(sent(Ecn::Ect1)),
            ce_seen: arrivals.iter().any(|a| a.of(Ecn::Ce) > 0),
            ce_preserved: (ce.total() > 0).then(|| ce.of(Ecn::Ce) == ce.total()),
            ect0_preserved: (e0.total() > 0).then(|| e0.of(Ecn::Ect0) + e0.of(Ecn::Ce) == e0.total()),
            not_ect_upgraded: sent(Ecn::NotEct).of(Ecn::NotEct) < sent(Ecn::NotEct).total(),
            arrivals,
        }
    }
}

/// Client settings.
#[derive(Clone, Copy, Debug)]
pub struct CheckConfig {
    /// Probes per codepoint.
    pub probes: u32,
    /// Request size in bytes (UDP payload, ≥ [`MIN_REQUEST_LEN`]).
    pub size: usize,
    /// Gap between probes.
    pub interval: Duration,
    /// How long to wait for the last replies.
    pub wait: Duration,
    /// Most probes a second after the first `burst`: the client paces itself under the
    /// reflector's limit per source (by default 90 % of a default `l4s reflect`'s).
    pub max_rate: f64,
    pub burst: u32,
}

impl Default for CheckConfig {
    fn default() -> Self {
        let r = ReflectorConfig::default();
        CheckConfig {
            probes: 10,
            size: 64,
            interval: Duration::from_millis(5),
            wait: Duration::from_secs(1),
            max_rate: 0.9 * r.rate_per_source,
            burst: r.burst / 2,
        }
    }
}

/// The result of `l4s ecn-check`.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    pub target: SocketAddr,
    /// Probes sent and replies received per codepoint (index = [`Ecn::bits`]).
    pub sent: [u32; 4],
    pub replies: [u32; 4],
    /// Client → reflector.
    pub forward: Direction,
    /// Reflector → client.
    pub reverse: Direction,
    /// Replies that did not parse or did not match a probe.
    pub bad_replies: u32,
    /// Median round-trip time of the replies.
    pub rtt_median: Option<Duration>,
    /// The rate the client held its probes to after its first burst (probes/s).
    pub paced_rate: f64,
}

impl Report {
    /// Why some probes went unanswered, if some did: a codepoint that fared far worse than
    /// the others points at a box that drops it; otherwise loss on the path, or a
    /// reflector that answers fewer probes a second than this check sent.
    pub fn missing(&self) -> Option<String> {
        let sent: u32 = self.sent.iter().sum();
        let got: u32 = self.replies.iter().sum();
        if got >= sent {
            return None;
        }
        let lost = |e: Ecn| {
            let i = e.bits() as usize;
            1.0 - f64::from(self.replies[i]) / f64::from(self.sent[i].max(1))
        };
        let worst = CODEPOINTS
            .iter()
            .copied()
            .max_by(|a, b| lost(*a).total_cmp(&lost(*b)))?;
        let others = CODEPOINTS
            .iter()
            .filter(|e| **e != worst)
            .map(|e| lost(*e))
            .fold(0.0, f64::max);
        let mut why = format!("{} of {sent} probes unanswered: ", sent - got);
        if lost(worst) >= 0.5 && others <= 0.1 {
            why += &format!(
                "{:.0} % of the {} probes against at most {:.0} % of the others; a box on the path likely drops {} packets",
                lost(worst) * 100.0,
                cp(worst),
                others * 100.0,
                cp(worst)
            );
        } else {
            why += &format!(
                "lost on the path, or dropped by the reflector's rate limit (this check sent at most {:.0} probes/s after a burst; a default `l4s reflect` answers {:.0}/s per source, see its --rate and --burst)",
                self.paced_rate,
                ReflectorConfig::default().rate_per_source
            );
        }
        Some(why)
    }

    /// True if ECT(1) made it both ways.
    pub fn l4s_ok(&self) -> bool {
        self.forward.ect1 == Ect1Fate::Survives && self.reverse.ect1 == Ect1Fate::Survives
    }
}

fn cp(e: Ecn) -> &'static str {
    match e {
        Ecn::NotEct => "Not-ECT",
        Ecn::Ect0 => "ECT(0)",
        Ecn::Ect1 => "ECT(1)",
        Ecn::Ce => "CE",
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let total: u32 = self.replies.iter().sum();
        writeln!(
            f,
            "ECN path check to {}: {} of {} probes answered{}",
            self.target,
            total,
            self.sent.iter().sum::<u32>(),
            self.rtt_median
                .map(|r| format!(", median RTT {:.3} ms", r.as_secs_f64() * 1e3))
                .unwrap_or_default()
        )?;
        if total == 0 {
            return writeln!(
                f,
                "no reply: is `l4s reflect` running there, and is UDP port {} open?",
                self.target.port()
            );
        }
        if let Some(why) = self.missing() {
            writeln!(f, "{why}")?;
        }
        for (name, d) in [
            ("forward (to the reflector)", &self.forward),
            ("reverse (back to us)", &self.reverse),
        ] {
            writeln!(f, "\n{name}:")?;
            for e in CODEPOINTS {
                let a = &d.arrivals[e.bits() as usize];
                if a.total() == 0 {
                    writeln!(f, "  {:8} -> no probe came back", cp(e))?;
                    continue;
                }
                let parts: Vec<String> = CODEPOINTS
                    .iter()
                    .filter(|r| a.of(**r) > 0)
                    .map(|r| format!("{} x{}", cp(*r), a.of(*r)))
                    .collect();
                writeln!(f, "  {:8} -> {}", cp(e), parts.join(", "))?;
            }
            writeln!(f, "  verdict: {}", d.ect1.describe())?;
            writeln!(
                f,
                "  CE: {}",
                match (d.ce_seen, d.ce_preserved) {
                    (_, Some(true)) => "seen; CE probes keep their mark",
                    (true, _) => "seen",
                    (false, Some(false)) => "not seen: CE probes lose their mark",
                    (false, None) => "not seen (no CE probe came back)",
                }
            )?;
            if d.ect0_preserved == Some(false) {
                writeln!(f, "  ECT(0) does not survive either")?;
            }
            if d.not_ect_upgraded {
                writeln!(f, "  Not-ECT probes arrived ECN-capable: a box sets ECN on traffic")?;
            }
        }
        writeln!(
            f,
            "\n{}",
            if self.l4s_ok() {
                "L4S: OK, ECT(1) survives in both directions"
            } else {
                "L4S: NOT OK on this path (see above)"
            }
        )
    }
}

/// Resolve `HOST[:PORT]` (default port [`DEFAULT_PORT`]); IPv6 literals in brackets.
pub fn resolve(target: &str) -> Result<SocketAddr, String> {
    let t = target.trim();
    if t.is_empty() {
        return Err("expected HOST[:PORT], found an empty string".into());
    }
    let with_port = if let Ok(a) = t.parse::<SocketAddr>() {
        if a.port() == 0 {
            return Err(format!("`{target}`: port 0: expected a port from 1 to 65535"));
        }
        return Ok(a);
    } else if let Ok(ip) = t.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, DEFAULT_PORT));
    } else if let Some(p) = t
        .rsplit_once(':')
        .map(|(_, p)| p)
        .filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        .filter(|p| p.parse::<u16>().map_or(true, |n| n == 0))
    {
        // Digits after the last colon are a port, though not one there can be.
        return Err(format!("`{target}`: port {p}: expected a port from 1 to 65535"));
    } else if t.starts_with('[') || t.rsplit_once(':').is_some_and(|(_, p)| p.parse::<u16>().is_ok()) {
        t.to_string()
    } else {
        format!("{t}:{DEFAULT_PORT}")
    };
    with_port
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve `{target}`: {e}"))?
        .next()
        .ok_or_else(|| format!("`{target}` has no address"))
}

/// Run the check against `target`.
pub fn check(target: SocketAddr, cfg: CheckConfig) -> io::Result<Report> {
    if cfg.size < MIN_REQUEST_LEN || cfg.size > 1472 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "probe size: expected {MIN_REQUEST_LEN} to 1472 bytes, found {}",
                cfg.size
            ),
        ));
    }
    let bind: SocketAddr = if target.is_ipv4() {
        "0.0.0.0:0".parse().expect("literal address")
    } else {
        "[::]:0".parse().expect("literal address")
    };
    let sock = EcnUdpSocket::bind(bind)?;
    sock.set_nonblocking(true)?;
    let nonce = {
        // Not security: only tells our replies from stray datagrams.
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        (t.subsec_nanos() ^ std::process::id().rotate_left(16)) | 1
    };
    let n = cfg.probes.max(1);
    let mut sent = [0u32; 4];
    let mut sent_at: HashMap<u32, (Ecn, Instant, bool)> = HashMap::new();
    let mut fwd = [Arrivals::default(); 4];
    let mut rev = [Arrivals::default(); 4];
    let mut replies = [0u32; 4];
    let mut bad = 0u32;
    let mut rtts = Vec::new();
    let mut out = vec![0u8; cfg.size];
    let mut inb = [0u8; 2048];
    let mut seq = 0u32;
    let mut drain = |sent_at: &mut HashMap<u32, (Ecn, Instant, bool)>,
                     fwd: &mut [Arrivals; 4],
                     rev: &mut [Arrivals; 4],
                     replies: &mut [u32; 4],
                     bad: &mut u32,
                     rtts: &mut Vec<Duration>|
     -> io::Result<()> {
        loop {
            let got = match sock.recv_from(&mut inb) {
                Ok(g) => g,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                    // ICMP port unreachable: nobody listens there.
                    return Err(io::Error::new(
                        io::ErrorKind::ConnectionRefused,
                        format!("{target} refused the probes (ICMP port unreachable): is `l4s reflect` running there?"),
                    ));
                }
                Err(e) => return Err(e),
            };
            let now = Instant::now();
            let r = match Reply::parse(&inb[..got.len]) {
                Ok(r) if got.from == target && r.nonce == nonce => r,
                _ => {
                    *bad += 1;
                    continue;
                }
            };
            let Some((e, t, answered)) = sent_at.get_mut(&r.seq) else {
                *bad += 1;
                continue;
            };
            if *answered || *e != r.sent_ecn {
                *bad += 1;
                continue;
            }
            *answered = true;
            let i = e.bits() as usize;
            replies[i] += 1;
            // Corrected by the time the reply sat in our socket buffer (kernel stamp).
            rtts.push((now - *t).saturating_sub(got.queued));
            if let Some(rx) = r.received_ecn {
                fwd[i].0[rx.bits() as usize] += 1;
            }
            if let Some(back) = got.ecn() {
                rev[r.reply_ecn.bits() as usize].0[back.bits() as usize] += 1;
            }
        }
    };
    // A token bucket under the reflector's limit: `burst` at once, then `max_rate`.
    let rate = if cfg.max_rate.is_finite() && cfg.max_rate > 0.0 {
        cfg.max_rate
    } else {
        f64::MAX
    };
    let burst = f64::from(cfg.burst.max(1));
    let (mut tokens, mut filled) = (burst, Instant::now());
    for _ in 0..n {
        for e in CODEPOINTS {
            let now = Instant::now();
            tokens = (tokens + now.duration_since(filled).as_secs_f64() * rate).min(burst);
            filled = now;
            if tokens < 1.0 {
                let wait = Duration::from_secs_f64((1.0 - tokens) / rate);
                drain(&mut sent_at, &mut fwd, &mut rev, &mut replies, &mut bad, &mut rtts)?;
                std::thread::sleep(wait);
                let now = Instant::now();
                tokens = (tokens + now.duration_since(filled).as_secs_f64() * rate).min(burst);
                filled = now;
            }
            tokens -= 1.0;
            let req = Request {
                sent_ecn: e,
                nonce,
                seq,
            };
            req.encode(&mut out);
            match sock.send_to(&out, target, e) {
                Ok(_) => {
                    sent[e.bits() as usize] += 1;
                    sent_at.insert(seq, (e, Instant::now(), false));
                }
                // A refused send (an earlier ICMP error) is reported by the next receive.
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {}
                Err(e) => return Err(e),
            }
            seq += 1;
        }
        drain(&mut sent_at, &mut fwd, &mut rev, &mut replies, &mut bad, &mut rtts)?;
        std::thread::sleep(cfg.interval);
    }
    let deadline = Instant::now() + cfg.wait;
    while Instant::now() < deadline && replies.iter().sum::<u32>() < sent.iter().sum::<u32>() {
        drain(&mut sent_at, &mut fwd, &mut rev, &mut replies, &mut bad, &mut rtts)?;
        std::thread::sleep(Duration::from_millis(2));
    }
    rtts.sort();
    Ok(Report {
        target,
        sent,
        replies,
        forward: Direction::from_arrivals(fwd),
        reverse: Direction::from_arrivals(rev),
        bad_replies: bad,
        paced_rate: rate,
        rtt_median: rtts.get(rtts.len() / 2).copied(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn wire_round_trip_and_malformed() {
        let mut b = [0u8; 64];
        let q = Request {
            sent_ecn: Ecn::Ect1,
            nonce: 0xdead_beef,
            seq: 7,
        };
        q.encode(&mut b).unwrap();
        assert_eq!(Request::parse(&b), Ok(q));
        assert_eq!(Request::parse(&b[..19]), Err(Malformed::TooShort));
        assert!(q.encode(&mut [0u8; 19]).is_none());
        let mut bad = b;
        bad[0] = b'X';
        assert_eq!(Request::parse(&bad), Err(Malformed::BadMagic));
        let mut bad = b;
        bad[4] = 9;
        assert_eq!(Request::parse(&bad), Err(Malformed::BadVersion));
        let mut bad = b;
        bad[6] = 4;
        assert_eq!(Request::parse(&bad), Err(Malformed::BadField));
        // A reply is not a request (no reflection loops between two reflectors).
        let r = Reply {
            sent_ecn: Ecn::Ce,
            received_ecn: None,
            nonce: 1,
            seq: 2,
            reply_ecn: Ecn::Ce,
        };
        assert_eq!(Request::parse(&r.encode()), Err(Malformed::BadType));
        assert_eq!(Reply::parse(&r.encode()), Ok(r));
        // Any byte string: no panic.
        for len in 0..40 {
            for fill in [0u8, 0xff, 0x4c] {
                let v = vec![fill; len];
                let _ = Request::parse(&v);
                let _ = Reply::parse(&v);
            }
        }
    }

    #[test]
    fn reflector_is_no_amplifier_and_rate_limits() {
        let mut r = Reflector::new(ReflectorConfig {
            rate_per_source: 10.0,
            burst: 5,
            max_sources: 2,
        });
        let t0 = Instant::now();
        let src: SocketAddr = "192.0.2.1:5000".parse().unwrap();
        let mut b = [0u8; REPLY_LEN];
        Request {
            sent_ecn: Ecn::Ect1,
            nonce: 3,
            seq: 1,
        }
        .encode(&mut b)
        .unwrap();
        // Reply size never exceeds the request size; the reply carries what was seen.
        let (reply, ecn) = r.handle(&b, false, src, Some(0b1011_1000 | 2), t0).unwrap();
        assert!(reply.len() <= b.len());
        assert_eq!(ecn, Ecn::Ect1, "reply sent with the request's codepoint");
        let p = Reply::parse(&reply).unwrap();
        assert_eq!(p.received_ecn, Some(Ecn::Ect0));
        assert_eq!(p.sent_ecn, Ecn::Ect1);
        // Burst of 5: four more, then refused until tokens refill (10/s → 100 ms each).
        for _ in 0..4 {
            assert!(r.handle(&b, false, src, Some(1), t0).is_some());
        }
        assert!(r.handle(&b, false, src, Some(1), t0).is_none());
        assert_eq!(r.stats.rate_limited, 1);
        assert!(r
            .handle(&b, false, src, Some(1), t0 + Duration::from_millis(99))
            .is_none());
        assert!(r
            .handle(&b, false, src, Some(1), t0 + Duration::from_millis(205))
            .is_some());
        // Other sources have their own bucket; the table is bounded.
        let other: SocketAddr = "192.0.2.2:5000".parse().unwrap();
        assert!(r.handle(&b, false, other, Some(1), t0).is_some());
        let third: SocketAddr = "192.0.2.3:5000".parse().unwrap();
        assert!(
            r.handle(&b, false, third, Some(1), t0).is_none(),
            "table full of busy sources"
        );
        assert_eq!(r.limit.sources(), 2);
        // Once a source is idle (bucket full again) its entry makes room.
        assert!(r
            .handle(&b, false, third, Some(1), t0 + Duration::from_secs(2))
            .is_some());
        // Malformed and truncated datagrams are counted, not answered.
        assert!(r.handle(&b[..10], false, src, Some(1), t0).is_none());
        assert!(r.handle(&b, true, src, Some(1), t0).is_none());
        assert!(r
            .handle(b"GET / HTTP/1.1\r\n\r\n......", false, src, None, t0)
            .is_none());
        assert_eq!(r.stats.malformed, 3);
    }

    #[test]
    fn fate_classification() {
        let a = |v: [u32; 4]| Arrivals(v);
        // index = bits: [not-ect, ect1, ect0, ce]
        assert_eq!(Ect1Fate::of(&a([0, 10, 0, 0])), Ect1Fate::Survives);
        assert_eq!(Ect1Fate::of(&a([0, 8, 0, 2])), Ect1Fate::Survives);
        assert_eq!(Ect1Fate::of(&a([10, 0, 0, 0])), Ect1Fate::Bleached);
        assert_eq!(Ect1Fate::of(&a([0, 0, 10, 0])), Ect1Fate::Remarked);
        assert_eq!(Ect1Fate::of(&a([0, 0, 0, 10])), Ect1Fate::AllCe);
        assert_eq!(Ect1Fate::of(&a([5, 5, 0, 0])), Ect1Fate::Mixed);
        assert_eq!(Ect1Fate::of(&a([0, 0, 0, 0])), Ect1Fate::Unknown);
    }

    #[test]
    fn resolve_targets() {
        assert_eq!(resolve("127.0.0.1").unwrap(), "127.0.0.1:4739".parse().unwrap());
        assert_eq!(resolve("127.0.0.1:99").unwrap(), "127.0.0.1:99".parse().unwrap());
        assert_eq!(resolve("[::1]:99").unwrap(), "[::1]:99".parse().unwrap());
        assert_eq!(resolve("::1").unwrap(), "[::1]:4739".parse().unwrap());
        assert_eq!(resolve("localhost:99").unwrap().port(), 99);
        assert!(resolve("").is_err());
        assert!(resolve("no-such-host.invalid").is_err());
        // A port that cannot be is named as such, not looked up as a host.
        for t in ["127.0.0.1:99999", "localhost:0", "127.0.0.1:0", "[::1]:70000"] {
            let e = resolve(t).unwrap_err();
            assert!(e.contains("expected a port from 1 to 65535"), "{t}: {e}");
        }
    }

    fn spawn_reflector(bind: &str) -> (SocketAddr, Arc<AtomicBool>, std::thread::JoinHandle<ReflectorStats>) {
        let sock = EcnUdpSocket::bind(bind.parse().unwrap()).unwrap();
        let addr = sock.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        let h = std::thread::spawn(move || serve(&sock, ReflectorConfig::default(), &s2, &mut |_, _| {}).unwrap());
        (addr, stop, h)
    }

    fn quick() -> CheckConfig {
        CheckConfig {
            probes: 5,
            interval: Duration::from_millis(1),
            wait: Duration::from_millis(500),
            ..CheckConfig::default()
        }
    }

    #[test]
    fn loopback_path_keeps_every_codepoint() {
        for (bind, target) in [("127.0.0.1:0", "127.0.0.1"), ("[::]:0", "::1"), ("[::]:0", "127.0.0.1")] {
            let (addr, stop, h) = spawn_reflector(bind);
            let t = SocketAddr::new(target.parse().unwrap(), addr.port());
            let r = check(t, quick()).unwrap();
            stop.store(true, Ordering::Relaxed);
            let st = h.join().unwrap();
            assert_eq!(r.replies, [5; 4], "{r}");
            assert_eq!(st.replies, 20);
            for d in [&r.forward, &r.reverse] {
                assert_eq!(d.ect1, Ect1Fate::Survives);
                assert_eq!(d.ce_preserved, Some(true));
                assert_eq!(d.ect0_preserved, Some(true));
                assert!(d.ce_seen && !d.not_ect_upgraded);
                for e in CODEPOINTS {
                    assert_eq!(d.arrivals[e.bits() as usize].of(e), 5, "{e}");
                }
            }
            assert!(r.l4s_ok());
            assert!(r.to_string().contains("L4S: OK"), "{r}");
        }
    }

    /// 50 probes per codepoint (200) against a default reflector (100 replies/s, bursts of
    /// 100): the client paces itself under the limit, so every probe is answered.
    #[test]
    fn many_probes_are_paced_under_a_default_reflectors_limit() {
        let (addr, stop, h) = spawn_reflector("127.0.0.1:0");
        let cfg = CheckConfig { probes: 50, ..quick() };
        let t0 = Instant::now();
        let r = check(addr, cfg).unwrap();
        stop.store(true, Ordering::Relaxed);
        let st = h.join().unwrap();
        assert_eq!(r.replies, [50; 4], "{r}");
        assert_eq!(st.rate_limited, 0);
        // 50 at once, then 150 at 90/s.
        assert!(t0.elapsed() >= Duration::from_millis(1_600), "{:?}", t0.elapsed());
        assert!(r.missing().is_none());
    }

    /// A reflector with a stricter limit than the client assumes drops replies; the report
    /// says how many and names the likely causes, or the codepoint a box drops.
    #[test]
    fn missing_replies_are_explained() {
        let sock = EcnUdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = sock.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        let strict = ReflectorConfig {
            rate_per_source: 20.0,
            burst: 5,
            max_sources: 16,
        };
        let h = std::thread::spawn(move || serve(&sock, strict, &s2, &mut |_, _| {}).unwrap());
        let r = check(addr, quick()).unwrap();
        stop.store(true, Ordering::Relaxed);
        let st = h.join().unwrap();
        assert!(st.rate_limited > 0);
        let why = r.missing().expect("replies are missing");
        assert!(why.contains("rate limit") && why.contains("unanswered"), "{why}");
        assert!(r.to_string().contains(&why), "{r}");
        // Every ECT(1) probe lost, the others answered: a box drops ECT(1).
        let mut d = r.clone();
        d.sent = [10; 4];
        d.replies = [10, 0, 10, 10];
        let why = d.missing().unwrap();
        assert!(why.contains("drops ECT(1) packets"), "{why}");
    }

    #[test]
    fn no_reflector_gives_a_clear_answer() {
        // A bound socket that never answers: the check ends after `wait` with no replies.
        let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let r = check(silent.local_addr().unwrap(), quick()).unwrap();
        assert_eq!(r.replies, [0; 4]);
        assert_eq!(r.forward.ect1, Ect1Fate::Unknown);
        assert!(r.to_string().contains("no reply"));
        // A closed port: refused (ICMP), reported as such.
        let port = silent.local_addr().unwrap().port();
        drop(silent);
        match check(SocketAddr::new("127.0.0.1".parse().unwrap(), port), quick()) {
            Err(e) => assert!(e.to_string().contains("l4s reflect"), "{e}"),
            Ok(r) => assert_eq!(r.replies, [0; 4]),
        }
        assert!(check("127.0.0.1:9".parse().unwrap(), CheckConfig { size: 8, ..quick() }).is_err());
    }
}
