//! BlockAck agreement bookkeeping (IEEE 802.11-2020 clause 10.25, Block acknowledgment),
//! without IO: the originator's transmit window with retransmissions, retry limit and MSDU
//! lifetime, and the recipient's receive reordering buffer.
//!
//! Sequence numbers are 12-bit (modulo 4096). Both sides keep a window of `window` MPDUs
//! (64, 256 or 1024 in practice; any size from 1 to 1024 is accepted).
//!
//! * [`Originator`]: MPDUs wait in a backlog and get the next sequence number when first
//!   sent. [`Originator::next_ampdu`] picks the MPDUs of the next A-MPDU: MPDUs awaiting
//!   retransmission first, in sequence order, then new ones, as long as their sequence
//!   number lies in the window `[WinStartO, WinStartO + window)`, where WinStartO is the
//!   oldest sequence number neither acknowledged nor dropped. [`Originator::on_block_ack`]
//!   takes the sequence numbers that a BlockAck acknowledged; every other MPDU of the
//!   A-MPDU failed, counts one more retry, and is dropped once its retries exceed the retry
//!   limit or once it is older than the MSDU lifetime. The lifetime is checked when an MPDU
//!   fails, against the `now` the caller passes. [`Originator::on_no_response`] is the
//!   BlockAck timeout: every MPDU of the A-MPDU failed.
//! * [`Recipient`]: the receive reordering buffer, a window `[WinStartB, WinEndB]` with
//!   WinEndB = WinStartB + window − 1. An MPDU inside the window is buffered (a second copy
//!   is discarded) and the in-order run from WinStartB is released. An MPDU whose sequence
//!   number lies beyond WinEndB (less than 2048 ahead of WinStartB) becomes the new WinEndB:
//!   WinStartB moves to SN − window + 1, everything buffered before it is released in
//!   order, then the in-order run from the new WinStartB. An MPDU before the window (up to
//!   2048 behind) is discarded. A BlockAckReq with a starting sequence number ahead of
//!   WinStartB moves WinStartB there, releasing everything buffered before it.
//!
//! Nothing here panics on what a caller passes; bad arguments return a [`WifiError`]
//! naming the parameter.

use std::collections::VecDeque;

use super::WifiError;
use l4s_core::{Dur, Time};

/// Sequence numbers count modulo 4096 (12 bits).
pub const SEQ_MODULO: u16 = 4096;
/// Half the sequence space: a sequence number less than this far ahead of another is
/// "after" it, one further ahead is "before" it.
pub const SEQ_HALF: u16 = 2048;
/// The largest window: 1024 MPDUs.
pub const MAX_WINDOW: u16 = 1024;

/// `a + b` modulo 4096.
pub fn seq_add(a: u16, b: u16) -> u16 {
    ((u32::from(a) + u32::from(b)) % u32::from(SEQ_MODULO)) as u16
}

/// `a − b` modulo 4096: how far `a` lies ahead of `b`.
pub fn seq_sub(a: u16, b: u16) -> u16 {
    ((u32::from(a) + u32::from(SEQ_MODULO) - u32::from(b) % u32::from(SEQ_MODULO)) % u32::from(SEQ_MODULO)) as u16
}

fn check_window(window: u16) -> Result<(), WifiError> {
    if (1..=MAX_WINDOW).contains(&window) {
        Ok(())
    } else {
        Err(WifiError::new("window", "1 to 1024 MPDUs", window))
    }
}

fn check_seq(parameter: &'static str, seq: u16) -> Result<(), WifiError> {
    if seq < SEQ_MODULO {
        Ok(())
    } else {
        Err(WifiError::new(parameter, "a sequence number from 0 to 4095", seq))
    }
}

/// The parameters of the originator's side of an agreement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OriginatorConfig {
    /// The window, in MPDUs: 1 to 1024 (64 by default).
    pub window: u16,
    /// Retransmissions allowed per MPDU: at least 1 (7 by default). An MPDU is dropped at
    /// its `retry_limit + 1`-th failure.
    pub retry_limit: u32,
    /// The MSDU lifetime, counted from [`Originator::enqueue`]: more than zero (500 ms by
    /// default). An MPDU that fails when older than this is dropped.
    pub lifetime: Dur,
    /// The sequence number of the first MPDU (0 by default).
    pub starting_sequence: u16,
}

impl Default for OriginatorConfig {
    fn default() -> Self {
        OriginatorConfig {
            window: 64,
            retry_limit: 7,
            lifetime: Dur::from_millis(500),
            starting_sequence: 0,
        }
    }
}

/// Why the originator gave up on an MPDU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// It failed more than `retry_limit` retransmissions.
    RetryLimit,
    /// It failed when older than the MSDU lifetime.
    Lifetime,
}

/// An MPDU the originator gave up on, handed back to the caller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dropped<T> {
    pub seq: u16,
    pub payload: T,
    /// Failed transmissions.
    pub failures: u32,
    pub reason: DropReason,
}

/// The originator's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OriginatorCounters {
    /// MPDU transmissions, retransmissions included.
    pub sent: u64,
    /// Of which retransmissions.
    pub retransmitted: u64,
    /// MPDUs acknowledged.
    pub acked: u64,
    /// MPDUs dropped at the retry limit.
    pub dropped_retry_limit: u64,
    /// MPDUs dropped past their lifetime.
    pub dropped_lifetime: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// In the A-MPDU awaiting its BlockAck.
    InFlight,
    /// Failed; awaiting retransmission.
    Failed,
    /// Acknowledged in a TXOP that has not ended yet: it keeps its place in the window
    /// until then (see [`Originator::on_block_ack_on`]).
    Acked,
}

#[derive(Debug)]
struct Outstanding<T> {
    seq: u16,
    payload: T,
    failures: u32,
    enqueued: Time,
    state: State,
    /// After a failure in a TXOP on link `.0` that ends at `.1`: until then only that link
    /// may send it again (see [`Originator::on_block_ack_on`]).
    hold: (usize, Time),
}

impl<T> Outstanding<T> {
    /// Whether it may go out now: failed, and (on link `on.0` at `on.1`) not held for
    /// another link's TXOP still under way. `None`: any failed MPDU.
    fn usable(&self, on: Option<(usize, Time)>) -> bool {
        self.state == State::Failed && on.is_none_or(|(link, now)| self.hold.0 == link || self.hold.1 <= now)
    }
}

