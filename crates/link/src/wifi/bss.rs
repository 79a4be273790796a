//! A Wi-Fi BSS as one [`Link`]: an access point and its stations sharing one channel, each
//! device contending with its EDCA functions ([`super::edca`]), sending A-MPDUs under a
//! BlockAck agreement ([`super::block_ack`]) at its PHY mode ([`super::phy`]), with queue
//! disciplines where the queues are.
//!
//! ## Ports and queues
//!
//! Port 0 is the access point's wired side; port `s + 1` is station `s`. A packet sent from
//! port 0 to a station's port goes down, one sent from a station's port to port 0 goes up.
//! Packets are classified into an access category by their DSCP ([`ac_of_dscp`]); the
//! configuration may send every ECT(1) and CE packet (the L4S class) to one category
//! instead.
//!
//! * **At the access point**, one queue discipline per station and access category (the
//!   per-station, per-TID queues of a mac80211 AP, IEEE 802.11-2020 10.2.3.2), reported as
//!   `down/<station>/<AC>`. When the AP's EDCAF of a category wins the channel, a scheduler
//!   picks the station: round-robin among those with data, or airtime fairness (the
//!   station that has used the least airtime, a newly active one starting level with the
//!   least of the others, after mac80211's airtime scheduler).
//! * **At each station**, one queue discipline per access category for its uplink,
//!   `up/<station>/<AC>`.
//!
//! Packets leave a queue discipline when they are put in an A-MPDU ("late dequeue"): the
//! sojourn the discipline measures and marks on runs from its enqueue to the moment the
//! packet is aggregated, so it includes the wait for channel access, and the AQM sees the
//! queue that Wi-Fi builds. A packet taken from the discipline that no longer fits the
//! A-MPDU waits in the MAC (the BlockAck originator's backlog) for the next one.
//!
//! ## One channel access
//!
//! At each access ([`Edca::access`]) every transmitter builds its A-MPDU: retransmissions
//! first, then packets already in the MAC, then packets from the discipline, as long as
//! the A-MPDU stays within the Block Ack window, the configured byte cap and the
//! standard's, aPPDUMaxTime (5.484 ms) and, with a TXOP limit, PPDU + SIFS + response ≤
//! the limit (10.23.2.9). The first MPDU always goes (a single frame longer than the TXOP
//! limit is sent, as ns-3 sends it). One A-MPDU is sent per TXOP (no further exchanges in
//! the same TXOP after the BlockAck).
//!
//! * **One transmitter.** Each MPDU is received in error with the receiver's frame error
//!   rate, independently. If any arrives, the receiver answers with a BlockAck (an Ack for
//!   a single MPDU) at the control response rate (10.6.6.5), and the medium is busy for
//!   PPDU + SIFS + response; the EDCAF succeeds (CW reset). If none arrives, nothing
//!   answers: the medium is busy for the PPDU and the response time the transmitter waits
//!   (its BlockAck timeout) and the EDCAF fails (CW doubled).
//! * **Several transmitters** (from different devices) collide: no MPDU arrives, the
//!   medium is busy until the longest PPDU and its response time have passed, and the next
//!   access waits EIFS (a frame received in error, 10.3.2.3.7). Every transmitter fails.
//! * MPDUs not acknowledged are retransmitted at the next access. An MPDU that fails more
//!   than the retry limit (7) is dropped, reported lost with [`LossKind::Wire`]; the
//!   recipient's window then moves past it as a BlockAckReq would move it (the BAR frame's
//!   airtime is not modelled).
//! * MPDUs received are delivered at the end of the PPDU, in sequence order through the
//!   recipient's reordering buffer.
//!
//! ## Marking
//!
//! By default ([`MarkingRule::Dequeue`]) the queue disciplines mark as they would anywhere,
//! at their (late) dequeue. With [`MarkingRule::PendingDequeue`], the rule of the WBA/CableLabs
//! L4S Wi-Fi design (Henderson et al., ns-3 `DualPi2QueueDisc` with `PendingDequeue`), a
//! DualPI2's native L4S step is switched off and, when an A-MPDU is built, enough of the L4S
//! packets taken into it are marked CE that the batch's marks are at least the L4S packets
//! still waiting in the L queue: whatever will not make this aggregate is signalled at once.
//! The coupled marking from the classic queue's probability stays. These marks count with the
//! L sub-queue's.
//!
//! ## Scanning
//!
//! A station may leave the channel to scan ([`ScanConfig`]): every `period`, a burst of
//! `channels` off-channel dwells of `dwell` each, separated by `home` on the channel. Off
//! the channel it neither sends nor receives: its EDCAFs stop contending and the access
//! point holds its frames (power save, 11.2.3), so its queues at the AP grow. A dwell that
//! falls due while a TXOP to or from the station is under way starts when that TXOP ends.
//!
//! ## Not modelled
//!
//! RTS/CTS, multi-user transmissions (OFDMA, MU-MIMO), hidden terminals, a channel model
//! (errors come from the configured frame error rate), rate control (the MCS is fixed,
//! or picked from a signal level by [`mcs_for_signal`]), the BlockAckReq frame, power
//! save other than scanning, and beacons.

use super::airtime::{block_ack_bytes, mpdu_bytes, ACK_BYTES, DELIMITER_BYTES};
use super::block_ack::{Originator, OriginatorConfig, Recipient};
use super::edca::{AccessCategory, ContenderId, DeviceId, Edca, EdcaParams, Ending, Role};
use super::phy::{BasicRates, PhyMode, Standard, A_PPDU_MAX_TIME, SIFS};
use super::WifiError;
use crate::{Departure, Io, Link, LinkPacket, Loss, LossKind, Port, QueueInfo, Timer};
use l4s_aqm::{AqmConfig, Dropped, Enqueued, Qdisc, QueueId, QueueStats};
use l4s_core::{Dur, Rate, Rng, Time};

/// The next channel access is due.
const ACCESS: Timer = 0;
/// The PPDU in flight ends: its MPDUs are delivered.
const PPDU_END: Timer = 1;
/// Timers from here: one per station for its scan dwells, then one per queue for its
/// discipline.
const SCAN_BASE: Timer = 2;

/// The most stations a BSS takes (2007 associations is the standard's AID space; this
/// bound keeps every timer number within a [`Timer`] with all four categories carried).
pub const MAX_STATIONS: usize = 2007;

/// The access category of a DSCP: its user priority is the DSCP's three high bits (the
/// IP precedence, as Linux's `cfg80211_classify8021d` takes it by default), and the user
/// priority maps to an access category by IEEE 802.11-2020 Table 10-1: UP 1 and 2 to
/// background, 0 and 3 to best effort, 4 and 5 to video, 6 and 7 to voice.
pub fn ac_of_dscp(dscp: u8) -> AccessCategory {
    match (dscp >> 3) & 7 {
        1 | 2 => AccessCategory::Background,
        4 | 5 => AccessCategory::Video,
        6 | 7 => AccessCategory::Voice,
        _ => AccessCategory::BestEffort,
    }
}

