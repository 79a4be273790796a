//! A cell shared by several phones (UEs) as one [`Link`]: a base station and its UEs, each
//! UE with its own downlink and uplink ([`crate::cellular::Cellular`]: RLC buffer and its
//! queue discipline, transport blocks, HARQ, DRX, the uplink's request–grant loop), and a
//! MAC scheduler at the base station that shares each slot among them.
//!
//! ## Ports and queues
//!
//! Port 0 is the base station's side; port `u + 1` is UE `u`. A packet sent from port 0 to
//! a UE's port goes down, one sent from a UE's port to port 0 goes up. Each UE has a
//! downlink RLC buffer at the base station, reported as `down/<ue>`, and an uplink one in
//! the UE, `up/<ue>`, each with its queue discipline: the downlinks' queues first, in UE
//! order, then the uplinks'.
//!
//! ## Capacity and the scheduler
//!
//! A UE's capacity in a direction is what the cell would carry for it if it had every
//! slot (its channel: the rate its MCS gives over the whole carrier), from a rate, a trace
//! or a capacity process, as for a cellular link of one UE. In each slot the scheduler
//! ranks the UEs that may be served, gives the first as much of the slot's resources as it
//! needs (the share of the slot that carries what it has waiting, rounded up to a whole
//! byte), then the next the same out of what is left, and so on: a UE with little to send
//! leaves the rest of the slot to the others, as a scheduler that allocates resource blocks
//! by priority does (3GPP leaves the scheduler to the vendor, TS 38.300 §10.1). A UE given
//! share `s` of slot `n` gets `s` of the transport block its capacity gives in that slot.
//!
//! * **Round robin** (`rr`): the UEs in turn. The first in the ranking is the one after the
//!   first served in the previous slot the direction used.
//! * **Proportional fair** (`pf`): the UE with the largest ratio of what it could get in
//!   this slot to the average it has had, the average being an exponentially weighted one
//!   over the `window` (per slot, weight slot/window, as the PF scheduler of the ns-3 LTE
//!   module with its 99-TTI window; Jalali, Padovani, Pankaj, "Data throughput of CDMA-HDR",
//!   VTC 2000). UEs with equal, steady channels get equal shares of time; with channels
//!   that vary independently each tends to be served near its own peaks, so the cell
//!   carries more than in turn (multi-user diversity).
//!
//! **Downlink.** The base station knows its buffers: a UE may be ranked in a slot that
//! carries downlink when its buffer holds data and, with DRX, the slot starts in its Active
//! Time; it needs its whole backlog.
//!
//! **Uplink.** The base station knows a UE's buffer only from its buffer status reports.
//! It decides the grants of uplink slot `x` at `x − K2` (the DCI), as for one UE: first the
//! grants that answer scheduling requests (their size as configured, `sr_grant`; one that
//! finds no room left in its slot moves to the next uplink slot), then, ranked by the
//! scheduler, the UEs whose estimated backlog (the last report less what was granted since)
//! is above zero, each needing that estimate. A proportional-fair average counts the bytes
//! granted.
//!
//! **Configured grants** (TS 38.321 §5.8.2; TS 38.331 `ConfiguredGrantConfig`): a UE may
//! be given one of its own ([`ConfiguredGrant`]): `share` of the resources of an uplink slot
//! every `period`, from `offset` after the pattern's first uplink slot (0 on a link of one
//! UE). The base station reserves them in every occasion before it grants anything else,
//! whether the UE has data then or not, since it cannot know in advance (a UE with nothing
//! to send skips the occasion, §5.4.3.1.3); the proportional-fair average counts them as
//! given. A UE that holds one never sends an SR: data that finds its buffer empty waits for
//! the next occasion, whose block carries a BSR as any other. If the base station also
//! grants the UE in an occasion (its reports showed more than the grant carries), the
//! dynamic grant overrides the configured one (§5.4.1): it is sized to the UE's need but
//! never below the configured share, whose resources it takes over. The shares of the UEs
//! whose occasions fall in one uplink slot may add up to at most 1, and a grant that
//! answers an SR has at most what they leave of its slot. The configured grant's
//! size follows the UE's channel as a dynamic grant's does, where a type 1 grant's MCS is
//! fixed by RRC: the model has no link adaptation to differ from.
//!
//! `share` (a UE's probability of a slot, standing for other users) and a configured grant
//! for every UE (`ran.configured_grant`) belong to a cellular link of one UE; a cell
//! refuses them ([`CellConfig::validate`]).

use crate::cellular::{gcd, whole_slots, Cellular, RanCapacity, RanConfig, RanDirection, MAX_CONFIGURED_GRANT};
use crate::stage::Origin;
use crate::{Action, Departure, Io, Link, LinkPacket, LinkStats, Loss, LossKind, Observer, Port, QueueInfo, Timer};
use l4s_aqm::{AqmConfig, QueueId, QueueStats};
use l4s_core::{Dur, Rate, Rng, Time};

/// The cell's own wake-up: a slot may be used. The UEs' directions wake with their own
/// timers, renumbered.
pub const SLOT: Timer = 0;

/// What is left of a slot below this share is rounding: nobody else is served in it.
const SHARE_EPSILON: f64 = 1e-9;

/// How the base station shares a slot among its UEs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CellScheduler {
    RoundRobin,
    /// Proportional fair, averaging over `window`.
    ProportionalFair {
        window: Dur,
    },
}

/// One UE of a cell: its name (the queues are reported under it), its capacity each way
/// if it had the whole cell, and its configured grant, if any.
#[derive(Clone, Debug, PartialEq)]
pub struct CellUe {
    pub name: String,
    pub down: RanCapacity,
    pub up: RanCapacity,
    pub configured_grant: Option<ConfiguredGrant>,
}

/// A UE's configured uplink grant in a cell: `share` of the resources of an uplink slot
/// every `period`, `offset` after the first uplink slot of the pattern (TS 38.331
/// `ConfiguredGrantConfig`: `periodicity`, `timeDomainOffset`), both whole numbers of
/// slots; see the module documentation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConfiguredGrant {
    pub period: Dur,
    pub offset: Dur,
    pub share: f64,
}

impl ConfiguredGrant {
    /// Check it against the cell's radio configuration; the error names the key of the UE
    /// (`configured_grant`, `configured_grant_offset`, `configured_grant_share`) and what
    /// was expected.
    pub fn validate(&self, ran: &RanConfig) -> Result<(), (&'static str, String)> {
        let slot = ran.slot;
        if !whole_slots(self.period, slot) || self.period > MAX_CONFIGURED_GRANT {
            return Err((
                "configured_grant",
                format!(
                    "expected a period of a whole number of {slot} slots, at most {MAX_CONFIGURED_GRANT} (TS 38.331), found {}",
                    self.period
                ),
            ));
        }
        if !(self.offset.is_zero() || whole_slots(self.offset, slot)) || self.offset >= self.period {
            return Err((
                "configured_grant_offset",
                format!(
                    "expected a whole number of {slot} slots below the period ({}), found {}",
                    self.period, self.offset
                ),
            ));
        }
        if !(self.share > 0.0 && self.share <= 1.0) {
            return Err((
                "configured_grant_share",
                format!(
                    "expected a share of the slot's resources in (0, 1], found {}",
                    self.share
                ),
            ));
        }
        let (p, o) = self.slots(slot);
        let up = ran.weights(RanDirection::Uplink);
        let len = up.len() as u64;
        // The occasions repeat with the pattern after at most `len` of them.
        if !(0..len).any(|k| up[((ran.first_up() + o + k * p) % len) as usize] > 0.0) {
            return Err((
                "configured_grant_offset",
                format!(
                    "every occasion ({} after the first uplink slot, then every {}) falls on a slot \
                     without uplink in the TDD pattern; expected an offset or period that reaches one",
                    self.offset, self.period
                ),
            ));
        }
        Ok(())
    }