/// The transmit side of a BlockAck agreement.
#[derive(Debug)]
pub struct Originator<T> {
    config: OriginatorConfig,
    /// MPDUs not yet sent, with their enqueue times; they have no sequence number yet.
    backlog: VecDeque<(T, Time)>,
    /// MPDUs sent and neither acknowledged nor dropped, in sequence order.
    outstanding: VecDeque<Outstanding<T>>,
    /// An empty deque whose room [`Originator::on_block_ack_on`] reuses.
    spare: VecDeque<Outstanding<T>>,
    next_seq: u16,
    awaiting_response: bool,
    counters: OriginatorCounters,
}

impl<T> Originator<T> {
    pub fn new(config: OriginatorConfig) -> Result<Self, WifiError> {
        check_window(config.window)?;
        if config.retry_limit == 0 {
            return Err(WifiError::new(
                "retry_limit",
                "at least 1 retransmission",
                config.retry_limit,
            ));
        }
        if config.lifetime == Dur::ZERO {
            return Err(WifiError::new("lifetime", "more than zero", config.lifetime));
        }
        check_seq("starting_sequence", config.starting_sequence)?;
        Ok(Originator {
            config,
            backlog: VecDeque::new(),
            outstanding: VecDeque::new(),
            spare: VecDeque::new(),
            next_seq: config.starting_sequence,
            awaiting_response: false,
            counters: OriginatorCounters::default(),
        })
    }

    pub fn config(&self) -> &OriginatorConfig {
        &self.config
    }

    pub fn counters(&self) -> OriginatorCounters {
        self.counters
    }

    /// WinStartO: the oldest sequence number neither acknowledged nor dropped (the next one
    /// to assign when nothing is outstanding). A BlockAckReq carries it to the recipient.
    pub fn win_start(&self) -> u16 {
        self.outstanding.front().map_or(self.next_seq, |o| o.seq)
    }

    /// The oldest sequence number neither acknowledged nor dropped, not counting MPDUs
    /// acknowledged in a TXOP still under way: what a BlockAckReq tells the recipient.
    pub fn first_unacked(&self) -> u16 {
        self.outstanding
            .iter()
            .find(|o| o.state != State::Acked)
            .map_or(self.next_seq, |o| o.seq)
    }

    /// [`Originator::window_room`] once the TXOPs ended by `now` have let go of their
    /// acknowledged MPDUs.
    pub fn window_room_at(&self, now: Time) -> usize {
        let start = self
            .outstanding
            .iter()
            .find(|o| !(o.state == State::Acked && o.hold.1 <= now))
            .map_or(self.next_seq, |o| o.seq);
        usize::from(self.config.window.saturating_sub(seq_sub(self.next_seq, start)))
    }

    /// Let go of the MPDUs acknowledged in TXOPs that have ended by `now`: the window
    /// moves past them.
    pub fn settle(&mut self, now: Time) {
        self.outstanding
            .retain(|o| !(o.state == State::Acked && o.hold.1 <= now));
    }

    /// The sequence number the next new MPDU will get.
    pub fn next_sequence(&self) -> u16 {
        self.next_seq
    }

    /// MPDUs not yet sent.
    pub fn backlog_len(&self) -> usize {
        self.backlog.len()
    }

    /// MPDUs sent and neither acknowledged nor dropped.
    pub fn outstanding_len(&self) -> usize {
        self.outstanding.iter().filter(|o| o.state != State::Acked).count()
    }

    /// Whether an A-MPDU awaits its BlockAck (or [`Originator::on_no_response`]).
    pub fn awaiting_response(&self) -> bool {
        self.awaiting_response
    }

    /// MPDUs that [`Originator::next_ampdu`] may still take from the backlog before the
    /// window is full: the window less the sequence numbers from WinStartO to the next one.
    pub fn window_room(&self) -> usize {
        usize::from(
            self.config
                .window
                .saturating_sub(seq_sub(self.next_seq, self.win_start())),
        )
    }