/// The highest MCS whose receiver minimum input sensitivity is met by `signal_dbm`:
/// 802.11-2020 Table 21-25 (VHT) and 802.11ax-2021 Table 27-51 (HE) for 20 MHz, −82 dBm at
/// MCS 0 to −52 dBm at MCS 11, 3 dB more per doubling of the bandwidth; 802.11be adds
/// MCS 12 at −49 dBm and MCS 13 at −46 dBm. `None` below MCS 0's sensitivity.
pub fn mcs_for_signal(standard: Standard, bandwidth_mhz: u16, signal_dbm: f64) -> Option<u8> {
    const SENSITIVITY_20MHZ: [f64; 14] = [
        -82.0, -79.0, -77.0, -74.0, -70.0, -66.0, -65.0, -64.0, -59.0, -57.0, -54.0, -52.0, -49.0, -46.0,
    ];
    let doublings = f64::from((bandwidth_mhz / 20).max(1)).log2();
    (0..=standard.max_mcs())
        .rev()
        .find(|&m| signal_dbm >= SENSITIVITY_20MHZ[usize::from(m)] + 3.0 * doublings)
}

/// When a station leaves the channel to scan; see the [module documentation](self).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanConfig {
    /// From the start of one scan burst to the next.
    pub period: Dur,
    /// One off-channel dwell.
    pub dwell: Dur,
    /// Dwells per burst (at least 1).
    pub channels: u32,
    /// Time back on the channel between two dwells of a burst.
    pub home: Dur,
    /// When the first burst starts, from the run's time 0.
    pub offset: Dur,
}

impl ScanConfig {
    /// A burst's length: its dwells and the home-channel gaps between them.
    pub fn burst(&self) -> Dur {
        self.dwell * u64::from(self.channels) + self.home * u64::from(self.channels.saturating_sub(1))
    }

    /// The share of time off the channel.
    pub fn duty_cycle(&self) -> f64 {
        (self.dwell * u64::from(self.channels)).as_secs_f64() / self.period.as_secs_f64()
    }

    pub fn validate(&self) -> Result<(), WifiError> {
        if self.dwell.is_zero() {
            return Err(WifiError::new("scan.dwell", "a positive dwell", self.dwell));
        }
        if self.channels == 0 {
            return Err(WifiError::new("scan.channels", "at least 1 dwell per scan", 0));
        }
        if self.burst() >= self.period {
            return Err(WifiError::new(
                "scan.dwell",
                format!(
                    "a scan ({} dwells and the home time between them) shorter than its period {}",
                    self.channels, self.period
                ),
                self.burst(),
            ));
        }
        Ok(())
    }
}

/// One station of a BSS.
#[derive(Clone, Debug, PartialEq)]
pub struct StationConfig {
    /// Reported in queue labels (`down/<name>/BE`).
    pub name: String,
    /// The PHY mode of frames to and from the station.
    pub mode: PhyMode,
    /// The probability that one MPDU to or from it is received in error, in [0, 1).
    pub frame_error_rate: f64,
    /// Scanning, if it scans.
    pub scan: Option<ScanConfig>,
}

/// How the access point picks the station its EDCAF serves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Scheduler {
    /// In turn among the stations with data in the category.
    #[default]
    RoundRobin,
    /// The station with data that has used the least airtime.
    AirtimeFair,
}

/// A BSS: the access point's and stations' EDCA parameters and queues, and the stations.
#[derive(Clone, Debug, PartialEq)]
pub struct BssConfig {
    pub stations: Vec<StationConfig>,
    /// The access categories that carry traffic (each has queues and EDCAFs), in any order.
    pub categories: Vec<AccessCategory>,
    /// The L4S class (ECT(1) and CE) goes to this category whatever its DSCP.
    pub l4s_category: Option<AccessCategory>,
    /// EDCA parameters of the access point's EDCAFs, per category (indexed by
    /// `AccessCategory as usize`).
    pub ap_edca: [EdcaParams; 4],
    /// EDCA parameters of every station's EDCAFs.
    pub sta_edca: [EdcaParams; 4],
    /// The queue discipline of each of the AP's per-station, per-category queues.
    pub ap_aqm: AqmConfig,
    /// The queue discipline of each of a station's per-category queues.
    pub sta_aqm: AqmConfig,
    pub scheduler: Scheduler,
    /// A cap on an A-MPDU's length, e.g. 65 535 bytes (a peer's Maximum A-MPDU Length
    /// Exponent); the standard's own applies too.
    pub max_ampdu_bytes: u64,
    /// The BlockAck agreements' window, in MPDUs.
    pub ba_window: u16,
    /// The BSS's basic rate set, for the control response rate.
    pub basic_rates: BasicRates,
    /// How the L4S queues are marked.
    pub marking: MarkingRule,
}

/// How a BSS's L4S queues are marked; see the [module documentation](self).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MarkingRule {
    /// By the queue discipline at late dequeue, on the sojourn up to the A-MPDU.
    #[default]
    Dequeue,
    /// The pending-dequeue rule of the WBA/CableLabs L4S Wi-Fi design: a DualPI2's native
    /// step is off, and when an A-MPDU is built, enough of the L packets taken into it are
    /// marked that its marks are at least the L packets left waiting.
    PendingDequeue,
}

impl BssConfig {
    /// A BSS of `stations` with best effort only, the stations' default EDCA parameters
    /// and hostapd's at the AP, a 65 535-byte A-MPDU cap and a 64-MPDU window, round-robin.
    pub fn new(stations: Vec<StationConfig>, ap_aqm: AqmConfig, sta_aqm: AqmConfig) -> BssConfig {
        BssConfig {
            stations,
            categories: vec![AccessCategory::BestEffort],
            l4s_category: None,
            ap_edca: AccessCategory::ALL.map(EdcaParams::hostapd_ap),
            sta_edca: AccessCategory::ALL.map(EdcaParams::non_ap_sta),
            ap_aqm,
            sta_aqm,
            scheduler: Scheduler::RoundRobin,
            max_ampdu_bytes: 65_535,
            ba_window: 64,
            basic_rates: BasicRates::MANDATORY,
            marking: MarkingRule::Dequeue,
        }
    }

    pub fn validate(&self) -> Result<(), WifiError> {
        if self.stations.is_empty() {
            return Err(WifiError::new("stations", "at least one station", 0));
        }
        if self.stations.len() > MAX_STATIONS {
            return Err(WifiError::new(
                "stations",
                format!("at most {MAX_STATIONS} stations in one BSS"),
                self.stations.len(),
            ));
        }
        if self.categories.is_empty() {
            return Err(WifiError::new("categories", "at least one access category", "none"));
        }
        if let Some(c) = self.l4s_category {
            if !self.categories.contains(&c) {
                return Err(WifiError::new("l4s_category", "one of the categories carried", c));
            }
        }
        for ac in AccessCategory::ALL {
            self.ap_edca[ac as usize].validate(Role::Ap)?;
            self.sta_edca[ac as usize].validate(Role::NonApSta)?;
        }
        for s in &self.stations {
            if !(0.0..1.0).contains(&s.frame_error_rate) {
                return Err(WifiError::new(
                    "frame_error_rate",
                    "a probability in [0, 1)",
                    s.frame_error_rate,
                ));
            }
            if !(1..=s.mode.standard().max_ba_window()).contains(&self.ba_window) {
                return Err(WifiError::new(
                    "ba_window",
                    format!(
                        "1 to {} MPDUs for {}",
                        s.mode.standard().max_ba_window(),
                        s.mode.standard()
                    ),
                    self.ba_window,
                ));
            }
            if let Some(scan) = &s.scan {
                scan.validate()?;
            }
        }
        if self.max_ampdu_bytes < 2_000 {
            return Err(WifiError::new(
                "max_ampdu_bytes",
                "at least one full-size MPDU (2000 bytes)",
                self.max_ampdu_bytes,
            ));
        }
        Ok(())
    }
}