    /// Period and offset in slots of `slot`.
    fn slots(&self, slot: Dur) -> (u64, u64) {
        let slot = slot.as_nanos().max(1);
        (self.period.as_nanos() / slot, self.offset.as_nanos() / slot)
    }
}

/// Above this many slots before the configured grants' occasions repeat (with the TDD
/// pattern), the check that they fit in every slot adds up all their shares instead.
const CG_CHECK_SLOTS: u64 = 1_000_000;

/// The largest sum of the shares of configured grants whose occasions fall in one uplink
/// slot of `ran`, and that slot (counted from the first uplink slot).
fn cg_peak(ran: &RanConfig, cgs: &[ConfiguredGrant]) -> (f64, Option<u64>) {
    let up = ran.weights(RanDirection::Uplink);
    let len = up.len() as u64;
    let slots: Vec<(u64, u64, f64)> = cgs
        .iter()
        .map(|g| {
            let (p, o) = g.slots(ran.slot);
            (p.max(1), o, g.share)
        })
        .collect();
    let mut span = len;
    for &(p, _, _) in &slots {
        span = lcm(span, p);
        if span > CG_CHECK_SLOTS {
            return (slots.iter().map(|g| g.2).sum(), None);
        }
    }
    let first = ran.first_up();
    let mut peak = (0.0, None);
    for k in 0..span {
        if up[((first + k) % len) as usize] == 0.0 {
            continue;
        }
        let sum: f64 = slots
            .iter()
            .filter(|&&(p, o, _)| k >= o && (k - o).is_multiple_of(p))
            .map(|g| g.2)
            .sum();
        if sum > peak.0 {
            peak = (sum, Some(k));
        }
    }
    peak
}

fn lcm(a: u64, b: u64) -> u64 {
    (a / gcd(a, b).max(1)).saturating_mul(b)
}

/// A cell: the radio configuration all its UEs share, the scheduler, the UEs, the delay
/// each way and the queue disciplines of the downlink (at the base station) and uplink (in
/// the UEs) RLC buffers.
#[derive(Clone, Debug, PartialEq)]
pub struct CellConfig {
    pub ran: RanConfig,
    pub scheduler: CellScheduler,
    pub ues: Vec<CellUe>,
    pub delay: Dur,
    pub aqm: AqmConfig,
    pub ue_aqm: AqmConfig,
}

impl CellConfig {
    /// Check the parameters; the error names the key (of the cell, or of `ran`) and what
    /// was expected.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        self.ran.validate()?;
        if self.ues.is_empty() {
            return Err(("ues", "expected at least one UE".to_string()));
        }
        if self.ran.share < 1.0 {
            return Err((
                "share",
                "a cell shares its slots among its UEs: `share` belongs to a cellular link of one UE".to_string(),
            ));
        }
        if self.ran.uplink.configured_grant.is_some() {
            return Err((
                "configured_grant",
                "in a cell a configured grant belongs to one UE: set `configured_grant` (and \
                 `configured_grant_share`) on its [[topology.cell.ues]] entry"
                    .to_string(),
            ));
        }
        let mut cgs = Vec::new();
        for ue in &self.ues {
            if let Some(cg) = &ue.configured_grant {
                cg.validate(&self.ran)?;
                cgs.push(*cg);
            }
        }
        let (peak, at) = cg_peak(&self.ran, &cgs);
        if peak > 1.0 + SHARE_EPSILON {
            let slot = at.map_or("one slot".to_string(), |k| {
                format!("the uplink slot {} after the first", Dur(self.ran.slot.as_nanos() * k))
            });
            return Err((
                "ues",
                format!(
                    "the UEs' configured grants fall in {slot} with shares adding up to {peak}; \
                     expected at most 1 (give them other `configured_grant_offset`s or smaller \
                     `configured_grant_share`s)"
                ),
            ));
        }
        if let CellScheduler::ProportionalFair { window } = self.scheduler {
            if window < self.ran.slot {
                return Err((
                    "pf_window",
                    format!("expected at least one slot ({}), found {window}", self.ran.slot),
                ));
            }
        }
        Ok(())
    }
}

/// The timer a UE's direction `j` (`u` down, `n + u` up, of `n` UEs) asks for as its own
/// `t`.
fn sub_timer(j: usize, t: Timer) -> Timer {
    1 + 3 * j as Timer + t
}

/// Where direction `j` of a cell of `ues` UEs delivers: the UE's port for a downlink, the
/// base station's for an uplink.
fn port_of(ues: usize, j: usize) -> Port {
    if j < ues {
        j + 1
    } else {
        0
    }
}

/// An observer that reports a UE direction's queue as the cell's queue `queue`.
struct Renumber<'o, 'a, P> {
    inner: &'o mut (dyn Observer<P> + 'a),
    queue: usize,
}

impl<P> Observer<P> for Renumber<'_, '_, P> {
    fn departed(&mut self, now: Time, d: &Departure<'_, P>) {
        let d = Departure {
            pkt: d.pkt,
            queue: self.queue,
            sub: d.sub,
            sojourn: d.sojourn,
            start: d.start,
            serialisation: d.serialisation,
            marked: d.marked,
        };
        self.inner.departed(now, &d);
    }
    fn lost(&mut self, now: Time, mut l: Loss<P>) {
        if let LossKind::Queue { queue, .. } = &mut l.kind {
            *queue = self.queue;
        }
        self.inner.lost(now, l);
    }
}

/// Run `f` on UE direction `j` with an [`Io`] whose deliveries leave at `port`, whose
/// wake-ups are renumbered and whose queue is reported as the cell's queue `j`.
fn with_sub<P, R>(io: &mut Io<'_, P>, j: usize, port: Port, f: impl FnOnce(&mut Io<'_, P>) -> R) -> R {
    let from = io.actions.len();
    let r = {
        let mut obs = Renumber {
            inner: &mut *io.observer,
            queue: j,
        };
        let mut sub = Io {
            now: io.now,
            actions: &mut *io.actions,
            observer: &mut obs,
        };
        f(&mut sub)
    };
    for a in &mut io.actions[from..] {
        match a {
            Action::Deliver { port: p, .. } => *p = port,
            Action::Wake { timer, .. } => *timer = sub_timer(j, *timer),
        }
    }
    r
}

/// A scheduler's state for one direction: the proportional-fair averages (bytes a slot)
/// and the slot they are up to, and the round robin's next UE.
struct Fairness {
    avg: Vec<f64>,
    upto: u64,
    rr: usize,
    /// Bytes given to each UE in the slot being decided.
    given: Vec<f64>,
    order: Vec<usize>,
}

