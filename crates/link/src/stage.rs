//! The stages a link model is made of, shared by the models: a faulty middlebox, a queue
//! discipline with its timer, and a propagation delay line.

use crate::{Action, Fault, Io, LinkPacket, Loss, LossKind, Port, QueueInfo, Timer};
use l4s_aqm::{AqmConfig, Dequeued, Dropped, Enqueued, Qdisc, QueueId, QueueStats};
use l4s_core::{Rng, Time};
use std::collections::VecDeque;

/// Rewrite a packet's ECN field as `fault` does, from its start (counted from `origin`, the
/// run's time 0; no fault before it is known).
pub(crate) fn apply_fault<P: LinkPacket>(fault: Option<Fault>, origin: Option<Time>, now: Time, pkt: &mut P) {
    if let (Some(f), Some(origin)) = (fault, origin) {
        if now >= origin + f.start {
            let e = f.kind.apply(pkt.ecn());
            if e != pkt.ecn() {
                pkt.set_ecn(e);
            }
        }
    }
}

/// Where a model's grid of transmission times (slots, trace opportunities) counts from.
/// The run's time 0 once [`crate::Link::start`] gave it; before that (a live forwarder
/// takes packets before the run's clock is fixed) the time of the first packet, so that
/// the first opportunity is the next one and not one a clock's age ago.
#[derive(Clone, Copy, Default)]
pub(crate) struct Origin {
    started: Option<Time>,
    provisional: Option<Time>,
}

impl Origin {
    /// The grid's time 0.
    pub(crate) fn get(&self) -> Time {
        self.started.or(self.provisional).unwrap_or(Time::ZERO)
    }

    /// The run's time 0, if the link was started (faults count from it only).
    pub(crate) fn started(&self) -> Option<Time> {
        self.started
    }

    pub(crate) fn start(&mut self, origin: Time) {
        self.started = Some(origin);
    }

    /// Called with the time of every call before the start: true when it fixed the
    /// provisional origin (the grid counts from `now`; its state starts afresh).
    pub(crate) fn provisional(&mut self, now: Time) -> bool {
        if self.started.is_some() || self.provisional.is_some() {
            return false;
        }
        self.provisional = Some(now);
        true
    }
}

/// Put `pkt`, due at `due`, into `q` (ordered by due time) behind every packet due no
/// later, searching from the back, where it nearly always goes. Its position.
pub fn insert_by_due<P>(q: &mut VecDeque<(Time, P)>, due: Time, pkt: P) -> usize {
    match q.back() {
        Some((last, _)) if *last > due => {
            let at = q.iter().rposition(|(d, _)| *d <= due).map_or(0, |i| i + 1);
            q.insert(at, (due, pkt));
            at
        }
        _ => {
            q.push_back((due, pkt));
            q.len() - 1
        }
    }
}

/// A propagation delay line towards port 1. Constant delays keep the order, so it is a
/// FIFO and only its head has a wake-up.
pub(crate) struct DelayLine<P> {
    q: VecDeque<(Time, P)>,
}

impl<P> Default for DelayLine<P> {
    fn default() -> Self {
        DelayLine { q: VecDeque::new() }
    }
}

impl<P> DelayLine<P> {
    /// `pkt` reaches port 1 at `due`; the head's wake-up is asked for with `timer`. A
    /// packet already due with nothing ahead of it leaves at once.
    pub(crate) fn push(&mut self, pkt: P, due: Time, io: &mut Io<'_, P>, timer: Timer) {
        if self.q.is_empty() && due <= io.now {
            io.deliver(1, pkt, due);
            return;
        }
        self.q.push_back((due, pkt));
        if self.q.len() == 1 {
            io.wake(timer, due);
        }
    }

    /// `pkt` reaches port 1 at `due`, later than now, behind the packets due no later
    /// (given before they arrive, packets of several senders need not come in order); a
    /// new head's wake-up is asked for with `timer`.
    pub(crate) fn insert(&mut self, pkt: P, due: Time, io: &mut Io<'_, P>, timer: Timer) {
        if insert_by_due(&mut self.q, due, pkt) == 0 {
            io.wake(timer, due);
        }
    }

    /// Keep `pkt`, due at `due`, without asking for a wake-up: the caller takes it with
    /// [`DelayLine::take`] (a link without a delay keeps its packet in service here).
    pub(crate) fn hold(&mut self, pkt: P, due: Time) {
        self.q.push_back((due, pkt));
    }

    /// When the head is due.
    pub(crate) fn head_due(&self) -> Option<Time> {
        self.q.front().map(|(due, _)| *due)
    }

    /// The head, whether due or not, with its due time.
    pub(crate) fn take(&mut self) -> Option<(Time, P)> {
        self.q.pop_front()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.q.is_empty()
    }

    /// The head's wake-up: deliver it if it is due and ask for the next one.
    pub(crate) fn arrive(&mut self, io: &mut Io<'_, P>, timer: Timer) {
        if self.q.front().is_none_or(|(due, _)| *due > io.now) {
            return;
        }
        let Some((due, pkt)) = self.q.pop_front() else {
            return;
        };
        if let Some((next, _)) = self.q.front() {
            io.wake(timer, *next);
        }
        io.deliver(1, pkt, due);
    }
}