/// What one station counted (both directions).
#[derive(Clone, Debug, Default)]
pub struct StationStats {
    /// Channel time of the TXOPs to the station (down) and from it (up), in ns, collisions
    /// included.
    pub airtime_ns: [u64; 2],
    /// PPDUs sent to and from it, and the MPDUs they carried (retransmissions included).
    pub ppdus: [u64; 2],
    pub mpdus: [u64; 2],
    /// MPDU retransmissions, and MPDUs dropped at the retry limit.
    pub retries: [u64; 2],
    pub retry_drops: [u64; 2],
    /// MAC access delay in µs: from a queue's head getting something to send (or its last
    /// TXOP ending with more to send) to the start of its next TXOP.
    pub access_delay_us: [crate::wifi::Histogram; 2],
    /// Time spent off the channel, in ns, and the dwells begun.
    pub off_channel_ns: u64,
    pub dwells: u64,
}

/// What one EDCAF counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EdcafStats {
    /// TXOPs won, of which ended in a collision, and internal collisions lost.
    pub txops: u64,
    pub collisions: u64,
    pub internal_collisions: u64,
}

/// Direction index of the counters: 0 down (AP to station), 1 up.
const DOWN: usize = 0;
const UP: usize = 1;

/// A transmit queue: a queue discipline and the BlockAck agreement it feeds.
struct Txq<P> {
    qdisc: Box<dyn Qdisc<P>>,
    qdisc_timer: Option<Time>,
    origin: Originator<u32>,
    recipient: Recipient<u32>,
    /// When the head got something to send, while it waits for a TXOP.
    waiting_since: Option<Time>,
    /// CE marks the pending-dequeue rule set (counted with the L sub-queue's).
    mac_marks: u64,
}

struct Station {
    mode: PhyMode,
    fer: f64,
    scan: Option<ScanConfig>,
    off: bool,
    off_since: Time,
    /// The current scan burst's start and the dwells done in it.
    burst_start: Time,
    dwells_done: u32,
    /// The end of the last TXOP to or from it.
    busy_until: Time,
    /// Airtime used downlink, for airtime fairness.
    airtime: u64,
    stats: StationStats,
}

/// Who an EDCAF belongs to: the AP (`station` None) or a station, and its category index.
#[derive(Clone, Copy)]
struct Owner {
    station: Option<usize>,
    cat: usize,
}

/// One transmission of an access.
struct Tx {
    contender: ContenderId,
    txq: usize,
    station: usize,
    dir: usize,
    mpdus: Vec<(u16, u32)>,
    ppdu: Dur,
    response: Dur,
    /// The MPDUs received (none in a collision).
    acked: Vec<u16>,
}

/// A Wi-Fi BSS; see the [module documentation](self).
pub struct Bss<P> {
    stations: Vec<Station>,
    names: Vec<String>,
    categories: Vec<AccessCategory>,
    l4s_category: Option<usize>,
    edca: Edca,
    /// The AP's device and each station's.
    ap: DeviceId,
    devices: Vec<DeviceId>,
    /// Per contender: its owner, whether it was last told it has data, its counters.
    owners: Vec<Owner>,
    backlogged: Vec<bool>,
    edcaf_stats: Vec<EdcafStats>,
    /// EDCAF of the AP per category, of station `s` at `sta_edcaf[s * ncat + c]`.
    ap_edcaf: Vec<ContenderId>,
    sta_edcaf: Vec<ContenderId>,
    /// Down queues first (`s * ncat + c`), then up queues.
    txqs: Vec<Txq<P>>,
    info: Vec<QueueInfo>,
    /// Packets held by the MAC (in the BlockAck agreements), by slot.
    slab: Vec<Option<P>>,
    free: Vec<u32>,
    drops: Vec<Dropped<P>>,
    rr: Vec<usize>,
    scheduler: Scheduler,
    max_ampdu_bytes: u64,
    ba_window: u16,
    basic_rates: BasicRates,
    marking: MarkingRule,
    /// Packets taken from a discipline for the A-MPDU being built (reused).
    taken: Vec<(l4s_aqm::Dequeued<P>, Dur)>,
    rng: Rng,
    armed: Option<Time>,
    /// Deliveries at the end of the PPDU in flight.
    pending: Vec<(Port, u32)>,
    pending_at: Time,
    origin: Option<Time>,
}