impl Fairness {
    fn new(n: usize) -> Fairness {
        Fairness {
            avg: vec![0.0; n],
            upto: 0,
            rr: 0,
            given: vec![0.0; n],
            order: Vec::with_capacity(n),
        }
    }

    /// Rank the candidates in `self.order` (whose entries are UE indices) for a slot in
    /// which UE `i` could get `full(i)` bytes.
    fn rank(&mut self, scheduler: CellScheduler, n: usize, full: impl Fn(usize) -> f64) {
        match scheduler {
            CellScheduler::RoundRobin => {
                let rr = self.rr;
                self.order.sort_by_key(|&i| (i + n - rr) % n);
            }
            CellScheduler::ProportionalFair { .. } => {
                let avg = &self.avg;
                let metric = |i: usize| full(i) / avg[i].max(f64::MIN_POSITIVE);
                // Largest metric first; ties to the lower index.
                self.order
                    .sort_by(|&a, &b| metric(b).total_cmp(&metric(a)).then(a.cmp(&b)));
            }
        }
    }

    /// Slot `x` was decided with `self.given`: age the averages over the slots since the
    /// last one decided and count this one; the round robin moves past the first served.
    fn close(&mut self, scheduler: CellScheduler, slot: Dur, x: u64, first: Option<usize>) {
        if let CellScheduler::ProportionalFair { window } = scheduler {
            let a = (slot.as_nanos() as f64 / window.as_nanos() as f64).min(1.0);
            let skipped = x.saturating_sub(self.upto);
            let decay = (1.0 - a).powi(skipped.min(i32::MAX as u64) as i32);
            for (avg, g) in self.avg.iter_mut().zip(&self.given) {
                *avg = *avg * decay * (1.0 - a) + a * g;
            }
        }
        self.upto = x + 1;
        if let Some(f) = first {
            self.rr = (f + 1) % self.avg.len();
        }
        self.given.iter_mut().for_each(|g| *g = 0.0);
    }
}

/// A cell of several UEs; see the module documentation.
pub struct Cell<P> {
    scheduler: CellScheduler,
    slot: Dur,
    k2: Dur,
    /// UE `u`'s downlink is `dirs[u]`, its uplink `dirs[n + u]` (of `n` UEs), as the
    /// queues are numbered.
    dirs: Vec<Cellular<P>>,
    infos: Vec<QueueInfo>,
    origin: Origin,
    /// The next slot to serve.
    next: u64,
    /// Uplink grants have been decided for every slot below this one.
    decided: u64,
    down: Fairness,
    up: Fairness,
    /// The directions whose queues moved since they last reported drops and asked for
    /// their timers.
    touched: Vec<bool>,
    armed: Option<Time>,
}