/// A link's one queue: the queue discipline, its pending timer request, and the packets
/// it dropped that are still to be reported.
pub(crate) struct Queue<P> {
    pub(crate) qdisc: Box<dyn Qdisc<P>>,
    pub(crate) info: [QueueInfo; 1],
    timer: Option<Time>,
    pub(crate) drops: Vec<Dropped<P>>,
}

impl<P: LinkPacket + 'static> Queue<P> {
    /// The queue discipline `aqm`, seeded with `rng`.
    pub(crate) fn new(aqm: &AqmConfig, rng: Rng) -> Queue<P> {
        let qdisc: Box<dyn Qdisc<P>> = l4s_aqm::build(aqm, rng);
        let info = [QueueInfo {
            label: String::new(),
            aqm: qdisc.kind(),
            subqueues: qdisc.queue_ids(),
        }];
        Queue {
            qdisc,
            info,
            timer: None,
            drops: Vec::new(),
        }
    }

    /// Ask for the queue discipline's timer (with `timer`) when it moved.
    pub(crate) fn arm(&mut self, io: &mut Io<'_, P>, timer: Timer) {
        match self.qdisc.next_timeout() {
            Some(t) if self.timer != Some(t) => {
                self.timer = Some(t);
                io.wake(timer, t);
            }
            Some(_) => {}
            None => self.timer = None,
        }
    }

    /// Note when the queue discipline's timer is due, without asking for a wake-up (the
    /// link takes it itself, [`crate::Link::defer_steps`]).
    pub(crate) fn note_timer(&mut self) {
        self.timer = self.qdisc.next_timeout();
    }

    /// The timer noted last.
    pub(crate) fn noted_timer(&self) -> Option<Time> {
        self.timer
    }

    /// Run the discipline's timer due at `at`, which the link took itself.
    pub(crate) fn run_timer(&mut self, at: Time) {
        self.timer = None;
        self.qdisc.on_timeout(at);
    }

    /// The timer asked for at `at` is due: run the discipline's timer unless the request
    /// was superseded, and ask for the next.
    pub(crate) fn on_timer(&mut self, at: Time, io: &mut Io<'_, P>, timer: Timer) {
        if self.timer != Some(at) {
            return;
        }
        self.timer = None;
        self.qdisc.on_timeout(io.now);
        self.arm(io, timer);
    }

    /// Put `pkt` in the queue; a packet the discipline refused is reported lost at once.
    /// Whether it was queued.
    pub(crate) fn enqueue(&mut self, pkt: P, io: &mut Io<'_, P>) -> bool {
        match self.qdisc.enqueue(pkt, io.now) {
            Enqueued::Queued { .. } => true,
            Enqueued::Dropped(d) => {
                io.lost(lost(d));
                false
            }
        }
    }

    /// Put `pkt` in the queue and take the next packet out at once
    /// ([`Qdisc::enqueue_dequeue`]); a packet the discipline refused is reported lost at
    /// once. `None` when it was refused; else what the dequeue released.
    pub(crate) fn enqueue_dequeue(&mut self, pkt: P, io: &mut Io<'_, P>) -> Option<Option<Dequeued<P>>> {
        match self.qdisc.enqueue_dequeue(pkt, io.now, &mut self.drops) {
            Ok(d) => Some(d),
            Err(d) => {
                io.lost(lost(d));
                None
            }
        }
    }

    /// Report the packets the queue discipline dropped.
    pub(crate) fn flush_drops(&mut self, io: &mut Io<'_, P>) {
        for d in self.drops.drain(..) {
            io.lost(lost(d));
        }
    }

    pub(crate) fn stats(&self) -> Vec<(QueueId, QueueStats)> {
        self.qdisc.stats()
    }

    pub(crate) fn backlog(&self) -> (u64, u64) {
        (self.qdisc.len_packets() as u64, self.qdisc.len_bytes())
    }
}

/// A drop by the queue discipline as the link reports it (its only queue).
fn lost<P>(d: Dropped<P>) -> Loss<P> {
    Loss {
        kind: LossKind::Queue {
            queue: 0,
            sub: d.queue,
            reason: d.reason,
        },
        sojourn: d.sojourn,
        pkt: d.pkt,
    }
}

/// For a decorator: hand each packet the inner link delivered among the actions from
/// `from` on to `f` (which delivers it, holds it or reports it lost), in order, keeping the
/// other actions as they were. `scratch` is reused between calls.
pub(crate) fn each_delivery<P>(
    io: &mut Io<'_, P>,
    from: usize,
    scratch: &mut Vec<Action<P>>,
    mut f: impl FnMut(&mut Io<'_, P>, Port, P, Time),
) {
    if !io.actions_mut()[from..]
        .iter()
        .any(|a| matches!(a, Action::Deliver { .. }))
    {
        return;
    }
    scratch.extend(io.actions_mut().drain(from..));
    for a in scratch.drain(..) {
        match a {
            Action::Deliver { port, pkt, due } => f(io, port, pkt, due),
            other => io.actions_mut().push(other),
        }
    }
}