impl<P: LinkPacket + 'static> Bss<P> {
    pub fn new(cfg: &BssConfig, mut rng: Rng) -> Result<Bss<P>, WifiError> {
        cfg.validate()?;
        let mut categories = cfg.categories.clone();
        categories.sort();
        categories.dedup();
        let ncat = categories.len();
        let mut edca = Edca::new(Rng::derive(rng.next_u64(), 1));
        let ap = edca.add_device(Role::Ap);
        let devices: Vec<DeviceId> = cfg.stations.iter().map(|_| edca.add_device(Role::NonApSta)).collect();
        let mut owners = Vec::new();
        let mut ap_edcaf = Vec::new();
        for (c, &ac) in categories.iter().enumerate() {
            ap_edcaf.push(edca.add(Time::ZERO, ap, ac, cfg.ap_edca[ac as usize])?);
            owners.push(Owner { station: None, cat: c });
        }
        let mut sta_edcaf = Vec::new();
        for (s, &d) in devices.iter().enumerate() {
            for (c, &ac) in categories.iter().enumerate() {
                sta_edcaf.push(edca.add(Time::ZERO, d, ac, cfg.sta_edca[ac as usize])?);
                owners.push(Owner {
                    station: Some(s),
                    cat: c,
                });
            }
        }
        let mut txqs = Vec::new();
        let mut info = Vec::new();
        let aqms = [cfg.ap_aqm.clone(), cfg.sta_aqm.clone()].map(|mut a| {
            if let (MarkingRule::PendingDequeue, AqmConfig::DualPi2(d)) = (cfg.marking, &mut a) {
                // The rule replaces the L queue's native step (the coupled marking stays).
                d.step_thresh_packets = Some(u32::MAX);
            }
            a
        });
        for (dir, aqm) in [("down", &aqms[0]), ("up", &aqms[1])] {
            for st in &cfg.stations {
                for &ac in &categories {
                    let qdisc: Box<dyn Qdisc<P>> = l4s_aqm::build(aqm, Rng::derive(rng.next_u64(), 2));
                    info.push(QueueInfo {
                        label: format!("{dir}/{}/{ac}", st.name),
                        aqm: qdisc.kind(),
                        subqueues: qdisc.queue_ids(),
                    });
                    let ba = OriginatorConfig {
                        window: cfg.ba_window,
                        ..OriginatorConfig::default()
                    };
                    txqs.push(Txq {
                        qdisc,
                        qdisc_timer: None,
                        origin: Originator::new(ba)?,
                        recipient: Recipient::new(cfg.ba_window, 0)?,
                        waiting_since: None,
                        mac_marks: 0,
                    });
                }
            }
        }
        let stations = cfg
            .stations
            .iter()
            .map(|s| Station {
                mode: s.mode,
                fer: s.frame_error_rate,
                scan: s.scan,
                off: false,
                off_since: Time::ZERO,
                burst_start: Time::ZERO,
                dwells_done: 0,
                busy_until: Time::ZERO,
                airtime: 0,
                stats: StationStats::default(),
            })
            .collect();
        let n = owners.len();
        Ok(Bss {
            stations,
            names: cfg.stations.iter().map(|s| s.name.clone()).collect(),
            l4s_category: cfg.l4s_category.and_then(|c| categories.iter().position(|&x| x == c)),
            categories,
            edca,
            ap,
            devices,
            owners,
            backlogged: vec![false; n],
            edcaf_stats: vec![EdcafStats::default(); n],
            ap_edcaf,
            sta_edcaf,
            txqs,
            info,
            slab: Vec::new(),
            free: Vec::new(),
            drops: Vec::new(),
            rr: vec![0; ncat],
            scheduler: cfg.scheduler,
            max_ampdu_bytes: cfg.max_ampdu_bytes,
            ba_window: cfg.ba_window,
            basic_rates: cfg.basic_rates,
            marking: cfg.marking,
            taken: Vec::new(),
            rng: Rng::derive(rng.next_u64(), 3),
            armed: None,
            pending: Vec::new(),
            pending_at: Time::ZERO,
            origin: None,
        })
    }

    /// The counters of station `s`.
    pub fn station_stats(&self, s: usize) -> Option<&StationStats> {
        self.stations.get(s).map(|st| &st.stats)
    }

    /// The counters of the AP's EDCAF for `ac` (`station` None) or a station's.
    pub fn edcaf_stats(&self, station: Option<usize>, ac: AccessCategory) -> Option<EdcafStats> {
        let c = self.categories.iter().position(|&x| x == ac)?;
        let id = match station {
            None => self.ap_edcaf[c],
            Some(s) if s < self.stations.len() => self.sta_edcaf[s * self.categories.len() + c],
            Some(_) => return None,
        };
        Some(self.edcaf_stats[id.index()])
    }

    /// The devices of the channel: the AP's, then each station's.
    pub fn devices(&self) -> (DeviceId, &[DeviceId]) {
        (self.ap, &self.devices)
    }

    fn ncat(&self) -> usize {
        self.categories.len()
    }

    fn txq_index(&self, dir: usize, station: usize, cat: usize) -> usize {
        dir * self.stations.len() * self.ncat() + station * self.ncat() + cat
    }

    fn category_of(&self, pkt: &P) -> usize {
        if let Some(c) = self.l4s_category {
            if matches!(pkt.ecn(), l4s_core::Ecn::Ect1 | l4s_core::Ecn::Ce) {
                return c;
            }
        }
        let ac = ac_of_dscp(pkt.dscp());
        // A category the BSS does not carry falls to the nearest one carried below it, or
        // the lowest.
        self.categories.iter().rposition(|&x| x <= ac).unwrap_or(0)
    }

    fn has_down_data(&self, s: usize) -> bool {
        (0..self.ncat()).any(|c| self.has_data(self.txq_index(DOWN, s, c)))
    }

    fn has_data(&self, q: usize) -> bool {
        let t = &self.txqs[q];
        t.origin.failed_len() > 0 || t.origin.backlog_len() > 0 || t.qdisc.len_packets() > 0
    }

    /// Tell the engine whether EDCAF `id` has something to send now.
    fn refresh(&mut self, id: ContenderId, now: Time) {
        let o = self.owners[id.index()];
        let want = match o.station {
            None => {
                (0..self.stations.len()).any(|s| !self.stations[s].off && self.has_data(self.txq_index(DOWN, s, o.cat)))
            }
            Some(s) => !self.stations[s].off && self.has_data(self.txq_index(UP, s, o.cat)),
        };
        if want != self.backlogged[id.index()] {
            self.backlogged[id.index()] = want;
            // The contender exists: the engine cannot refuse it.
            let _ = self.edca.set_backlogged(id, now, want);
        }
    }

    fn refresh_station(&mut self, s: usize, now: Time) {
        for c in 0..self.ncat() {
            self.refresh(self.ap_edcaf[c], now);
            self.refresh(self.sta_edcaf[s * self.ncat() + c], now);
        }
    }

    /// Ask for the next access if it moved.
    fn arm(&mut self, io: &mut Io<'_, P>) {
        if let Some(t) = self.edca.next_access() {
            let t = t.max(io.now);
            if self.armed != Some(t) {
                self.armed = Some(t);
                io.wake(ACCESS, t);
            }
        }
    }

    fn arm_qdisc(&mut self, q: usize, io: &mut Io<'_, P>) {
        let base = SCAN_BASE as usize + self.stations.len();
        let t = &mut self.txqs[q];
        match t.qdisc.next_timeout() {
            Some(at) if t.qdisc_timer != Some(at) => {
                t.qdisc_timer = Some(at);
                io.wake((base + q) as Timer, at);
            }
            Some(_) => {}
            None => t.qdisc_timer = None,
        }
    }

    fn flush_drops(&mut self, q: usize, io: &mut Io<'_, P>) {
        for d in self.drops.drain(..) {
            io.lost(Loss {
                kind: LossKind::Queue {
                    queue: q,
                    sub: d.queue,
                    reason: d.reason,
                },
                sojourn: d.sojourn,
                pkt: d.pkt,
            });
        }
    }

    fn store(&mut self, pkt: P) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.slab[i as usize] = Some(pkt);
                i
            }
            None => {
                self.slab.push(Some(pkt));
                (self.slab.len() - 1) as u32
            }
        }
    }

    fn take(&mut self, i: u32) -> Option<P> {
        let p = self.slab.get_mut(i as usize)?.take();
        if p.is_some() {
            self.free.push(i);
        }
        p
    }

    fn size_of(&self, i: u32) -> u32 {
        self.slab[i as usize].as_ref().map_or(0, |p| p.wire_len())
    }

    /// The station the AP's EDCAF of category `cat` serves next, if any has data.
    fn pick_station(&mut self, cat: usize) -> Option<usize> {
        let n = self.stations.len();
        let mut ready = (0..n)
            .map(|k| (self.rr[cat] + k) % n)
            .filter(|&s| !self.stations[s].off && self.has_data(self.txq_index(DOWN, s, cat)));
        let s = match self.scheduler {
            Scheduler::RoundRobin => ready.next()?,
            Scheduler::AirtimeFair => ready.min_by_key(|&s| self.stations[s].airtime)?,
        };
        self.rr[cat] = (s + 1) % n;
        Some(s)
    }

    /// The response to an A-MPDU of `mpdus` to or from station `s`: an Ack for one MPDU, a
    /// compressed BlockAck otherwise, at the control response rate.
    fn response(&self, s: usize, mpdus: usize) -> Dur {
        let rate = self.stations[s].mode.control_response_rate(self.basic_rates);
        let bytes = if mpdus <= 1 {
            ACK_BYTES
        } else {
            block_ack_bytes(self.ba_window).unwrap_or(32)
        };
        rate.frame_duration(bytes)
    }

    /// Build the A-MPDU of queue `q` (station `s`) for a TXOP starting at `now`, with the
    /// category's TXOP limit.
    fn build(&mut self, q: usize, s: usize, txop_limit: Option<Dur>, io: &mut Io<'_, P>) -> (Vec<(u16, u32)>, Dur) {
        let now = io.now;
        let mode = self.stations[s].mode;
        let max_bytes = self.max_ampdu_bytes.min(mode.standard().max_ampdu_bytes());
        let mut k = 0usize;
        let mut padded = 0u64;
        let mut ppdu = Dur::ZERO;
        let fits = |k: usize, padded: u64, ip: u32, this: &Self| -> Option<(u64, Dur)> {
            let mpdu = mpdu_bytes(ip, false).ok()?;
            let bytes = padded + DELIMITER_BYTES + mpdu;
            let d = mode.ppdu_duration(bytes);
            let within = bytes <= max_bytes
                && d <= A_PPDU_MAX_TIME
                && txop_limit.is_none_or(|l| d + SIFS + this.response(s, k + 1) <= l);
            (k == 0 || within).then_some((bytes, d))
        };
        // What the MAC holds: retransmissions, then its backlog within the window.
        let held: Vec<u32> = self.txqs[q].origin.queued().copied().collect();
        let mut full = false;
        for i in held {
            match fits(k, padded, self.size_of(i), self) {
                Some((bytes, d)) if k < usize::from(self.ba_window) => {
                    k += 1;
                    padded = bytes.next_multiple_of(4);
                    ppdu = d;
                }
                _ => {
                    full = true;
                    break;
                }
            }
        }
        // Then packets from the queue discipline while they fit.
        let mut taken = std::mem::take(&mut self.taken);
        while !full
            && self.txqs[q].origin.window_room() > self.txqs[q].origin.backlog_len() + taken.len()
            && k < usize::from(self.ba_window)
        {
            let Some(d) = self.txqs[q].qdisc.dequeue(now, &mut self.drops) else {
                break;
            };
            let ok = fits(k, padded, d.pkt.wire_len(), self);
            taken.push((d, ok.map_or(Dur::ZERO, |(_, dur)| dur.saturating_sub(ppdu))));
            match ok {
                Some((bytes, dur)) => {
                    k += 1;
                    padded = bytes.next_multiple_of(4);
                    ppdu = dur;
                }
                None => full = true,
            }
        }
        if self.marking == MarkingRule::PendingDequeue {
            self.mark_pending(q, &mut taken);
        }
        for (d, serialisation) in taken.drain(..) {
            io.departed(&Departure {
                pkt: &d.pkt,
                queue: q,
                sub: d.queue,
                sojourn: d.sojourn,
                start: now,
                serialisation,
                marked: d.marked,
            });
            let i = self.store(d.pkt);
            self.txqs[q].origin.enqueue(i, now);
        }
        self.taken = taken;
        self.flush_drops(q, io);
        self.arm_qdisc(q, io);
        if k == 0 {
            return (Vec::new(), Dur::ZERO);
        }
        let before = self.txqs[q].origin.counters().retransmitted;
        let mpdus = match self.txqs[q].origin.next_ampdu(k) {
            Ok(v) => v.into_iter().map(|(seq, &i)| (seq, i)).collect(),
            Err(_) => Vec::new(),
        };
        let dir = usize::from(q >= self.stations.len() * self.ncat());
        self.stations[s].stats.retries[dir] += self.txqs[q].origin.counters().retransmitted - before;
        (mpdus, ppdu)
    }

    /// The pending-dequeue rule: of the packets just taken from queue `q`'s L sub-queue,
    /// mark (CE) enough that the batch's marks are at least the packets still waiting in
    /// the L queue: everything that will not make this aggregate is signalled at once.
    fn mark_pending(&mut self, q: usize, taken: &mut [(l4s_aqm::Dequeued<P>, Dur)]) {
        let waiting = self.txqs[q].qdisc.backlog_of(QueueId::L).0;
        let mut marks = taken.iter().filter(|(d, _)| d.queue == QueueId::L && d.marked).count();
        for (d, _) in taken.iter_mut() {
            if marks >= waiting {
                break;
            }
            if d.queue == QueueId::L && !d.marked && d.pkt.set_ce() {
                d.marked = true;
                marks += 1;
                self.txqs[q].mac_marks += 1;
            }
        }
    }

    /// The access due at `at`.
    fn on_access(&mut self, at: Time, io: &mut Io<'_, P>) {
        if self.armed != Some(at) {
            return;
        }
        self.armed = None;
        if self.edca.next_access().is_none_or(|t| t > at) {
            self.arm(io);
            return;
        }
        // A late real-time driver lets every EDCAF due by now transmit now.
        let Some(grant) = self.edca.access(at) else {
            self.arm(io);
            return;
        };
        for &(id, _) in &grant.internal_collisions {
            self.edcaf_stats[id.index()].internal_collisions += 1;
        }
        let mut txs = Vec::with_capacity(grant.transmitters.len());
        for &id in &grant.transmitters {
            let o = self.owners[id.index()];
            let (station, dir) = match o.station {
                Some(s) => (Some(s), UP),
                None => (self.pick_station(o.cat), DOWN),
            };
            let Some(s) = station else {
                continue;
            };
            let q = self.txq_index(dir, s, o.cat);
            let limit = self.edca.state(id, at).and_then(|st| st.params.txop_limit);
            if let Some(since) = self.txqs[q].waiting_since.take() {
                self.stations[s].stats.access_delay_us[dir].record(at.since(since).as_nanos() / 1_000);
            }
            let (mpdus, ppdu) = self.build(q, s, limit, io);
            let response = self.response(s, mpdus.len());
            txs.push(Tx {
                contender: id,
                txq: q,
                station: s,
                dir,
                mpdus,
                ppdu,
                response,
                acked: Vec::new(),
            });
        }
        let collision = txs.iter().filter(|t| !t.mpdus.is_empty()).count() > 1;
        let mut end = at;
        let mut ending = Ending::Clean;
        for t in &mut txs {
            self.edcaf_stats[t.contender.index()].txops += 1;
            if t.mpdus.is_empty() {
                // Won the channel with nothing left to send (the AQM dropped it all).
                continue;
            }
            let st = &mut self.stations[t.station];
            st.stats.ppdus[t.dir] += 1;
            st.stats.mpdus[t.dir] += t.mpdus.len() as u64;
            if collision {
                self.edcaf_stats[t.contender.index()].collisions += 1;
                ending = Ending::Error;
            } else {
                let fer = st.fer;
                let rng = &mut self.rng;
                t.acked = t
                    .mpdus
                    .iter()
                    .filter(|_| fer == 0.0 || !rng.chance(fer))
                    .map(|m| m.0)
                    .collect();
            }
            let txop = t.ppdu + SIFS + t.response;
            end = end.max(at + txop);
            st.stats.airtime_ns[t.dir] += txop.as_nanos();
            if t.dir == DOWN {
                st.airtime += txop.as_nanos();
            }
            st.busy_until = st.busy_until.max(at + txop);
        }
        self.edca.busy_until(at, end, ending);
        let ppdu_end = txs.iter().map(|t| at + t.ppdu).max().unwrap_or(at);
        let mut released = Vec::new();
        for t in &txs {
            if t.mpdus.is_empty() {
                let _ = self.edca.succeeded(t.contender, at);
                continue;
            }
            let (q, s, dir) = (t.txq, t.station, t.dir);
            let before = self.txqs[q].origin.counters().dropped_retry_limit;
            let dropped = self.txqs[q].origin.on_block_ack(&t.acked, at).unwrap_or_default();
            self.stations[s].stats.retry_drops[dir] += self.txqs[q].origin.counters().dropped_retry_limit - before;
            // The MPDUs received go through the recipient's reordering buffer; those given
            // up move its window on, as a BlockAckReq would.
            let port = if dir == DOWN { s + 1 } else { 0 };
            for &(seq, i) in t.mpdus.iter().filter(|m| t.acked.contains(&m.0)) {
                if let Ok(r) = self.txqs[q].recipient.receive(seq, i) {
                    released.extend(r.into_iter().map(|(_, i)| (port, i)));
                }
            }
            for d in dropped {
                if let Some(pkt) = self.take(d.payload) {
                    io.lost(Loss {
                        pkt,
                        kind: LossKind::Wire,
                        sojourn: Dur::ZERO,
                    });
                }
            }
            let win_start = self.txqs[q].origin.win_start();
            if let Ok(r) = self.txqs[q].recipient.on_block_ack_req(win_start) {
                released.extend(r.into_iter().map(|(_, i)| (port, i)));
            }
            let _ = if t.acked.is_empty() {
                self.edca.failed(t.contender, at).map(|_| ())
            } else {
                self.edca.succeeded(t.contender, at)
            };
        }
        for t in &txs {
            if self.has_data(t.txq) {
                self.txqs[t.txq].waiting_since = Some(end);
            }
        }
        self.pending.extend(released);
        self.pending_at = ppdu_end;
        if !self.pending.is_empty() {
            io.wake(PPDU_END, ppdu_end);
        }
        // Only the transmitters' queues changed (and internal collisions changed none).
        for t in &txs {
            self.refresh(t.contender, at);
        }
        self.arm(io);
    }

    fn on_ppdu_end(&mut self, at: Time, io: &mut Io<'_, P>) {
        if at != self.pending_at {
            return;
        }
        let pending = std::mem::take(&mut self.pending);
        for (port, i) in pending {
            if let Some(pkt) = self.take(i) {
                io.deliver(port, pkt, at);
            }
        }
    }

    /// Station `s`'s scan timer.
    fn on_scan(&mut self, s: usize, at: Time, io: &mut Io<'_, P>) {
        let Some(scan) = self.stations[s].scan else {
            return;
        };
        let st = &mut self.stations[s];
        if !st.off {
            // A dwell is due; it waits for a TXOP with the station to end.
            if st.busy_until > at {
                io.wake(SCAN_BASE + s as Timer, st.busy_until);
                return;
            }
            if st.dwells_done == 0 {
                st.burst_start = at;
            }
            st.off = true;
            st.off_since = at;
            st.stats.dwells += 1;
            io.wake(SCAN_BASE + s as Timer, at + scan.dwell);
        } else {
            st.off = false;
            st.stats.off_channel_ns += at.since(st.off_since).as_nanos();
            st.dwells_done += 1;
            let next = if st.dwells_done < scan.channels {
                at + scan.home
            } else {
                st.dwells_done = 0;
                st.burst_start + scan.period
            };
            io.wake(SCAN_BASE + s as Timer, next.max(at));
            for dir in [DOWN, UP] {
                for c in 0..self.categories.len() {
                    let q = self.txq_index(dir, s, c);
                    if self.has_data(q) {
                        self.txqs[q].waiting_since.get_or_insert(at);
                    }
                }
            }
        }
        self.refresh_station(s, at);
        self.arm(io);
    }
}