    /// The payloads [`Originator::next_ampdu`] would take, in its order: the failed MPDUs in
    /// sequence order, then the backlog as far as the window lets it in.
    pub fn queued(&self) -> impl Iterator<Item = &T> + '_ {
        self.queued_on(None)
    }

    /// As [`Originator::queued`], for an A-MPDU on link `on.0` at time `on.1`: failed
    /// MPDUs held for another link's TXOP still under way are left out.
    pub fn queued_on(&self, on: Option<(usize, Time)>) -> impl Iterator<Item = &T> + '_ {
        let failed = self
            .outstanding
            .iter()
            .filter(move |o| o.usable(on))
            .map(|o| &o.payload);
        failed.chain(self.backlog.iter().take(self.window_room()).map(|(p, _)| p))
    }

    /// MPDUs failed and awaiting retransmission.
    pub fn failed_len(&self) -> usize {
        self.failed_len_on(None)
    }

    /// MPDUs failed and awaiting retransmission that link `on.0` may send at `on.1`.
    pub fn failed_len_on(&self, on: Option<(usize, Time)>) -> usize {
        self.outstanding.iter().filter(|o| o.usable(on)).count()
    }

    /// Whether [`Originator::failed_len_on`] is above zero, from the first such MPDU.
    pub fn has_failed_on(&self, on: Option<(usize, Time)>) -> bool {
        self.outstanding.iter().any(|o| o.usable(on))
    }

    /// Queues an MSDU offered at `now`.
    pub fn enqueue(&mut self, payload: T, now: Time) {
        self.backlog.push_back((payload, now));
    }

    /// The MPDUs of the next A-MPDU, at most `max_mpdus` of them, with their sequence
    /// numbers: failed MPDUs first, in sequence order, then new ones while their sequence
    /// number stays inside the window. An empty list means nothing may be sent; otherwise
    /// the A-MPDU awaits [`Originator::on_block_ack`] or [`Originator::on_no_response`]
    /// before the next one.
    pub fn next_ampdu(&mut self, max_mpdus: usize) -> Result<Vec<(u16, &T)>, WifiError> {
        self.next_ampdu_on(max_mpdus, None)
    }

    /// As [`Originator::next_ampdu`], for an A-MPDU on link `on.0` at time `on.1`: failed
    /// MPDUs held for another link's TXOP still under way stay out of it.
    pub fn next_ampdu_on(&mut self, max_mpdus: usize, on: Option<(usize, Time)>) -> Result<Vec<(u16, &T)>, WifiError> {
        let mut chosen = Vec::new();
        self.choose(max_mpdus, on, |i, _, _| chosen.push(i))?;
        Ok(chosen
            .into_iter()
            .filter_map(|i| self.outstanding.get(i).map(|o| (o.seq, &o.payload)))
            .collect())
    }

    /// As [`Originator::next_ampdu_on`], appending copies of the MPDUs' payloads, with
    /// their sequence numbers, to `out` (which the caller reuses from one A-MPDU to the
    /// next); nothing is appended on an error.
    pub fn next_ampdu_into(
        &mut self,
        max_mpdus: usize,
        on: Option<(usize, Time)>,
        out: &mut Vec<(u16, T)>,
    ) -> Result<(), WifiError>
    where
        T: Clone,
    {
        self.choose(max_mpdus, on, |_, seq, p| out.push((seq, p.clone())))
    }

    /// Chooses the next A-MPDU's MPDUs and tells `each` of them in order: its place in
    /// `outstanding`, its sequence number and its payload.
    fn choose(
        &mut self,
        max_mpdus: usize,
        on: Option<(usize, Time)>,
        mut each: impl FnMut(usize, u16, &T),
    ) -> Result<(), WifiError> {
        if max_mpdus == 0 {
            return Err(WifiError::new("max_mpdus", "at least 1 MPDU", max_mpdus));
        }
        if self.awaiting_response {
            return Err(WifiError::new(
                "next_ampdu",
                "the previous A-MPDU's BlockAck or timeout first",
                "an A-MPDU awaiting its BlockAck",
            ));
        }
        let mut n = 0;
        for (i, o) in self.outstanding.iter_mut().enumerate() {
            if n == max_mpdus {
                break;
            }
            if o.usable(on) {
                o.state = State::InFlight;
                self.counters.sent += 1;
                self.counters.retransmitted += 1;
                each(i, o.seq, &o.payload);
                n += 1;
            }
        }
        let win_start = self.win_start();
        while n < max_mpdus && seq_sub(self.next_seq, win_start) < self.config.window {
            let Some((payload, enqueued)) = self.backlog.pop_front() else {
                break;
            };
            each(self.outstanding.len(), self.next_seq, &payload);
            n += 1;
            self.outstanding.push_back(Outstanding {
                seq: self.next_seq,
                payload,
                failures: 0,
                enqueued,
                state: State::InFlight,
                hold: (0, Time::ZERO),
            });
            self.next_seq = seq_add(self.next_seq, 1);
            self.counters.sent += 1;
        }
        self.awaiting_response = n > 0;
        Ok(())
    }

    /// The BlockAck of the A-MPDU in flight: `acked` lists the sequence numbers it
    /// acknowledged (others, such as ones acknowledged before, are ignored). Every other
    /// MPDU of the A-MPDU failed. Returns the MPDUs dropped, in sequence order.
    pub fn on_block_ack(&mut self, acked: &[u16], now: Time) -> Result<Vec<Dropped<T>>, WifiError> {
        self.on_block_ack_on(acked, now, (0, now))
    }

    /// As [`Originator::on_block_ack`], for an A-MPDU sent on link `hold.0` in a TXOP that
    /// ends at `hold.1`: the MPDUs that failed are held for that link until then, and the
    /// MPDUs acknowledged keep their place in the window until then ([`Originator::settle`]
    /// lets them go). A multi-link device settles the BlockAck when the TXOP starts (its
    /// outcome is drawn then); the hold keeps its MPDUs from going out again on another
    /// link, and the window from moving on, before the BlockAck (or its timeout) would
    /// have told the originator. With `hold.1` at `now` this is [`Originator::on_block_ack`].
    pub fn on_block_ack_on(
        &mut self,
        acked: &[u16],
        now: Time,
        hold: (usize, Time),
    ) -> Result<Vec<Dropped<T>>, WifiError> {
        if !self.awaiting_response {
            return Err(WifiError::new(
                "block_ack",
                "an A-MPDU awaiting its BlockAck (call next_ampdu first)",
                "none in flight",
            ));
        }
        // One bit per sequence number, on the stack: a BlockAck comes with every A-MPDU, and
        // a zeroed heap table of 4096 flags for each was 5 % of a Wi-Fi 7 run's instructions.
        let mut acked_set = [0u64; SEQ_MODULO as usize / 64];
        let is_acked = |set: &[u64], seq: u16| set[usize::from(seq / 64)] & (1 << (seq % 64)) != 0;
        for &seq in acked {
            check_seq("acked", seq)?;
            acked_set[usize::from(seq / 64)] |= 1 << (seq % 64);
        }
        self.awaiting_response = false;
        let mut dropped = Vec::new();
        // The entries kept go into the spare deque, which then takes the old one's place:
        // both keep their capacity from one BlockAck to the next.
        let mut kept = std::mem::take(&mut self.spare);
        kept.clear();
        for mut o in self.outstanding.drain(..) {
            if o.state != State::InFlight {
                kept.push_back(o);
            } else if is_acked(&acked_set, o.seq) {
                self.counters.acked += 1;
                if hold.1 > now {
                    o.state = State::Acked;
                    o.hold = hold;
                    kept.push_back(o);
                }
            } else {
                o.failures += 1;
                let reason = if o.failures > self.config.retry_limit {
                    Some(DropReason::RetryLimit)
                } else if now.since(o.enqueued) > self.config.lifetime {
                    Some(DropReason::Lifetime)
                } else {
                    None
                };
                match reason {
                    Some(reason) => {
                        match reason {
                            DropReason::RetryLimit => self.counters.dropped_retry_limit += 1,
                            DropReason::Lifetime => self.counters.dropped_lifetime += 1,
                        }
                        dropped.push(Dropped {
                            seq: o.seq,
                            payload: o.payload,
                            failures: o.failures,
                            reason,
                        });
                    }
                    None => {
                        o.state = State::Failed;
                        o.hold = hold;
                        kept.push_back(o);
                    }
                }
            }
        }
        self.spare = std::mem::replace(&mut self.outstanding, kept);
        Ok(dropped)
    }

    /// No BlockAck came back (timeout): every MPDU of the A-MPDU failed.
    pub fn on_no_response(&mut self, now: Time) -> Result<Vec<Dropped<T>>, WifiError> {
        self.on_block_ack(&[], now)
    }
}