impl<P: LinkPacket + 'static> Cell<P> {
    /// The cell of `cfg` (checked with [`CellConfig::validate`]).
    pub fn new(cfg: &CellConfig, rng: Rng) -> Result<Cell<P>, (&'static str, String)> {
        cfg.validate()?;
        let seed = rng.clone().next_u64();
        let n = cfg.ues.len();
        let mut dirs = Vec::with_capacity(2 * n);
        let mut infos = Vec::with_capacity(2 * n);
        for (k, dir, aqm, label) in [
            (0, RanDirection::Downlink, &cfg.aqm, "down"),
            (1, RanDirection::Uplink, &cfg.ue_aqm, "up"),
        ] {
            for (u, ue) in cfg.ues.iter().enumerate() {
                let j = k * n + u;
                let cap = if k == 0 { &ue.down } else { &ue.up };
                let mut c = Cellular::new(
                    dir,
                    cfg.ran.clone(),
                    cap.clone(),
                    cfg.delay,
                    aqm,
                    None,
                    Rng::derive(seed, 0xce11_0000 + j as u64),
                );
                c.set_in_cell();
                if let (1, Some(cg)) = (k, ue.configured_grant) {
                    let (period, offset) = cg.slots(cfg.ran.slot);
                    c.set_configured_grant(period, offset, cg.share);
                }
                let (q, info) = c.queue();
                infos.push(QueueInfo {
                    label: format!("{label}/{}", ue.name),
                    aqm: info.aqm,
                    subqueues: q.queue_ids(),
                });
                dirs.push(c);
            }
        }
        Ok(Cell {
            scheduler: cfg.scheduler,
            slot: cfg.ran.slot,
            k2: Dur(cfg.ran.slot.as_nanos() * u64::from(cfg.ran.uplink.k2)),
            dirs,
            infos,
            origin: Origin::default(),
            next: 0,
            decided: 0,
            down: Fairness::new(n),
            up: Fairness::new(n),
            touched: vec![false; 2 * n],
            armed: None,
        })
    }

    fn ues(&self) -> usize {
        self.dirs.len() / 2
    }

    /// UE direction `j`'s port of delivery: the UE's for the downlink, the base station's
    /// for the uplink.
    fn port_of(&self, j: usize) -> Port {
        port_of(self.ues(), j)
    }

    fn start_of(&self, n: u64) -> Time {
        self.dirs[0].start_of(n)
    }

    /// The uplink grant decisions of every uplink slot whose DCI is at or before `t`, in
    /// order; see the module documentation.
    fn decide_until(&mut self, t: Time) {
        let n = self.ues();
        loop {
            let x = self.dirs[n].usable_from(self.decided);
            let dci = Time(self.start_of(x).as_nanos().saturating_sub(self.k2.as_nanos()));
            if dci > t {
                return;
            }
            let mut any = false;
            for u in 0..n {
                let d = &mut self.dirs[n + u];
                d.absorb_reports(dci);
                let (estimate, reports) = d.grant_need();
                any |= estimate > 0 || reports || d.sr_grant_slot().is_some() || d.cg_share_at(x) > 0.0;
            }
            if !any {
                // Nothing to grant until a report or an SR comes: skip to the slots decided
                // at `t`, or to the next configured-grant occasion (its reservation counts
                // in the proportional-fair average).
                let mut k = self.dirs[n].slot_after(t + self.k2).max(x + 1);
                for u in 0..n {
                    if let Some(c) = self.dirs[n + u].next_cg_from(x) {
                        k = k.min(c);
                    }
                }
                self.decided = k;
                continue;
            }
            self.decided = x + 1;
            let mut left = 1.0;
            // Configured grants first: their resources are reserved.
            for u in 0..n {
                let d = &self.dirs[n + u];
                let cg = d.cg_share_at(x);
                if cg > 0.0 {
                    left -= cg;
                    self.up.given[u] += cg * d.block(x).0;
                }
            }
            // What the reservations leave is the most a grant that answers an SR can have.
            let open = left;
            for u in 0..n {
                let d = &mut self.dirs[n + u];
                if d.sr_grant_slot() != Some(x) {
                    continue;
                }
                let full = d.block(x).0;
                let mut bytes = d.sr_block(x).0;
                let mut share = if full > 0.0 { bytes / full } else { f64::INFINITY };
                if share > open && open > SHARE_EPSILON {
                    (share, bytes) = (open, open * full);
                }
                if share > left {
                    let later = d.usable_from(x + 1);
                    d.move_sr_grant(later);
                    continue;
                }
                d.grant(x, bytes as u64, share, true);
                self.up.given[u] += bytes;
                left -= share;
            }
            self.up.order.clear();
            self.up
                .order
                .extend((0..n).filter(|&u| self.dirs[n + u].grant_need().0 > 0));
            let dirs = &self.dirs;
            self.up.rank(self.scheduler, n, |u| dirs[n + u].block(x).0);
            let mut first = None;
            for k in 0..self.up.order.len() {
                if left <= SHARE_EPSILON {
                    break;
                }
                let u = self.up.order[k];
                let d = &mut self.dirs[n + u];
                let full = d.block(x).0;
                if full <= 0.0 {
                    continue;
                }
                let need = d.grant_need().0 as f64;
                // A grant in the UE's configured-grant occasion overrides that one and
                // takes over its reserved resources.
                let cg = d.cg_share_at(x);
                let share = ((need + 0.5) / full).min(left + cg).max(cg);
                let bytes = (share * full) as u64;
                if bytes == 0 {
                    continue;
                }
                d.grant(x, bytes, share, false);
                self.up.given[u] += bytes as f64 - cg * full;
                left -= share - cg;
                first.get_or_insert(u);
            }
            self.up.close(self.scheduler, self.slot, x, first);
        }
    }

    /// Downlink slot `n`: share it among the UEs with data that may be served in it.
    fn down_slot(&mut self, n: u64, io: &mut Io<'_, P>) {
        let u_count = self.ues();
        self.down.order.clear();
        self.down.order.extend((0..u_count).filter(|&u| {
            let d = &self.dirs[u];
            d.has_data() && d.schedulable_from(n) == n
        }));
        if self.down.order.is_empty() {
            return;
        }
        let dirs = &self.dirs;
        self.down.rank(self.scheduler, u_count, |u| dirs[u].block(n).0);
        let mut left = 1.0;
        let mut first = None;
        for k in 0..self.down.order.len() {
            if left <= SHARE_EPSILON {
                break;
            }
            let u = self.down.order[k];
            let full = self.dirs[u].block(n).0;
            if full <= 0.0 {
                continue;
            }
            let need = self.dirs[u].backlog_bytes() as f64;
            let share = ((need + 0.5) / full).min(left);
            let d = &mut self.dirs[u];
            with_sub(io, u, u + 1, |io| d.serve_down(n, share, io));
            self.touched[u] = true;
            self.down.given[u] += share * full;
            left -= share;
            first.get_or_insert(u);
        }
        self.down.close(self.scheduler, self.slot, n, first);
    }

    /// Serve every slot up to now in order, then ask for the next one that may carry
    /// something.
    fn rationalize(&mut self, io: &mut Io<'_, P>) {
        let now = io.now;
        // The first slot some direction may use, once the slots up to now are served.
        let wake = loop {
            let Some(n) = self.dirs.iter().filter_map(|d| d.next_slot()).min() else {
                break None;
            };
            let n = n.max(self.next);
            if self.start_of(n) > now {
                break Some(n);
            }
            self.next = n + 1;
            if self.dirs[0].usable_from(n) == n {
                self.down_slot(n, io);
            }
            let ues = self.ues();
            if self.dirs[ues].usable_from(n) == n {
                self.decide_until(self.start_of(n));
                for u in 0..ues {
                    let j = ues + u;
                    let d = &mut self.dirs[j];
                    if d.has_data() {
                        with_sub(io, j, 0, |io| d.uplink_slot(n, io));
                        self.touched[j] = true;
                    }
                    // An SR answered in a slot already decided (a grant delay shorter than
                    // K2 allows) is granted in the first one still open.
                    if let Some(x) = d.sr_grant_slot().filter(|&x| x < self.decided) {
                        let later = d.usable_from(self.decided.max(x));
                        d.move_sr_grant(later);
                    }
                }
            }
            for d in &mut self.dirs {
                d.pass(n + 1);
            }
        };
        // The slots up to now that nothing needed pass unused: their blocks were built
        // before anything that arrives now, as on a link of one UE.
        self.next = self.next.max(self.dirs[0].slot_after(now));
        for d in &mut self.dirs {
            d.pass(self.next);
        }
        // The queues that moved report their drops and ask for their timers.
        let next = self.next;
        let ues = self.ues();
        for (j, d) in self.dirs.iter_mut().enumerate() {
            if std::mem::take(&mut self.touched[j]) {
                with_sub(io, j, port_of(ues, j), |io| d.settle(next, io));
            }
        }
        if let Some(n) = wake {
            let t = self.start_of(n);
            if self.armed != Some(t) {
                self.armed = Some(t);
                io.wake(SLOT, t);
            }
        }
    }

    /// The direction a packet from `from` to `to` takes, if the ports name one.
    fn dir_of(&self, from: Port, to: Port) -> Option<usize> {
        match (from, to) {
            (0, t) if t >= 1 && t <= self.ues() => Some(t - 1),
            (f, 0) if f >= 1 && f <= self.ues() => Some(self.ues() + f - 1),
            _ => None,
        }
    }
}