impl<P: LinkPacket + 'static> Link<P> for Bss<P> {
    fn ports(&self) -> usize {
        self.stations.len() + 1
    }

    fn start(&mut self, origin: Time, io: &mut Io<'_, P>) {
        self.origin = Some(origin);
        for s in 0..self.stations.len() {
            if let Some(scan) = self.stations[s].scan {
                io.wake(SCAN_BASE + s as Timer, (origin + scan.offset).max(io.now));
            }
        }
        for q in 0..self.txqs.len() {
            self.arm_qdisc(q, io);
        }
    }

    fn send(&mut self, from: Port, to: Port, pkt: P, io: &mut Io<'_, P>) {
        let n = self.stations.len();
        let (dir, s) = match (from, to) {
            (0, t) if (1..=n).contains(&t) => (DOWN, t - 1),
            (f, 0) if (1..=n).contains(&f) => (UP, f - 1),
            _ => {
                // Not a path through this BSS (stations reach each other through the AP's
                // node): lost rather than misdelivered.
                io.lost(Loss {
                    pkt,
                    kind: LossKind::Wire,
                    sojourn: Dur::ZERO,
                });
                return;
            }
        };
        let c = self.category_of(&pkt);
        let q = self.txq_index(dir, s, c);
        let was_empty = !self.has_data(q);
        if dir == DOWN && self.scheduler == Scheduler::AirtimeFair && !self.has_down_data(s) {
            // A station becoming active starts level with the least airtime of the active
            // ones, so that idle time is not banked as credit.
            let least = (0..n)
                .filter(|&o| o != s && self.has_down_data(o))
                .map(|o| self.stations[o].airtime)
                .min();
            if let Some(least) = least {
                self.stations[s].airtime = self.stations[s].airtime.max(least);
            }
        }
        match self.txqs[q].qdisc.enqueue(pkt, io.now) {
            Enqueued::Queued { .. } => {
                if was_empty && !self.stations[s].off {
                    self.txqs[q].waiting_since = Some(io.now);
                }
            }
            Enqueued::Dropped(d) => self.drops.push(d),
        }
        self.txqs[q].qdisc.drain_enqueue_drops(&mut self.drops);
        self.flush_drops(q, io);
        self.arm_qdisc(q, io);
        let id = if dir == DOWN {
            self.ap_edcaf[c]
        } else {
            self.sta_edcaf[s * self.ncat() + c]
        };
        self.refresh(id, io.now);
        self.arm(io);
    }

    fn handle_timeout(&mut self, timer: Timer, at: Time, io: &mut Io<'_, P>) {
        let n = self.stations.len();
        match timer {
            ACCESS => self.on_access(at, io),
            PPDU_END => self.on_ppdu_end(at, io),
            t if (t as usize) < SCAN_BASE as usize + n => self.on_scan(t as usize - SCAN_BASE as usize, at, io),
            t => {
                let q = t as usize - SCAN_BASE as usize - n;
                let Some(txq) = self.txqs.get_mut(q) else {
                    return;
                };
                if txq.qdisc_timer != Some(at) {
                    return;
                }
                txq.qdisc_timer = None;
                txq.qdisc.on_timeout(io.now);
                self.arm_qdisc(q, io);
            }
        }
    }

    fn queues(&self) -> &[QueueInfo] {
        &self.info
    }

    fn queue_stats(&self, q: usize) -> Vec<(QueueId, QueueStats)> {
        let Some(t) = self.txqs.get(q) else {
            return Vec::new();
        };
        let mut stats = t.qdisc.stats();
        for (id, st) in &mut stats {
            if *id == QueueId::L {
                st.marks += t.mac_marks;
            }
        }
        stats
    }

    fn backlog(&self, q: usize) -> (u64, u64) {
        self.txqs
            .get(q)
            .map_or((0, 0), |t| (t.qdisc.len_packets() as u64, t.qdisc.len_bytes()))
    }

    fn probability(&self, q: usize) -> Option<f64> {
        self.txqs.get(q)?.qdisc.probability()
    }

    fn rate(&self, from: Port, to: Port) -> Option<Rate> {
        let s = if from == 0 { to } else { from };
        Some(self.stations.get(s.checked_sub(1)?)?.mode.data_rate())
    }

    fn wifi_stats(&self) -> Option<super::BssStats> {
        let stations = self
            .stations
            .iter()
            .zip(&self.names)
            .map(|(st, name)| super::StationReport {
                name: name.clone(),
                mode: st.mode,
                stats: st.stats.clone(),
            })
            .collect();
        let edcafs = (0..self.owners.len())
            .map(|i| {
                let o = self.owners[i];
                super::EdcafReport {
                    station: o.station.map(|s| self.names[s].clone()),
                    category: self.categories[o.cat],
                    stats: self.edcaf_stats[i],
                }
            })
            .collect();
        Some(super::BssStats { stations, edcafs })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{deep_fifo, drive, Pkt, Seen};
    use crate::wifi::airtime::{mean_backoff, plan_exchange, ExchangeConfig};
    use crate::wifi::phy::GuardInterval;
    use l4s_core::Ecn;

    fn he(bw: u16, nss: u8, mcs: u8) -> PhyMode {
        PhyMode::new(Standard::He, bw, nss, mcs, GuardInterval::Ns800).unwrap()
    }

    fn station(name: &str, mode: PhyMode) -> StationConfig {
        StationConfig {
            name: name.into(),
            mode,
            frame_error_rate: 0.0,
            scan: None,
        }
    }

    fn bss(stations: Vec<StationConfig>) -> BssConfig {
        BssConfig::new(stations, deep_fifo(), deep_fifo())
    }

    fn pkt(id: u64) -> Pkt {
        Pkt {
            id,
            size: 1500,
            ecn: Ecn::NotEct,
        }
    }

    /// `n` packets from `from` to `to`, all offered at time 0.
    fn burst(from: Port, to: Port, n: u64, first_id: u64) -> Vec<(Time, Port, Port, Pkt)> {
        (0..n).map(|i| (Time::ZERO, from, to, pkt(first_id + i))).collect()
    }

    fn run(
        cfg: &BssConfig,
        offers: Vec<(Time, Port, Port, Pkt)>,
        until: Time,
        seed: u64,
    ) -> (Bss<Pkt>, Vec<(Time, Port, Pkt)>, Seen) {
        let mut link = Bss::new(cfg, Rng::new(seed)).unwrap();
        let mut seen = Seen::default();
        let out = drive(&mut link, offers, until, &mut seen);
        (link, out, seen)
    }

    fn mbps(delivered: usize, over: Dur) -> f64 {
        delivered as f64 * 1500.0 * 8.0 / over.as_secs_f64() / 1e6
    }

    #[test]
    fn one_station_reaches_the_mac_efficiency_of_its_ampdu() {
        // Downlink saturated to one error-free station: every TXOP is AIFS + the post-backoff
        // (uniform on 0..=15 slots) + an A-MPDU of 42 MPDUs (65 535 bytes) + SIFS + BlockAck.
        for mode in [he(80, 2, 9), he(20, 1, 7), he(40, 2, 11)] {
            let cfg = bss(vec![station("laptop", mode)]);
            let horizon = Dur::from_millis(500);
            let (link, out, _) = run(&cfg, burst(0, 1, 60_000, 0), Time::ZERO + horizon, 1);
            assert!(out.iter().all(|(_, port, _)| *port == 1));
            let measured = mbps(out.len(), horizon);
            let ex = plan_exchange(
                &mode,
                std::iter::repeat_n(1500u32, 64),
                &ExchangeConfig {
                    backoff: mean_backoff(15),
                    limits: crate::wifi::AmpduLimits {
                        max_bytes: 65_535,
                        ..crate::wifi::AmpduLimits::new(Standard::He)
                    },
                    ..ExchangeConfig::new(&mode)
                },
            )
            .unwrap();
            let analytic = ex.ampdu.mpdus as f64 * 1500.0 * 8.0 / ex.airtime().as_secs_f64() / 1e6;
            let st = link.station_stats(0).unwrap();
            let per_ampdu = st.mpdus[DOWN] as f64 / st.ppdus[DOWN] as f64;
            eprintln!(
                "{mode}: {measured:.1} Mbit/s against {analytic:.1} analytic ({} MPDUs, PPDU {}), {per_ampdu:.1} MPDUs per A-MPDU",
                ex.ampdu.mpdus, ex.ampdu.ppdu
            );
            assert!(
                (measured / analytic - 1.0).abs() < 0.05,
                "{mode}: {measured} against {analytic}"
            );
            assert!((per_ampdu - ex.ampdu.mpdus as f64).abs() < 0.01, "{per_ampdu}");
        }
    }

    #[test]
    fn delivery_is_in_order_once_with_frame_errors_and_retries() {
        let mut cfg = bss(vec![StationConfig {
            frame_error_rate: 0.2,
            ..station("far", he(20, 1, 4))
        }]);
        cfg.stations[0].frame_error_rate = 0.2;
        let (link, out, seen) = run(&cfg, burst(0, 1, 20_000, 0), Time::from_secs(20), 3);
        let ids: Vec<u64> = out.iter().map(|d| d.2.id).collect();
        let lost: Vec<u64> = seen.lost.iter().map(|l| l.1).collect();
        assert_eq!(ids.len() + lost.len(), 20_000, "every packet delivered or lost once");
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "in order");
        let st = link.station_stats(0).unwrap();
        let retry_share = st.retries[DOWN] as f64 / st.mpdus[DOWN] as f64;
        // A fifth of transmissions fail; each failure is sent again: retries / sent = 0.2.
        eprintln!(
            "FER 0.2: {} retries of {} MPDUs sent ({retry_share:.3}), {} dropped",
            st.retries[DOWN],
            st.mpdus[DOWN],
            lost.len()
        );
        assert!((retry_share - 0.2).abs() < 0.01, "{retry_share}");
        // Eight failures in a row: 0.2^8 of the packets, 0.05 expected of 20 000.
        assert!(lost.len() <= 2, "{}", lost.len());
    }

    #[test]
    fn a_slow_station_takes_the_air_without_airtime_fairness() {
        // 1 slow (HE20 MCS0) + 2 fast (HE80 2SS MCS9) stations, downlink saturated.
        let stations = vec![
            station("slow", he(20, 1, 0)),
            station("fast1", he(80, 2, 9)),
            station("fast2", he(80, 2, 9)),
        ];
        let mut offers = Vec::new();
        for s in 0..3 {
            offers.extend(burst(0, s + 1, 30_000, 100_000 * s as u64));
        }
        for (scheduler, check) in [(Scheduler::RoundRobin, 0), (Scheduler::AirtimeFair, 1)] {
            let mut cfg = bss(stations.clone());
            cfg.scheduler = scheduler;
            let (link, _, _) = run(&cfg, offers.clone(), Time::from_secs(1), 7);
            let air: Vec<f64> = (0..3)
                .map(|s| link.station_stats(s).unwrap().airtime_ns[DOWN] as f64)
                .collect();
            let ppdus: Vec<u64> = (0..3).map(|s| link.station_stats(s).unwrap().ppdus[DOWN]).collect();
            let total: f64 = air.iter().sum();
            let share: Vec<f64> = air.iter().map(|a| a / total).collect();
            eprintln!("{scheduler:?}: airtime shares {share:.3?}, PPDUs {ppdus:?}");
            if check == 0 {
                // Equal turns: the slow station's A-MPDUs are ~5 times longer.
                let slow = share[0];
                assert!(slow > 0.6 && slow < 0.8, "{slow}");
                let spread = ppdus.iter().max().unwrap() - ppdus.iter().min().unwrap();
                assert!(spread <= 1, "{ppdus:?}");
            } else {
                for s in share {
                    assert!((s - 1.0 / 3.0).abs() < 0.1 / 3.0 + 0.01, "{s}");
                }
            }
        }
    }

    #[test]
    fn a_scanning_station_gets_nothing_off_channel_and_its_queue_grows() {
        let scan = ScanConfig {
            period: Dur::from_secs(1),
            dwell: Dur::from_millis(100),
            channels: 1,
            home: Dur::ZERO,
            offset: Dur::from_millis(500),
        };
        let cfg = bss(vec![StationConfig {
            scan: Some(scan),
            ..station("scanner", he(20, 1, 7))
        }]);
        // 1 packet per ms down and up for 5 s.
        let mut offers = Vec::new();
        for i in 0..5_000u64 {
            offers.push((Time::from_millis(i), 0, 1, pkt(i)));
            offers.push((Time::from_millis(i), 1, 0, pkt(1_000_000 + i)));
        }
        let (link, out, _) = run(&cfg, offers, Time::from_secs(5), 5);
        // A dwell due during a TXOP with the station starts when the TXOP ends (at most
        // aPPDUMaxTime + SIFS + BlockAck later).
        for (t, _, p) in &out {
            let phase = (t.as_nanos() as i64 - 500_000_000).rem_euclid(1_000_000_000);
            assert!(
                !(6_000_000..100_000_000).contains(&phase),
                "packet {} delivered at {t} during a dwell",
                p.id
            );
        }
        // The largest delay of a downlink packet: it came at the start of a dwell.
        let worst = out
            .iter()
            .filter(|d| d.2.id < 1_000_000)
            .map(|(t, _, p)| t.since(Time::from_millis(p.id)))
            .max()
            .unwrap();
        let st = link.station_stats(0).unwrap();
        let off = st.off_channel_ns as f64 / 5e9;
        eprintln!(
            "worst downlink delay {worst}, off channel {off:.4} of the time, {} dwells",
            st.dwells
        );
        assert!(worst >= Dur::from_millis(99), "{worst}");
        assert_eq!(st.dwells, 5);
        assert!((off - 0.1).abs() < 0.001, "{off}");
    }

    #[test]
    fn a_lone_frame_on_an_idle_channel_goes_at_the_next_slot_boundary() {
        // One 1500-byte packet up every 10 ms: the post-backoff has run out, so each goes
        // without a backoff at the first slot boundary after it came (802.11-2020
        // 10.23.2.2): within one slot.
        let cfg = bss(vec![station("sta", he(20, 1, 7))]);
        let offers: Vec<_> = (0..1_000u64)
            .map(|i| (Time::from_micros(10_000 * i + 1_234 + (i * 37) % 9), 1, 0, pkt(i)))
            .collect();
        let (link, out, _) = run(&cfg, offers, Time::from_secs(11), 9);
        assert_eq!(out.len(), 1_000);
        let h = &link.station_stats(0).unwrap().access_delay_us[UP];
        eprintln!(
            "light load: access delay mean {:.1} us, max {} us",
            h.mean(),
            h.quantile(1.0)
        );
        assert!(h.quantile(1.0) <= 9, "{}", h.quantile(1.0));
    }

    #[test]
    fn uplink_contention_shares_the_air_and_collides() {
        // Three saturated stations upward, CW 15/1023: Jain's index of their PPDUs above
        // 0.99 and collisions close to Bianchi's p for n = 3 (0.18 with an EDCA counter).
        let stations: Vec<_> = (0..3).map(|s| station(&format!("s{s}"), he(80, 2, 9))).collect();
        let mut offers = Vec::new();
        for s in 0..3 {
            offers.extend(burst(s + 1, 0, 40_000, 100_000 * s as u64));
        }
        let (link, out, _) = run(&bss(stations), offers, Time::from_secs(4), 11);
        let ppdus: Vec<f64> = (0..3)
            .map(|s| link.station_stats(s).unwrap().ppdus[UP] as f64)
            .collect();
        let jain = ppdus.iter().sum::<f64>().powi(2) / (3.0 * ppdus.iter().map(|v| v * v).sum::<f64>());
        let (mut txops, mut coll) = (0, 0);
        for s in 0..3 {
            let e = link.edcaf_stats(Some(s), AccessCategory::BestEffort).unwrap();
            txops += e.txops;
            coll += e.collisions;
        }
        let p = coll as f64 / txops as f64;
        eprintln!(
            "3 stations up: Jain {jain:.4}, collision share {p:.3}, {} delivered",
            out.len()
        );
        assert!(jain > 0.99, "{jain}");
        assert!(out.iter().all(|d| d.1 == 0));
        assert!(p > 0.1 && p < 0.25, "{p}");
    }

    #[test]
    fn pending_dequeue_marks_all_that_misses_the_aggregate() {
        // 100 ECT(1) packets reach a DualPI2 queue at the AP at once; the station takes 42
        // per A-MPDU (65 535 bytes). The first aggregate leaves 58 waiting: its 42 are
        // marked; the second leaves 16: 16 of its 42; the third leaves none. 58 in all,
        // before DualPI2's first probability update (16 ms) could mark anything itself.
        let mut cfg = BssConfig::new(
            vec![station("sta", he(80, 2, 9))],
            l4s_aqm::AqmConfig::DualPi2(Default::default()),
            deep_fifo(),
        );
        cfg.marking = MarkingRule::PendingDequeue;
        let offers: Vec<_> = (0..100u64)
            .map(|i| {
                (
                    Time::ZERO,
                    0,
                    1,
                    Pkt {
                        ecn: Ecn::Ect1,
                        ..pkt(i)
                    },
                )
            })
            .collect();
        let (link, out, _) = run(&cfg, offers, Time::from_millis(10), 1);
        assert_eq!(out.len(), 100);
        let ce: Vec<u64> = out.iter().filter(|d| d.2.ecn == Ecn::Ce).map(|d| d.2.id).collect();
        assert_eq!(ce.len(), 58, "{ce:?}");
        // Marked in order within each aggregate: all of the first, the head of the second.
        assert!(ce.iter().take(42).copied().eq(0..42), "{ce:?}");
        assert!(ce.iter().skip(42).copied().eq(42..58), "{ce:?}");
        let l = link
            .queue_stats(0)
            .into_iter()
            .find(|(id, _)| *id == QueueId::L)
            .unwrap()
            .1;
        assert_eq!(l.marks, 58);
    }

    #[test]
    fn signal_picks_the_mcs() {
        assert_eq!(mcs_for_signal(Standard::He, 20, -50.0), Some(11));
        assert_eq!(mcs_for_signal(Standard::He, 20, -64.0), Some(7));
        assert_eq!(mcs_for_signal(Standard::He, 80, -64.0), Some(4));
        assert_eq!(mcs_for_signal(Standard::Vht, 20, -40.0), Some(9));
        assert_eq!(mcs_for_signal(Standard::Eht, 20, -40.0), Some(13));
        assert_eq!(mcs_for_signal(Standard::He, 20, -90.0), None);
    }

    #[test]
    fn bad_configurations_name_the_parameter() {
        let mut cfg = bss(vec![StationConfig {
            frame_error_rate: 1.0,
            ..station("x", he(20, 1, 7))
        }]);
        assert_eq!(
            Bss::<Pkt>::new(&cfg, Rng::new(1)).err().unwrap().parameter,
            "frame_error_rate"
        );
        cfg.stations[0].frame_error_rate = 0.0;
        cfg.stations[0].scan = Some(ScanConfig {
            period: Dur::from_millis(100),
            dwell: Dur::from_millis(100),
            channels: 1,
            home: Dur::ZERO,
            offset: Dur::ZERO,
        });
        assert_eq!(
            Bss::<Pkt>::new(&cfg, Rng::new(1)).err().unwrap().parameter,
            "scan.dwell"
        );
        cfg.stations.clear();
        assert_eq!(Bss::<Pkt>::new(&cfg, Rng::new(1)).err().unwrap().parameter, "stations");
        cfg.stations = vec![station("x", he(20, 1, 7)); MAX_STATIONS + 1];
        assert_eq!(Bss::<Pkt>::new(&cfg, Rng::new(1)).err().unwrap().parameter, "stations");
    }
}