/// The recipient's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecipientCounters {
    /// MPDUs received, duplicates included.
    pub received: u64,
    /// MPDUs released to the caller.
    pub released: u64,
    /// MPDUs discarded: a second copy of a buffered MPDU, or an MPDU before the window
    /// (released before, or given up by the originator).
    pub duplicates: u64,
}

/// The receive side of a BlockAck agreement: the receive reordering buffer.
#[derive(Debug)]
pub struct Recipient<T> {
    window: u16,
    win_start: u16,
    /// `window` slots; slot `i` holds sequence number `win_start + i`.
    buffer: VecDeque<Option<T>>,
    counters: RecipientCounters,
}

impl<T> Recipient<T> {
    /// A recipient whose window starts at `starting_sequence` (the agreement's starting
    /// sequence number).
    pub fn new(window: u16, starting_sequence: u16) -> Result<Self, WifiError> {
        check_window(window)?;
        check_seq("starting_sequence", starting_sequence)?;
        Ok(Recipient {
            window,
            win_start: starting_sequence,
            buffer: (0..window).map(|_| None).collect(),
            counters: RecipientCounters::default(),
        })
    }

    pub fn counters(&self) -> RecipientCounters {
        self.counters
    }

    /// WinStartB.
    pub fn win_start(&self) -> u16 {
        self.win_start
    }

    /// WinEndB = WinStartB + window − 1.
    pub fn win_end(&self) -> u16 {
        seq_add(self.win_start, self.window - 1)
    }

    /// MPDUs held in the buffer.
    pub fn buffered(&self) -> usize {
        self.buffer.iter().filter(|s| s.is_some()).count()
    }

    /// An MPDU received with sequence number `seq`. Returns the MPDUs released, in
    /// sequence order.
    pub fn receive(&mut self, seq: u16, payload: T) -> Result<Vec<(u16, T)>, WifiError> {
        let mut released = Vec::new();
        self.receive_into(seq, payload, &mut released)?;
        Ok(released)
    }

    /// As [`Recipient::receive`], appending the MPDUs released to `released` (which the
    /// caller reuses from one MPDU to the next); nothing is appended on an error.
    pub fn receive_into(&mut self, seq: u16, payload: T, released: &mut Vec<(u16, T)>) -> Result<(), WifiError> {
        check_seq("seq", seq)?;
        self.counters.received += 1;
        let offset = seq_sub(seq, self.win_start);
        if offset < self.window {
            match self.buffer.get_mut(usize::from(offset)) {
                Some(slot @ None) => *slot = Some(payload),
                _ => {
                    self.counters.duplicates += 1;
                    return Ok(());
                }
            }
        } else if offset < SEQ_HALF {
            let new_start = seq_sub(seq, self.window - 1);
            self.advance_to(new_start, released);
            if let Some(slot) = self.buffer.back_mut() {
                *slot = Some(payload);
            }
        } else {
            self.counters.duplicates += 1;
            return Ok(());
        }
        self.release_in_order(released);
        Ok(())
    }

    /// A BlockAckReq (or an originator's window start learnt otherwise) with starting
    /// sequence number `ssn`. If `ssn` lies ahead of WinStartB, WinStartB moves to it and
    /// everything buffered before it is released, then the in-order run from it; otherwise
    /// nothing changes. Returns the MPDUs released, in sequence order.
    pub fn on_block_ack_req(&mut self, ssn: u16) -> Result<Vec<(u16, T)>, WifiError> {
        let mut released = Vec::new();
        self.on_block_ack_req_into(ssn, &mut released)?;
        Ok(released)
    }

    /// As [`Recipient::on_block_ack_req`], appending the MPDUs released to `released`;
    /// nothing is appended on an error.
    pub fn on_block_ack_req_into(&mut self, ssn: u16, released: &mut Vec<(u16, T)>) -> Result<(), WifiError> {
        check_seq("ssn", ssn)?;
        let offset = seq_sub(ssn, self.win_start);
        if offset != 0 && offset < SEQ_HALF {
            self.advance_to(ssn, released);
            self.release_in_order(released);
        }
        Ok(())
    }

    /// Moves WinStartB forward to `new_start`, releasing what is buffered before it.
    fn advance_to(&mut self, new_start: u16, released: &mut Vec<(u16, T)>) {
        let shift = seq_sub(new_start, self.win_start).min(self.window);
        for _ in 0..shift {
            if let Some(Some(payload)) = self.buffer.pop_front() {
                released.push((self.win_start, payload));
                self.counters.released += 1;
            }
            self.buffer.push_back(None);
            self.win_start = seq_add(self.win_start, 1);
        }
        self.win_start = new_start;
    }