impl<P: LinkPacket + 'static> Link<P> for Cell<P> {
    fn ports(&self) -> usize {
        self.ues() + 1
    }

    fn start(&mut self, origin: Time, io: &mut Io<'_, P>) {
        self.origin.start(origin);
        for d in &mut self.dirs {
            d.reset(origin, io.now);
        }
        self.next = if io.now < origin {
            0
        } else {
            self.dirs[0].slot_after(io.now)
        };
        self.decided = self.next;
        self.down.upto = self.next;
        self.up.upto = self.next;
        self.armed = None;
        // Every queue discipline's timer counts from the start, as on a link of one UE.
        self.touched.iter_mut().for_each(|t| *t = true);
        self.rationalize(io);
    }

    fn send(&mut self, from: Port, to: Port, pkt: P, io: &mut Io<'_, P>) {
        let Some(j) = self.dir_of(from, to) else {
            io.lost(Loss {
                pkt,
                kind: LossKind::Wire,
                sojourn: Dur::ZERO,
            });
            return;
        };
        if self.origin.provisional(io.now) {
            for d in &mut self.dirs {
                d.provisional_origin(io.now);
            }
        }
        // The blocks of the slots up to now were built before this packet arrived.
        self.rationalize(io);
        if j >= self.ues() {
            // The base station's decisions up to now, before the UE looks for a grant.
            self.decide_until(io.now);
        }
        let port = self.port_of(j);
        let d = &mut self.dirs[j];
        with_sub(io, j, port, |io| d.accept(pkt, io));
        self.touched[j] = true;
        self.rationalize(io);
    }

    fn handle_timeout(&mut self, timer: Timer, at: Time, io: &mut Io<'_, P>) {
        if timer == SLOT {
            if self.armed == Some(at) {
                self.armed = None;
            }
            self.rationalize(io);
            return;
        }
        let j = usize::from((timer - 1) / 3);
        let port = self.port_of(j);
        let Some(d) = self.dirs.get_mut(j) else { return };
        match (timer - 1) % 3 {
            crate::cellular::ARRIVE => with_sub(io, j, port, |io| d.arrive(io)),
            crate::cellular::QDISC => with_sub(io, j, port, |io| d.qdisc_timer(at, io)),
            _ => {}
        }
    }

    fn queues(&self) -> &[QueueInfo] {
        &self.infos
    }

    fn queue_stats(&self, q: usize) -> Vec<(QueueId, QueueStats)> {
        self.dirs.get(q).map(|d| d.queue().0.stats()).unwrap_or_default()
    }

    fn backlog(&self, q: usize) -> (u64, u64) {
        self.dirs.get(q).map_or((0, 0), |d| {
            let q = d.queue().0;
            (q.len_packets() as u64, q.len_bytes())
        })
    }

    fn probability(&self, q: usize) -> Option<f64> {
        self.dirs.get(q).and_then(|d| d.queue().0.probability())
    }

    fn queue_protection(&self, q: usize) -> Option<l4s_aqm::QpStats> {
        self.dirs.get(q).and_then(|d| d.queue().0.queue_protection().cloned())
    }

    fn rate(&self, from: Port, to: Port) -> Option<Rate> {
        let j = self.dir_of(from, to)?;
        self.dirs[j].rate(0, 1)
    }

    fn rate_at(&self, from: Port, to: Port, t: Time) -> Option<Rate> {
        let j = self.dir_of(from, to)?;
        self.dirs[j].rate_at(0, 1, t)
    }

    fn queue_rate(&self, q: usize) -> Option<Rate> {
        self.dirs.get(q)?.rate(0, 1)
    }

    fn queue_rate_at(&self, q: usize, t: Time) -> Option<Rate> {
        self.dirs.get(q)?.rate_at(0, 1, t)
    }

    fn stats(&self) -> LinkStats {
        let mut s = LinkStats::default();
        for d in &self.dirs {
            s += d.stats();
        }
        s
    }

    fn queue_link_stats(&self, q: usize) -> Option<(LinkStats, RanDirection)> {
        let d = self.dirs.get(q)?;
        let dir = if q < self.ues() {
            RanDirection::Downlink
        } else {
            RanDirection::Uplink
        };
        Some((d.stats(), dir))
    }

    fn queue_ports(&self, q: usize) -> Option<(Port, Port)> {
        let n = self.ues();
        match q {
            q if q < n => Some((0, q + 1)),
            q if q < 2 * n => Some((q - n + 1, 0)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{deep_fifo, drive, pkt, Pkt, Seen};
    use crate::{RateSchedule, SlotKind};
    use std::sync::Arc;

    fn rate(mbps: u64) -> RanCapacity {
        RanCapacity::Rate {
            rate: Rate::mbps(mbps),
            schedule: RateSchedule::default(),
        }
    }

    fn cell(scheduler: CellScheduler, ues: Vec<(RanCapacity, RanCapacity)>) -> Cell<Pkt> {
        let cfg = CellConfig {
            ran: RanConfig {
                slot: Dur::from_millis(1),
                ..RanConfig::default()
            },
            scheduler,
            ues: ues
                .into_iter()
                .enumerate()
                .map(|(i, (down, up))| CellUe {
                    name: format!("ue{i}"),
                    down,
                    up,
                    configured_grant: None,
                })
                .collect(),
            delay: Dur::ZERO,
            aqm: deep_fifo(),
            ue_aqm: deep_fifo(),
        };
        Cell::new(&cfg, Rng::new(3)).expect("cell")
    }

    const PF: CellScheduler = CellScheduler::ProportionalFair {
        window: Dur::from_millis(100),
    };

    /// Mbit/s delivered at each port in `(from, to]` seconds, with `n` packets offered at
    /// time 0 on each of `paths` (from port, to port).
    fn saturated(c: &mut Cell<Pkt>, paths: &[(Port, Port)], n: u64, from: u64, to: u64) -> Vec<f64> {
        let mut offers = Vec::new();
        for (k, &(a, b)) in paths.iter().enumerate() {
            offers.extend((0..n).map(|i| (Time::ZERO, a, b, pkt(k as u64 * n + i))));
        }
        let out = drive(c, offers, Time::from_secs(to), &mut Seen::default());
        let mut mbps = vec![0.0; c.ports()];
        for (t, port, _) in out {
            if t > Time::from_secs(from) {
                mbps[port] += 1500.0 * 8.0 / 1e6 / (to - from) as f64;
            }
        }
        mbps
    }

    #[test]
    fn steady_channels_share_the_downlink_by_time_under_either_scheduler() {
        for s in [CellScheduler::RoundRobin, PF] {
            let mut c = cell(s, vec![(rate(10), rate(10)), (rate(40), rate(10))]);
            let got = saturated(&mut c, &[(0, 1), (0, 2)], 30_000, 1, 5);
            eprintln!("{s:?}: {:.3} and {:.3} Mbit/s", got[1], got[2]);
            // Half the slots each: 5 and 20 Mbit/s.
            assert!((got[1] - 5.0).abs() < 0.05, "{s:?}: {got:?}");
            assert!((got[2] - 20.0).abs() < 0.2, "{s:?}: {got:?}");
        }
    }

    #[test]
    fn a_light_ue_gets_what_it_needs_and_leaves_the_rest_of_the_slot() {
        // UE 0 sends 1 Mbit/s (a 1500-byte packet every 12 ms); UE 1 is saturated; both
        // channels 20 Mbit/s.
        let mut c = cell(
            CellScheduler::RoundRobin,
            vec![(rate(20), rate(20)), (rate(20), rate(20))],
        );
        let mut offers: Vec<_> = (0..30_000).map(|i| (Time::ZERO, 0, 2, pkt(1_000_000 + i))).collect();
        offers.extend((0..500).map(|i| (Time::from_millis(12 * i), 0, 1, pkt(i))));
        let mut seen = Seen::default();
        let out = drive(&mut c, offers, Time::from_secs(6), &mut seen);
        let mbps = |port: Port| {
            out.iter()
                .filter(|o| o.1 == port && o.0 > Time::from_secs(1) && o.0 <= Time::from_secs(5))
                .count() as f64
                * 0.012
                / 4.0
        };
        eprintln!("light {:.3}, saturated {:.3} Mbit/s", mbps(1), mbps(2));
        assert!((mbps(1) - 1.0).abs() < 0.02, "light UE: {}", mbps(1));
        assert!((mbps(2) - 19.0).abs() < 0.1, "saturated UE: {}", mbps(2));
        // The light UE's packets wait at most two slots: the one they arrive in (built
        // before them) and the one that carries them.
        let waits: Vec<Dur> = seen.departed.iter().filter(|d| d.1 < 1_000_000).map(|d| d.2).collect();
        assert_eq!(waits.len(), 500);
        assert!(
            waits.iter().all(|w| *w <= Dur::from_millis(1)),
            "{:?}",
            waits.iter().max()
        );
    }

    /// Capacities that are 10 or 30 Mbit/s in each 10 ms, independently per UE, as a
    /// per-millisecond list.
    fn two_level(seed: u64, secs: usize) -> Vec<f64> {
        let mut rng = Rng::new(seed);
        let mut v = Vec::with_capacity(secs * 1000);
        for _ in 0..secs * 100 {
            let r = if rng.chance(0.5) { 30e6 } else { 10e6 };
            v.extend(std::iter::repeat_n(r, 10));
        }
        v
    }

    #[test]
    fn proportional_fair_serves_each_ue_near_its_peaks() {
        let secs = 21;
        let (a, b) = (two_level(11, secs), two_level(12, secs));
        // Over the measured (1, 21] s: the cell if each slot went to the better channel,
        // and in turn.
        let ms = 1_000..secs * 1000;
        let best: f64 = ms.clone().map(|k| a[k].max(b[k])).sum::<f64>() / ms.len() as f64 / 1e6;
        let turn: f64 = ms.clone().map(|k| (a[k] + b[k]) / 2.0).sum::<f64>() / ms.len() as f64 / 1e6;
        assert!((best - 25.0).abs() < 0.5 && (turn - 20.0).abs() < 0.5, "{best} {turn}");
        let ues = || {
            vec![
                (RanCapacity::PerMs(Arc::new(a.clone())), rate(10)),
                (RanCapacity::PerMs(Arc::new(b.clone())), rate(10)),
            ]
        };
        let mut pf = cell(PF, ues());
        let got = saturated(&mut pf, &[(0, 1), (0, 2)], 60_000, 1, secs as u64);
        let total = got[1] + got[2];
        eprintln!("PF: {total:.3} Mbit/s ({got:?}), the better channel each slot {best:.3}");
        assert!((total / best - 1.0).abs() < 0.01, "PF {total} against {best}: {got:?}");
        assert!((got[1] / got[2] - 1.0).abs() < 0.05, "PF shares {got:?}");
        let mut rr = cell(CellScheduler::RoundRobin, ues());
        let got = saturated(&mut rr, &[(0, 1), (0, 2)], 60_000, 1, secs as u64);
        let total = got[1] + got[2];
        eprintln!("RR: {total:.3} Mbit/s ({got:?}), in turn {turn:.3}");
        assert!((total / turn - 1.0).abs() < 0.01, "RR {total} against {turn}: {got:?}");
    }

    #[test]
    fn backlogged_uplinks_share_the_granted_slots() {
        for s in [CellScheduler::RoundRobin, PF] {
            let mut c = cell(s, vec![(rate(10), rate(8)), (rate(10), rate(8)), (rate(10), rate(8))]);
            let got = saturated(&mut c, &[(1, 0), (2, 0), (3, 0)], 10_000, 1, 5);
            // All of it arrives at the base station's port; each UE's share is counted
            // below from the stats.
            assert!((got[0] - 8.0).abs() < 0.1, "{s:?}: {got:?}");
            for u in 0..3 {
                let (st, dir) = c.queue_link_stats(3 + u).expect("uplink");
                assert_eq!(dir, RanDirection::Uplink);
                assert_eq!(st.scheduling_requests, 1, "{s:?} UE {u}: one SR, then reports");
                let mb = st.block_bytes_used as f64 * 8.0 / 1e6 / 5.0;
                eprintln!("{s:?} UE {u}: {mb:.3} Mbit/s, {} grants", st.grants);
                assert!((mb - 8.0 / 3.0).abs() < 0.15, "{s:?} UE {u}: {mb} Mbit/s");
            }
        }
    }

    /// A light uplink (UE 0: a 1500-byte packet every 20 ms, then a burst of ten at 5 s)
    /// beside a saturated one (UE 1), both channels 20 Mbit/s (2500 bytes a 1 ms slot),
    /// round robin, FDD, the default SR loop (every 5 ms, grant 1 ms later, K2 2). Returns
    /// the light UE's delays (arrival to delivery) before the burst, when the burst's last
    /// packet arrived, the saturated UE's Mbit/s over (1, 5] s, and each uplink's stats.
    fn light_beside_saturated(cg: Option<ConfiguredGrant>) -> (Vec<Dur>, Time, f64, LinkStats, LinkStats) {
        let mut c = cell(
            CellScheduler::RoundRobin,
            vec![(rate(20), rate(20)), (rate(20), rate(20))],
        );
        if let Some(cg) = cg {
            // As `Cell::new` sets it.
            let (period, offset) = cg.slots(Dur::from_millis(1));
            c.dirs[2].set_configured_grant(period, offset, cg.share);
        }
        let mut offers: Vec<_> = (0..30_000).map(|i| (Time::ZERO, 2, 0, pkt(1_000_000 + i))).collect();
        // Arrivals spread over the slot grid: 20 ms apart plus 0.25, 1.25, ... 4.25 ms.
        let at = |i: u64| Time::from_micros(20_000 * i + 1_000 * (i % 5) + 250);
        offers.extend((0..245).map(|i| (at(i), 1, 0, pkt(i))));
        offers.extend((0..10).map(|k| (Time::from_secs(5), 1, 0, pkt(10_000 + k))));
        let out = drive(&mut c, offers, Time::from_secs(6), &mut Seen::default());
        let delays: Vec<Dur> = out
            .iter()
            .filter(|o| o.1 == 0 && o.2.id < 10_000)
            .map(|o| o.0.since(at(o.2.id)))
            .collect();
        assert_eq!(delays.len(), 245, "every light packet arrives");
        let burst: Vec<Time> = out
            .iter()
            .filter(|o| (10_000..10_010).contains(&o.2.id))
            .map(|o| o.0)
            .collect();
        assert_eq!(burst.len(), 10, "the burst arrives");
        let saturated = out
            .iter()
            .filter(|o| o.2.id >= 1_000_000 && o.0 > Time::from_secs(1) && o.0 <= Time::from_secs(5))
            .count() as f64
            * 0.012
            / 4.0;
        let stats = |c: &Cell<Pkt>, q| c.queue_link_stats(q).expect("uplink").0;
        (
            delays,
            burst.into_iter().max().unwrap_or(Time::ZERO),
            saturated,
            stats(&c, 2),
            stats(&c, 3),
        )
    }

    #[test]
    fn a_configured_grant_is_reserved_in_its_slots_and_spares_the_light_ue_its_srs() {
        let mean = |d: &[Dur]| d.iter().map(|d| d.as_secs_f64() * 1e3).sum::<f64>() / d.len() as f64;
        let max = |d: &[Dur]| d.iter().max().copied().unwrap_or(Dur::ZERO);
        // Without a configured grant every packet of the light UE finds its buffer empty
        // and asks: an SR at the next occasion (every 5 ms), the grant 1 ms later, the slot
        // K2 = 2 after it, delivered at that slot's end.
        let (d0, burst0, sat0, light0, _) = light_beside_saturated(None);
        eprintln!(
            "no CG: light UE {:.2} ms mean, {} max, {} SRs; burst done {:.1} ms after it came; saturated {sat0:.3} Mbit/s",
            mean(&d0),
            max(&d0),
            light0.scheduling_requests,
            (burst0.as_secs_f64() - 5.0) * 1e3
        );
        assert!(light0.scheduling_requests >= 245, "{}", light0.scheduling_requests);
        assert!(max(&d0) >= Dur::from_millis(8), "{}", max(&d0));
        // The grant that answers an SR is a full block (2500 bytes) for the 1500 the UE
        // has: 1 Mbit/s of the slots go to the light UE, the other has 19.
        assert!((sat0 - 19.0).abs() < 0.05, "{sat0}");

        // A configured grant of 0.8 of a slot (2000 bytes) every 5 slots.
        let cg = ConfiguredGrant {
            period: Dur::from_millis(5),
            offset: Dur::ZERO,
            share: 0.8,
        };
        let (d1, burst1, sat1, light1, sat_stats) = light_beside_saturated(Some(cg));
        eprintln!(
            "CG: light UE {:.2} ms mean, {} max, {} SRs, {} occasions used, {} dynamic grants; burst done {:.1} ms after it came; saturated {sat1:.3} Mbit/s",
            mean(&d1),
            max(&d1),
            light1.scheduling_requests,
            light1.configured_grants_used,
            light1.grants,
            (burst1.as_secs_f64() - 5.0) * 1e3
        );
        // No SR, ever: each packet waits for the next occasion (uniform over the 5 slots
        // with these arrivals: 0.75 to 4.75 ms) and is delivered at its end.
        assert_eq!(light1.scheduling_requests, 0);
        // One occasion for each light packet, and the burst's first block.
        assert!(light1.configured_grants_used > 245, "{}", light1.configured_grants_used);
        let expect = (0..5).map(|k| 5.0 - k as f64 - 0.25 + 1.0).sum::<f64>() / 5.0;
        assert!((mean(&d1) - expect).abs() < 0.01, "{} against {expect}", mean(&d1));
        assert!(max(&d1) <= Dur::from_millis(6), "{}", max(&d1));
        // The reservation is taken whether used or not: the saturated UE keeps
        // 1 - 0.8/5 of the slots' resources, 16.8 Mbit/s.
        assert!((sat1 - 16.8).abs() < 0.05, "{sat1}");
        assert_eq!(sat_stats.configured_grants_used, 0);
        // The burst (15 000 bytes) would need eight occasions, until 36 ms after it came,
        // on the configured grant alone; its first block's BSR brings dynamic grants, which
        // override the configured one in its occasions, so it is through well before.
        assert!(light1.grants > 0);
        assert!(burst1 < Time::from_secs(5) + Dur::from_millis(25), "{burst1}");
    }

    #[test]
    fn configured_grants_are_checked_against_the_slot_the_pattern_and_each_other() {
        let ran = RanConfig {
            slot: Dur::from_millis(1),
            ..RanConfig::default()
        };
        let ok = ConfiguredGrant {
            period: Dur::from_millis(2),
            offset: Dur::ZERO,
            share: 0.5,
        };
        assert_eq!(ok.validate(&ran), Ok(()));
        for (bad, key) in [
            (
                ConfiguredGrant {
                    period: Dur::from_micros(1500),
                    ..ok
                },
                "configured_grant",
            ),
            (
                ConfiguredGrant {
                    period: Dur::ZERO,
                    ..ok
                },
                "configured_grant",
            ),
            (
                ConfiguredGrant {
                    offset: Dur::from_micros(500),
                    ..ok
                },
                "configured_grant_offset",
            ),
            (
                ConfiguredGrant {
                    offset: Dur::from_millis(2),
                    ..ok
                },
                "configured_grant_offset",
            ),
            (ConfiguredGrant { share: 0.0, ..ok }, "configured_grant_share"),
            (ConfiguredGrant { share: 1.5, ..ok }, "configured_grant_share"),
            (ConfiguredGrant { share: f64::NAN, ..ok }, "configured_grant_share"),
        ] {
            assert_eq!(bad.validate(&ran).map_err(|e| e.0), Err(key), "{bad:?}");
        }
        // DDDSU: a period of the pattern's five slots from offset 1 never meets the U slot.
        let tdd = RanConfig {
            tdd: vec![
                SlotKind::Down,
                SlotKind::Down,
                SlotKind::Down,
                SlotKind::Special,
                SlotKind::Up,
            ],
            ..ran.clone()
        };
        let every5 = |offset| ConfiguredGrant {
            period: Dur::from_millis(5),
            offset: Dur::from_millis(offset),
            ..ok
        };
        assert_eq!(every5(0).validate(&tdd), Ok(()));
        let (key, msg) = every5(1).validate(&tdd).unwrap_err();
        assert_eq!(key, "configured_grant_offset");
        assert!(msg.contains("without uplink"), "{msg}");
        // ... while a period of 2 slots reaches it from either offset.
        assert_eq!(
            ConfiguredGrant {
                offset: Dur::from_millis(1),
                ..ok
            }
            .validate(&tdd),
            Ok(())
        );

        let cfg = |ran: &RanConfig, grants: &[(u64, u64, f64)]| CellConfig {
            ran: ran.clone(),
            scheduler: CellScheduler::RoundRobin,
            ues: grants
                .iter()
                .enumerate()
                .map(|(i, &(period, offset, share))| CellUe {
                    name: format!("ue{i}"),
                    down: rate(10),
                    up: rate(10),
                    configured_grant: Some(ConfiguredGrant {
                        period: Dur::from_millis(period),
                        offset: Dur::from_millis(offset),
                        share,
                    }),
                })
                .collect(),
            delay: Dur::ZERO,
            aqm: deep_fifo(),
            ue_aqm: deep_fifo(),
        };
        assert_eq!(cfg(&ran, &[(2, 0, 0.5), (2, 0, 0.5)]).validate(), Ok(()));
        let (key, msg) = cfg(&ran, &[(2, 0, 0.5), (2, 0, 0.6)]).validate().unwrap_err();
        assert_eq!(key, "ues");
        assert!(msg.contains("adding up to 1.1") && msg.contains("at most 1"), "{msg}");
        // Whole slots each, staggered: never in one slot.
        assert_eq!(cfg(&ran, &[(2, 0, 1.0), (2, 1, 1.0)]).validate(), Ok(()));
        assert_eq!(
            cfg(&ran, &[(4, 0, 1.0), (4, 1, 1.0), (2, 1, 0.0001)])
                .validate()
                .map_err(|e| e.0),
            Err("ues")
        );
        // Periods 2 and 3 from offsets 0 and 1 meet at slot 4, and every 6 slots from it.
        let (_, msg) = cfg(&ran, &[(2, 0, 0.7), (3, 1, 0.7)]).validate().unwrap_err();
        assert!(msg.contains("slot 4ms after the first"), "{msg}");
        // In DDDSU, counted from its U slot: every 5 slots and every 10 from 5 meet there
        // 5 slots after the first; every 10 from 0 and from 5 never meet.
        assert_eq!(
            cfg(&tdd, &[(5, 0, 1.0), (10, 5, 1.0)]).validate().map_err(|e| e.0),
            Err("ues")
        );
        assert_eq!(cfg(&tdd, &[(10, 0, 1.0), (10, 5, 1.0)]).validate(), Ok(()));
        // One configured grant for every UE of the cell is refused, and says where it goes.
        let mut all = cfg(&ran, &[(2, 0, 0.5)]);
        all.ran.uplink.configured_grant = Some(Dur::from_millis(2));
        let (key, msg) = all.validate().unwrap_err();
        assert_eq!(key, "configured_grant");
        assert!(msg.contains("[[topology.cell.ues]]"), "{msg}");
    }

    /// Two phones, each with a configured grant of a whole slot every other slot, one from
    /// the first slot and one from the second, each sending a packet now and then: no SR,
    /// and each packet leaves at the end of one of its own phone's slots.
    #[test]
    fn staggered_configured_grants_take_turns() {
        let mut c = cell(
            CellScheduler::ProportionalFair {
                window: Dur::from_millis(100),
            },
            vec![(rate(20), rate(20)), (rate(20), rate(20))],
        );
        for (u, offset) in [(0, 0), (1, 1)] {
            c.dirs[2 + u].set_configured_grant(2, offset, 1.0);
        }
        let at = |i: u64| Time::from_micros(7_300 * i);
        let mut offers: Vec<_> = (0..500).map(|i| (at(i), 1, 0, pkt(i))).collect();
        offers.extend((0..500).map(|i| (at(i) + Dur::from_micros(2_100), 2, 0, pkt(10_000 + i))));
        offers.sort_by_key(|o| o.0);
        let out = drive(&mut c, offers, Time::from_secs(5), &mut Seen::default());
        assert_eq!(out.len(), 1000);
        for o in &out {
            let (u, sent) = if o.2.id < 10_000 {
                (0, at(o.2.id))
            } else {
                (1, at(o.2.id - 10_000) + Dur::from_micros(2_100))
            };
            // Delivered at the end of slot k (at k + 1 ms): k is the UE's parity, and the
            // first such slot that starts after the packet came.
            let end = o.0.as_nanos() / 1_000_000;
            assert_eq!(o.0.as_nanos() % 1_000_000, 0);
            let k = end - 1;
            assert_eq!(k % 2, u as u64, "{o:?}");
            let wait = Time::from_millis(k).since(sent);
            assert!(
                Time::from_millis(k) > sent && wait <= Dur::from_millis(2),
                "{o:?} sent {sent}"
            );
        }
        for q in [2, 3] {
            let st = c.queue_link_stats(q).expect("uplink").0;
            assert_eq!(st.scheduling_requests, 0);
            assert_eq!(st.configured_grants_used, 500);
        }
    }

    /// Two saturated uplinks of equal channels (8 Mbit/s), one with a configured grant of
    /// half of every slot. Proportional fair counts the reservation as given and evens the
    /// two out; round robin gives the rest of each slot in turn, so the one with the grant
    /// has 0.5 + 0.5/2 of the resources. (The other's first grant, the one that answers its
    /// SR, has what the reservation leaves: a full block never fitted, and it never got one.)
    #[test]
    fn proportional_fair_counts_a_configured_grant_as_given() {
        for (s, want) in [(PF, [4.0, 4.0]), (CellScheduler::RoundRobin, [6.0, 2.0])] {
            let mut c = cell(s, vec![(rate(10), rate(8)), (rate(10), rate(8))]);
            c.dirs[2].set_configured_grant(1, 0, 0.5);
            saturated(&mut c, &[(1, 0), (2, 0)], 10_000, 1, 5);
            for (u, want) in want.iter().enumerate() {
                let st = c.queue_link_stats(2 + u).expect("uplink").0;
                let mb = st.block_bytes_used as f64 * 8.0 / 1e6 / 5.0;
                eprintln!(
                    "{s:?} UE {u}: {mb:.3} Mbit/s, {} occasions used",
                    st.configured_grants_used
                );
                assert!((mb - want).abs() < 0.15, "{s:?} UE {u}: {mb} Mbit/s, expected {want}");
            }
        }
    }

    /// A cell that has been idle, or busy only with a phone waiting for its SR occasion,
    /// serves a new packet in the first slot that starts after it came, as a link of one UE
    /// does: the slots before were built without it. (It once served the slot after the
    /// last one it had served, long past, so the packet left before it came.)
    #[test]
    fn an_idle_cell_serves_a_packet_in_a_slot_after_it_came() {
        let mut c = cell(CellScheduler::RoundRobin, vec![(rate(20), rate(20))]);
        let offers = vec![
            (Time::from_micros(10_300), 0, 1, pkt(1)),
            (Time::from_micros(20_300), 1, 0, pkt(2)),
            (Time::from_millis(40), 0, 1, pkt(3)),
        ];
        let out = drive(&mut c, offers, Time::from_secs(1), &mut Seen::default());
        let at: Vec<_> = out.iter().map(|o| (o.2.id, o.0)).collect();
        assert_eq!(
            at,
            [
                // Slot 11 (10 started before it came), delivered at its end.
                (1, Time::from_millis(12)),
                // The SR at the next occasion (slot 25, every 5 ms), the grant 1 ms later,
                // the slot K2 = 2 after that, delivered at its end.
                (2, Time::from_millis(29)),
                // A packet at a slot's start comes after its block was built.
                (3, Time::from_millis(42)),
            ]
        );
        // An uplink packet waits for its SR occasion (slot 65) when a downlink one comes.
        let offers = vec![
            (Time::from_micros(60_300), 1, 0, pkt(4)),
            (Time::from_micros(62_700), 0, 1, pkt(5)),
        ];
        let mut c = cell(CellScheduler::RoundRobin, vec![(rate(20), rate(20))]);
        let out = drive(&mut c, offers, Time::from_secs(1), &mut Seen::default());
        let at: Vec<_> = out.iter().map(|o| (o.2.id, o.0)).collect();
        assert_eq!(at, [(5, Time::from_millis(64)), (4, Time::from_millis(69))]);
    }

    #[test]
    fn queues_are_reported_under_each_ue_and_direction() {
        let mut c = cell(
            CellScheduler::RoundRobin,
            vec![(rate(10), rate(2)), (rate(30), rate(4))],
        );
        let labels: Vec<_> = c.queues().iter().map(|q| q.label.clone()).collect();
        assert_eq!(labels, ["down/ue0", "down/ue1", "up/ue0", "up/ue1"]);
        // Each queue feeds its own UE's channel, and so do the ports of its direction.
        let mbps: Vec<u64> = (0..4)
            .map(|q| c.queue_rate(q).unwrap().bits_per_sec() / 1_000_000)
            .collect();
        assert_eq!(mbps, [10, 30, 2, 4]);
        // ... and each is reported under its direction's ports.
        let ports: Vec<_> = (0..5).map(|q| c.queue_ports(q)).collect();
        assert_eq!(ports, [Some((0, 1)), Some((0, 2)), Some((1, 0)), Some((2, 0)), None]);
        assert_eq!(c.rate(0, 2), Some(Rate::mbps(30)));
        assert_eq!(c.rate(1, 0), Some(Rate::mbps(2)));
        assert_eq!(c.rate(1, 2), None);
        #[derive(Default)]
        struct Queues(Vec<usize>);
        impl Observer<Pkt> for Queues {
            fn departed(&mut self, _now: Time, d: &Departure<'_, Pkt>) {
                self.0.push(d.queue);
            }
            fn lost(&mut self, _now: Time, _l: Loss<Pkt>) {}
        }
        let mut q = Queues::default();
        let offers = vec![
            (Time::ZERO, 0, 2, pkt(0)),
            (Time::ZERO, 1, 0, pkt(1)),
            (Time::ZERO, 2, 0, pkt(2)),
            (Time::ZERO, 0, 1, pkt(3)),
        ];
        let out = drive(&mut c, offers, Time::from_secs(1), &mut q);
        let mut ports: Vec<_> = out.iter().map(|o| (o.2.id, o.1)).collect();
        ports.sort();
        assert_eq!(ports, [(0, 2), (1, 0), (2, 0), (3, 1)]);
        q.0.sort();
        assert_eq!(q.0, [0, 1, 2, 3]);
        // A port pair that is no direction of the cell is refused.
        let mut seen = Seen::default();
        let out = drive(&mut c, vec![(Time::ZERO, 1, 2, pkt(9))], Time::from_secs(1), &mut seen);
        assert!(out.is_empty());
        assert_eq!(seen.lost.len(), 1);
    }
}
