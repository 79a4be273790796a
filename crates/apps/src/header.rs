//! What application endpoints put on the wire, and what they report.

use l4s_core::Time;
use l4s_transport::tcp::TcpSegment;

/// The header of an application packet. `Copy`, no heap.
///
/// Forward direction (source → destination): `Tcp` data segments and SYNs, `Reply`.
/// Reverse direction: `Tcp` SYN-ACKs and ACKs, `Request`, `Reset`, `Query`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AppHeader {
    /// A TCP segment of connection `conn` (connections inside one app flow are multiplexed
    /// like port pairs). `offered`: on data segments that hold the first byte of a sync
    /// chunk, the time the source offered the chunk (in-band framing, so that the receiver
    /// can time the chunk from its offer).
    Tcp {
        conn: u32,
        seg: TcpSegment,
        offered: Option<Time>,
    },
    /// A request for `bytes` of response on connection `conn`. `id` is unique in the app
    /// flow; `nth` is the request's position on its connection (0 opens the connection,
    /// responses are sent in `nth` order, like HTTP/1.1). `close`: the last request on the
    /// connection ("Connection: close"). Retransmitted after a timeout with the same fields.
    Request {
        conn: u32,
        id: u32,
        nth: u32,
        bytes: u64,
        close: bool,
    },
    /// The receiver knows no connection `conn` (a SYN or segment for a connection it has
    /// closed or never asked for): the source drops it (RFC 9293 §3.10.7.1, a reset for a
    /// segment to a closed connection).
    Reset { conn: u32 },
    /// A UDP query asking for a reply of `bytes` payload bytes.
    Query { id: u32, bytes: u32 },
    /// The reply to query `id`.
    Reply { id: u32, bytes: u32 },
}

impl AppHeader {
    /// A packet carrying application payload in the forward direction (TCP data, replies):
    /// what the simulator counts as data.
    pub fn is_data(&self) -> bool {
        match self {
            AppHeader::Tcp { seg, .. } => seg.len > 0,
            AppHeader::Reply { .. } => true,
            _ => false,
        }
    }
    /// The connection a packet belongs to, if any.
    pub fn conn(&self) -> Option<u32> {
        match *self {
            AppHeader::Tcp { conn, .. } | AppHeader::Request { conn, .. } | AppHeader::Reset { conn } => Some(conn),
            AppHeader::Query { .. } | AppHeader::Reply { .. } => None,
        }
    }
}

/// What a [`Completion`] measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CompletionKind {
    /// bulk: one transfer, from its request to its last byte delivered.
    Transfer,
    /// sync: one chunk, from its offer at the source to its last byte delivered.
    Chunk,
    /// request-response: one exchange, from the request (first transmission) to the last
    /// response byte delivered.
    Response,
    /// web: one object, from its request to its last byte delivered.
    Object,
    /// web: one page, from its first request to its last object delivered.
    Page,
    /// query: from the query (first transmission) to its reply.
    Query,
}

impl CompletionKind {
    pub fn name(self) -> &'static str {
        match self {
            CompletionKind::Transfer => "transfer",
            CompletionKind::Chunk => "chunk",
            CompletionKind::Response => "response",
            CompletionKind::Object => "object",
            CompletionKind::Page => "page",
            CompletionKind::Query => "query",
        }
    }
}

/// One completed unit of application work, reported by [`crate::AppReceiver`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    pub what: CompletionKind,
    pub started: Time,
    pub completed: Time,
    /// Payload bytes of the unit (the response, chunk, object, page or reply).
    pub bytes: u64,
    /// Retransmissions of the request(s) or query this unit needed.
    pub retries: u32,
}

impl Completion {
    /// Completion time.
    pub fn duration(&self) -> l4s_core::Dur {
        self.completed - self.started
    }
}