    /// Releases the in-order run from WinStartB, moving WinStartB past it.
    fn release_in_order(&mut self, released: &mut Vec<(u16, T)>) {
        while let Some(Some(_)) = self.buffer.front() {
            if let Some(Some(payload)) = self.buffer.pop_front() {
                released.push((self.win_start, payload));
                self.counters.released += 1;
            }
            self.buffer.push_back(None);
            self.win_start = seq_add(self.win_start, 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_txop_under_way_holds_its_failures_and_its_window_room_for_its_link() {
        // Link 0 sends 0..4 in a TXOP from 0 to 5 ms: 0 and 2 fail, 1 and 3 are acknowledged.
        let mut o = originator(6, 10);
        let t0 = Time::ZERO;
        let end = Time::from_millis(5);
        let sent: Vec<u16> = o.next_ampdu_on(4, Some((0, t0))).unwrap().iter().map(|m| m.0).collect();
        assert_eq!(sent, [0, 1, 2, 3]);
        assert!(o.on_block_ack_on(&[1, 3], t0, (0, end)).unwrap().is_empty());
        // At 1 ms link 1 may not resend 0 and 2, and 0..4 still fill the window: 2 new ones.
        let at = Time::from_millis(1);
        assert_eq!(o.failed_len_on(Some((1, at))), 0);
        assert_eq!(o.failed_len_on(Some((0, at))), 2);
        assert!(!o.has_failed_on(Some((1, at))) && o.has_failed_on(Some((0, at))) && o.has_failed_on(None));
        assert_eq!(o.window_room_at(at), 2);
        assert_eq!(o.outstanding_len(), 2);
        assert_eq!((o.win_start(), o.first_unacked()), (0, 0));
        let b: Vec<u16> = o.next_ampdu_on(4, Some((1, at))).unwrap().iter().map(|m| m.0).collect();
        assert_eq!(b, [4, 5]);
        assert!(o
            .on_block_ack_on(&[4, 5], at, (1, Time::from_millis(2)))
            .unwrap()
            .is_empty());
        // After the TXOP, link 1 resends 0 and 2; the window still starts at 0 (failed), so
        // 0..5 fill it and nothing new goes.
        assert_eq!(o.failed_len_on(Some((1, end))), 2);
        o.settle(end);
        assert_eq!(o.window_room_at(end), o.window_room());
        assert_eq!(o.window_room(), 0);
        let c: Vec<u16> = o
            .next_ampdu_on(8, Some((1, end)))
            .unwrap()
            .iter()
            .map(|m| m.0)
            .collect();
        assert_eq!(c, [0, 2]);
        assert_eq!(o.counters().retransmitted, 2);
    }

    fn originator(window: u16, offered: u32) -> Originator<u32> {
        let mut o = Originator::new(OriginatorConfig {
            window,
            ..OriginatorConfig::default()
        })
        .unwrap();
        for p in 0..offered {
            o.enqueue(p, Time::ZERO);
        }
        o
    }

    fn seqs(ampdu: &[(u16, &u32)]) -> Vec<u16> {
        ampdu.iter().map(|(s, _)| *s).collect()
    }

    fn released_seqs(released: &[(u16, u32)]) -> Vec<u16> {
        released.iter().map(|(s, _)| *s).collect()
    }

    #[test]
    fn sequence_arithmetic_wraps_at_4096() {
        assert_eq!(seq_add(4095, 1), 0);
        assert_eq!(seq_add(4000, 200), 104);
        assert_eq!(seq_sub(0, 4095), 1);
        assert_eq!(seq_sub(104, 4000), 200);
        assert_eq!(seq_sub(3, 3), 0);
    }

    #[test]
    fn retransmissions_first_then_new_mpdus_up_to_the_window_edge() {
        let mut o = originator(64, 100);
        let mut r = Recipient::<u32>::new(64, 0).unwrap();
        let first: Vec<(u16, u32)> = o.next_ampdu(32).unwrap().into_iter().map(|(s, &p)| (s, p)).collect();
        assert_eq!(
            first.iter().map(|x| x.0).collect::<Vec<_>>(),
            (0..32).collect::<Vec<u16>>()
        );

        // MPDUs 3 and 17 are lost.
        let mut acked = Vec::new();
        for &(s, p) in &first {
            if s == 3 || s == 17 {
                continue;
            }
            acked.push(s);
            let released = released_seqs(&r.receive(s, p).unwrap());
            match s {
                0..=2 => assert_eq!(released, vec![s]),
                _ => assert!(released.is_empty(), "SN {s} released {released:?}"),
            }
        }
        assert_eq!(r.win_start(), 3);
        assert_eq!(r.buffered(), 13 + 14);
        assert!(o.on_block_ack(&acked, Time::from_millis(1)).unwrap().is_empty());
        assert_eq!(o.win_start(), 3);

        // Retransmissions 3 and 17, then 30 new MPDUs: 32..=61.
        let second: Vec<(u16, u32)> = o.next_ampdu(32).unwrap().into_iter().map(|(s, &p)| (s, p)).collect();
        let mut expected = vec![3, 17];
        expected.extend(32..=61);
        assert_eq!(second.iter().map(|x| x.0).collect::<Vec<_>>(), expected);
        assert_eq!(second[0], (3, 3));
        assert_eq!(second[1], (17, 17));

        let mut it = second.iter();
        let &(s, p) = it.next().unwrap();
        assert_eq!(released_seqs(&r.receive(s, p).unwrap()), (3..=16).collect::<Vec<_>>());
        let &(s, p) = it.next().unwrap();
        assert_eq!(released_seqs(&r.receive(s, p).unwrap()), (17..=31).collect::<Vec<_>>());
        for &(s, p) in it {
            assert_eq!(released_seqs(&r.receive(s, p).unwrap()), vec![s]);
        }
        assert_eq!(r.win_start(), 62);
        assert_eq!(r.counters().released, 62);

        let c = o.counters();
        assert_eq!((c.sent, c.retransmitted, c.acked), (64, 2, 30));
        // The A-MPDU awaits its BlockAck: no other may be built.
        assert_eq!(o.next_ampdu(32).unwrap_err().parameter, "next_ampdu");

        // With a 64-MPDU limit the window edge binds: WinStartO 3, so at most SN 66.
        let mut o = originator(64, 100);
        o.next_ampdu(32).unwrap();
        let acked: Vec<u16> = (0..32).filter(|s| *s != 3 && *s != 17).collect();
        o.on_block_ack(&acked, Time::ZERO).unwrap();
        let mut expected = vec![3, 17];
        expected.extend(32..=66);
        assert_eq!(seqs(&o.next_ampdu(64).unwrap()), expected);
        assert_eq!(o.next_sequence(), 67);
        // Everything acknowledged but 3: the window may reach SN 66 only; 67.. wait.
        let acked: Vec<u16> = expected.iter().copied().filter(|s| *s != 3).collect();
        o.on_block_ack(&acked, Time::ZERO).unwrap();
        assert_eq!(o.win_start(), 3);
        assert_eq!(seqs(&o.next_ampdu(64).unwrap()), vec![3]);
        o.on_block_ack(&[3], Time::ZERO).unwrap();
        assert_eq!(o.win_start(), 67);
        assert_eq!(seqs(&o.next_ampdu(64).unwrap()), (67..=99).collect::<Vec<_>>());
    }

    #[test]
    fn retry_limit_drops_and_recipient_releases_on_block_ack_req() {
        let mut o = originator(64, 10);
        let mut r = Recipient::<u32>::new(64, 0).unwrap();
        let first: Vec<(u16, u32)> = o.next_ampdu(32).unwrap().into_iter().map(|(s, &p)| (s, p)).collect();
        assert_eq!(first.len(), 10);
        let mut released = Vec::new();
        for &(s, p) in first.iter().filter(|(s, _)| *s != 5) {
            released.extend(released_seqs(&r.receive(s, p).unwrap()));
        }
        assert_eq!(released, vec![0, 1, 2, 3, 4]);
        assert_eq!(r.buffered(), 4);
        let acked: Vec<u16> = (0..10).filter(|s| *s != 5).collect();
        assert!(o.on_block_ack(&acked, Time::from_millis(1)).unwrap().is_empty());

        // Failures 2 to 7 (retransmissions 1 to 6) keep it.
        for retransmission in 1..=6 {
            assert_eq!(
                seqs(&o.next_ampdu(32).unwrap()),
                vec![5],
                "retransmission {retransmission}"
            );
            assert!(o
                .on_no_response(Time::from_millis(1 + retransmission))
                .unwrap()
                .is_empty());
            assert_eq!(o.win_start(), 5);
        }
        // The 7th retransmission fails too: its 8th failure, beyond the limit of 7.
        assert_eq!(seqs(&o.next_ampdu(32).unwrap()), vec![5]);
        let dropped = o.on_no_response(Time::from_millis(8)).unwrap();
        assert_eq!(
            dropped,
            vec![Dropped {
                seq: 5,
                payload: 5,
                failures: 8,
                reason: DropReason::RetryLimit
            }]
        );
        assert_eq!(o.win_start(), 10);
        assert_eq!(o.outstanding_len(), 0);
        assert!(o.next_ampdu(32).unwrap().is_empty());
        assert!(!o.awaiting_response());
        let c = o.counters();
        assert_eq!(
            (
                c.sent,
                c.retransmitted,
                c.acked,
                c.dropped_retry_limit,
                c.dropped_lifetime
            ),
            (17, 7, 9, 1, 0)
        );

        // The recipient holds 6..=9 until it learns WinStartO = 10.
        assert!(r.on_block_ack_req(5).unwrap().is_empty());
        assert_eq!(
            released_seqs(&r.on_block_ack_req(o.win_start()).unwrap()),
            vec![6, 7, 8, 9]
        );
        assert_eq!(r.win_start(), 10);
        assert_eq!(r.buffered(), 0);
        // A late copy of 5 is discarded.
        assert!(r.receive(5, 5).unwrap().is_empty());
        assert_eq!(r.counters().duplicates, 1);
    }

    #[test]
    fn a_block_ack_across_the_sequence_wrap_fails_exactly_the_mpdus_it_leaves_out() {
        let mut o = Originator::new(OriginatorConfig {
            starting_sequence: 4090,
            ..OriginatorConfig::default()
        })
        .unwrap();
        for p in 0..12u32 {
            o.enqueue(p, Time::ZERO);
        }
        let sent: Vec<u16> = o.next_ampdu(12).unwrap().iter().map(|m| m.0).collect();
        assert_eq!(sent, [4090, 4091, 4092, 4093, 4094, 4095, 0, 1, 2, 3, 4, 5]);
        // A number outside 0..4096 is refused and leaves the A-MPDU awaiting its BlockAck.
        assert!(o.on_block_ack(&[4093, 4096], Time::ZERO).is_err());
        assert!(o.awaiting_response());
        // Acknowledged: both ends of the space and either side of a 64-bit word's edge.
        assert!(o
            .on_block_ack(&[4095, 0, 4093, 5, 63, 64], Time::ZERO)
            .unwrap()
            .is_empty());
        assert_eq!(o.counters().acked, 4);
        assert_eq!(o.outstanding_len(), 8);
        let again: Vec<u16> = o.next_ampdu(12).unwrap().iter().map(|m| m.0).collect();
        assert_eq!(again, [4090, 4091, 4092, 4094, 1, 2, 3, 4]);
        // A second BlockAck reuses the room of the first: the same outcome again.
        assert!(o.on_block_ack(&[4090, 4], Time::ZERO).unwrap().is_empty());
        assert_eq!(o.counters().acked, 6);
        assert_eq!(o.outstanding_len(), 6);
    }

    #[test]
    fn the_recipients_releases_are_appended_to_what_the_caller_holds() {
        let mut r = Recipient::<u32>::new(8, 0).unwrap();
        let mut got = vec![(99, 99)];
        r.receive_into(1, 1, &mut got).unwrap();
        assert_eq!(got, [(99, 99)]);
        r.receive_into(0, 0, &mut got).unwrap();
        assert_eq!(got, [(99, 99), (0, 0), (1, 1)]);
        assert!(r.receive_into(4096, 7, &mut got).is_err());
        r.receive_into(3, 3, &mut got).unwrap();
        assert!(r.on_block_ack_req_into(4096, &mut got).is_err());
        r.on_block_ack_req_into(3, &mut got).unwrap();
        assert_eq!(got, [(99, 99), (0, 0), (1, 1), (3, 3)]);
        assert_eq!(r.win_start(), 4);
    }

    #[test]
    fn retry_limit_is_configurable() {
        let mut o = Originator::new(OriginatorConfig {
            retry_limit: 2,
            ..OriginatorConfig::default()
        })
        .unwrap();
        o.enqueue('a', Time::ZERO);
        let mut failures = 0;
        loop {
            assert_eq!(o.next_ampdu(4).unwrap(), vec![(0, &'a')]);
            failures += 1;
            if !o.on_no_response(Time::ZERO).unwrap().is_empty() {
                break;
            }
        }
        assert_eq!(failures, 3);
        assert_eq!(o.counters().retransmitted, 2);
    }

    #[test]
    fn recipient_moves_its_window_to_an_sn_beyond_win_end() {
        let mut r = Recipient::<u32>::new(64, 0).unwrap();
        for s in 1..=10 {
            assert!(r.receive(s, u32::from(s)).unwrap().is_empty());
        }
        assert_eq!((r.win_start(), r.win_end()), (0, 63));
        // SN 100 > WinEndB 63: WinEndB = 100, WinStartB = 100 − 64 + 1 = 37.
        assert_eq!(
            released_seqs(&r.receive(100, 100).unwrap()),
            (1..=10).collect::<Vec<_>>()
        );
        assert_eq!((r.win_start(), r.win_end()), (37, 100));
        assert_eq!(r.buffered(), 1);
        // SN 0, now before the window, is discarded.
        assert!(r.receive(0, 0).unwrap().is_empty());
        assert_eq!(r.counters().duplicates, 1);
        let mut released = Vec::new();
        for s in 37..=99 {
            released.extend(released_seqs(&r.receive(s, u32::from(s)).unwrap()));
        }
        assert_eq!(released, (37..=100).collect::<Vec<_>>());
        assert_eq!(r.win_start(), 101);

        // SN at WinEndB stays inside; one beyond moves the window by one.
        let mut r = Recipient::<u32>::new(64, 0).unwrap();
        assert!(r.receive(63, 63).unwrap().is_empty());
        assert_eq!(r.win_start(), 0);
        assert!(r.receive(64, 64).unwrap().is_empty());
        assert_eq!(r.win_start(), 1);

        // 2047 ahead is after WinStartB; 2048 ahead counts as before it.
        let mut r = Recipient::<u32>::new(64, 0).unwrap();
        assert!(r.receive(2048, 0).unwrap().is_empty());
        assert_eq!((r.win_start(), r.counters().duplicates), (0, 1));
        assert!(r.receive(2047, 0).unwrap().is_empty());
        assert_eq!(r.win_start(), 2047 - 63);

        // Across the wrap: window 4090..=57 (mod 4096).
        let mut r = Recipient::<u32>::new(64, 4090).unwrap();
        assert!(r.receive(4095, 0).unwrap().is_empty());
        assert!(r.receive(2, 0).unwrap().is_empty());
        // SN 60 > WinEndB 57: WinStartB = 60 − 63 = 4093; 4095 and 2 stay buffered (4095
        // is not yet in order: 4093 and 4094 are missing).
        assert!(r.receive(60, 0).unwrap().is_empty());
        assert_eq!(r.win_start(), 4093);
        assert_eq!(released_seqs(&r.on_block_ack_req(0).unwrap()), vec![4095]);
        assert_eq!(r.win_start(), 0);
        assert_eq!(released_seqs(&r.receive(0, 0).unwrap()), vec![0]);
        assert_eq!(released_seqs(&r.receive(1, 0).unwrap()), vec![1, 2]);
    }

    #[test]
    fn lifetime_expiry_drops() {
        let mut o = originator(64, 4);
        assert_eq!(seqs(&o.next_ampdu(32).unwrap()), vec![0, 1, 2, 3]);
        assert!(o.on_block_ack(&[0, 2, 3], Time::from_millis(100)).unwrap().is_empty());
        assert_eq!(seqs(&o.next_ampdu(32).unwrap()), vec![1]);
        // 500 ms old exactly: not past the lifetime.
        assert!(o.on_no_response(Time::from_millis(500)).unwrap().is_empty());
        assert_eq!(seqs(&o.next_ampdu(32).unwrap()), vec![1]);
        let dropped = o.on_no_response(Time::from_millis(500) + Dur::from_nanos(1)).unwrap();
        assert_eq!(
            dropped,
            vec![Dropped {
                seq: 1,
                payload: 1,
                failures: 3,
                reason: DropReason::Lifetime
            }]
        );
        assert_eq!(o.win_start(), 4);
        let c = o.counters();
        assert_eq!((c.dropped_lifetime, c.dropped_retry_limit, c.acked), (1, 0, 3));

        // A 10 ms lifetime, counted from enqueue at 5 ms: failing at 16 ms drops at once.
        let mut o = Originator::new(OriginatorConfig {
            lifetime: Dur::from_millis(10),
            ..OriginatorConfig::default()
        })
        .unwrap();
        o.enqueue(7u32, Time::from_millis(5));
        o.enqueue(8u32, Time::from_millis(15));
        assert_eq!(seqs(&o.next_ampdu(8).unwrap()), vec![0, 1]);
        let dropped = o.on_no_response(Time::from_millis(16)).unwrap();
        assert_eq!(dropped.len(), 1);
        assert_eq!(
            (dropped[0].seq, dropped[0].payload, dropped[0].reason),
            (0, 7, DropReason::Lifetime)
        );
        assert_eq!(o.win_start(), 1);
        assert_eq!(seqs(&o.next_ampdu(8).unwrap()), vec![1]);
    }

    #[test]
    fn ten_thousand_mpdus_wrap_and_arrive_once_in_order() {
        let n: u32 = 10_000;
        let mut o = Originator::new(OriginatorConfig {
            window: 64,
            lifetime: Dur::from_secs(3600),
            ..OriginatorConfig::default()
        })
        .unwrap();
        let mut r = Recipient::<u32>::new(64, 0).unwrap();
        for p in 0..n {
            o.enqueue(p, Time::ZERO);
        }
        let mut attempts = vec![0u32; n as usize];
        let mut copies = vec![0u32; n as usize];
        let mut released: Vec<(u16, u32)> = Vec::new();
        let mut round = 0u64;
        while o.backlog_len() > 0 || o.outstanding_len() > 0 {
            round += 1;
            let now = Time::from_millis(round);
            let ampdu: Vec<(u16, u32)> = o.next_ampdu(32).unwrap().into_iter().map(|(s, &p)| (s, p)).collect();
            assert!(!ampdu.is_empty(), "round {round}: nothing to send");
            let mut acked = Vec::new();
            for (s, p) in ampdu {
                assert_eq!(u32::from(s), p % 4096);
                let attempt = &mut attempts[p as usize];
                *attempt += 1;
                // Every 7th MPDU is lost once; those with p % 11 == 3 twice.
                let lost = (p.is_multiple_of(7) && *attempt == 1) || (p % 11 == 3 && *attempt <= 2);
                if !lost {
                    copies[p as usize] += 1;
                    released.extend(r.receive(s, p).unwrap());
                    acked.push(s);
                }
            }
            // Every 13th BlockAck is lost: the recipient has the MPDUs, the originator
            // resends them.
            let dropped = if round.is_multiple_of(13) {
                o.on_no_response(now).unwrap()
            } else {
                o.on_block_ack(&acked, now).unwrap()
            };
            assert!(dropped.is_empty());
        }
        assert_eq!(released.len(), n as usize);
        assert!(released.iter().map(|x| x.1).eq(0..n));
        assert!(released.iter().all(|&(s, p)| u32::from(s) == p % 4096));
        assert_eq!(o.next_sequence(), (n % 4096) as u16);
        assert_eq!(r.win_start(), (n % 4096) as u16);

        let sent: u64 = attempts.iter().map(|&a| u64::from(a)).sum();
        let duplicates: u64 = copies.iter().map(|&c| u64::from(c) - 1).sum();
        assert!(copies.iter().all(|&c| c >= 1));
        assert!(duplicates > 100, "{duplicates} duplicates");
        let c = o.counters();
        assert_eq!(c.sent, sent);
        assert_eq!(c.retransmitted, sent - u64::from(n));
        assert_eq!(c.acked, u64::from(n));
        let rc = r.counters();
        assert_eq!(rc.duplicates, duplicates);
        assert_eq!(rc.received, sent - attempts_lost(&attempts));
        assert_eq!(rc.released, u64::from(n));
    }

    /// Transmissions lost in [`ten_thousand_mpdus_wrap_and_arrive_once_in_order`].
    fn attempts_lost(attempts: &[u32]) -> u64 {
        attempts
            .iter()
            .enumerate()
            .map(|(p, &a)| {
                let p = p as u32;
                let lost = if p % 11 == 3 { 2 } else { u32::from(p.is_multiple_of(7)) };
                u64::from(lost.min(a))
            })
            .sum()
    }

    #[test]
    fn duplicates_are_discarded_and_counted() {
        let mut r = Recipient::<&str>::new(64, 0).unwrap();
        assert_eq!(r.receive(0, "a").unwrap(), vec![(0, "a")]);
        assert!(r.receive(0, "a again").unwrap().is_empty());
        assert!(r.receive(2, "c").unwrap().is_empty());
        assert!(r.receive(2, "c again").unwrap().is_empty());
        assert_eq!(r.counters().duplicates, 2);
        assert_eq!(r.receive(1, "b").unwrap(), vec![(1, "b"), (2, "c")]);
        let c = r.counters();
        assert_eq!((c.received, c.released, c.duplicates), (5, 3, 2));
    }

    #[test]
    fn block_ack_req_behind_or_at_win_start_changes_nothing() {
        let mut r = Recipient::<u32>::new(64, 100).unwrap();
        assert!(r.receive(102, 0).unwrap().is_empty());
        assert!(r.on_block_ack_req(100).unwrap().is_empty());
        assert!(r.on_block_ack_req(50).unwrap().is_empty());
        assert!(r.on_block_ack_req(100 + 2048).unwrap().is_empty());
        assert_eq!((r.win_start(), r.buffered()), (100, 1));
        // Far ahead (beyond the window): all released, window restarts at the SSN.
        assert_eq!(released_seqs(&r.on_block_ack_req(1000).unwrap()), vec![102]);
        assert_eq!((r.win_start(), r.win_end(), r.buffered()), (1000, 1063, 0));
    }

    #[test]
    fn bad_parameters_are_errors_naming_the_parameter() {
        let with = |f: fn(&mut OriginatorConfig)| {
            let mut c = OriginatorConfig::default();
            f(&mut c);
            Originator::<u32>::new(c).map(|_| ()).map_err(|e| e.parameter)
        };
        assert_eq!(with(|c| c.window = 0), Err("window"));
        assert_eq!(with(|c| c.window = 2048), Err("window"));
        assert_eq!(with(|c| c.window = 1025), Err("window"));
        assert_eq!(with(|c| c.window = 1024), Ok(()));
        assert_eq!(with(|c| c.window = 1), Ok(()));
        assert_eq!(with(|c| c.retry_limit = 0), Err("retry_limit"));
        assert_eq!(with(|c| c.lifetime = Dur::ZERO), Err("lifetime"));
        assert_eq!(with(|c| c.starting_sequence = 4096), Err("starting_sequence"));
        assert_eq!(with(|c| c.starting_sequence = 4095), Ok(()));
        let e = Originator::<u32>::new(OriginatorConfig {
            window: 2048,
            ..OriginatorConfig::default()
        })
        .unwrap_err();
        assert_eq!(e.to_string(), "window: expected 1 to 1024 MPDUs, found 2048");

        assert_eq!(Recipient::<u32>::new(0, 0).unwrap_err().parameter, "window");
        assert_eq!(Recipient::<u32>::new(2048, 0).unwrap_err().parameter, "window");
        assert_eq!(
            Recipient::<u32>::new(64, 4096).unwrap_err().parameter,
            "starting_sequence"
        );
        let mut r = Recipient::<u32>::new(64, 0).unwrap();
        assert_eq!(r.receive(4096, 0).unwrap_err().parameter, "seq");
        assert_eq!(r.on_block_ack_req(5000).unwrap_err().parameter, "ssn");
        assert_eq!(r.counters(), RecipientCounters::default());

        let mut o = originator(64, 3);
        assert_eq!(o.next_ampdu(0).unwrap_err().parameter, "max_mpdus");
        assert_eq!(o.on_block_ack(&[0], Time::ZERO).unwrap_err().parameter, "block_ack");
        assert_eq!(o.on_no_response(Time::ZERO).unwrap_err().parameter, "block_ack");
        assert_eq!(seqs(&o.next_ampdu(8).unwrap()), vec![0, 1, 2]);
        assert_eq!(o.on_block_ack(&[0, 4096], Time::ZERO).unwrap_err().parameter, "acked");
        // The rejected BlockAck changed nothing: the A-MPDU still awaits one.
        assert!(o.awaiting_response());
        assert!(o.on_block_ack(&[0, 1, 2], Time::ZERO).unwrap().is_empty());
        assert_eq!(o.counters().acked, 3);
    }
}
