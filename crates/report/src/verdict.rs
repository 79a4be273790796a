//! The verdict: one headline and warnings that explain themselves, computed from
//! `summary.json` (and, for extra detail, the snapshot time series).
//!
//! Every rule uses only what the results contain, and its thresholds are the constants
//! below. Definitions used by the rules:
//!
//! * **L4S flow**: `class == "L4S"` (its data is sent ECT(1)); **classic flow**: otherwise.
//! * **bulk flow**: a congestion-controlled flow (`kind != "probe"` and `cc != "none"`);
//!   probes are paced and do not compete for capacity.
//! * **base one-way delay**: `base_rtt_ms / 2`. This assumes a symmetric path (true for
//!   the dumbbell and multi-hop topologies the simulator builds).
//! * **queueing excess** of a flow: `owd_ms.p99 - base_rtt_ms / 2`.
//! * **tolerance**: [`DELAY_EXCESS_MS`] plus the serialisation time of two 1500-byte packets at
//!   the slowest queue's rate, so slow links are not mistaken for standing queues.

use crate::fmt::{count, ms, pct, rate};
use crate::Snapshots;
use l4s_metrics::summary::{FlowSummary, QueueSummary, Summary};
use l4s_metrics::Percentiles;

/// Queueing delay (p99 of one-way delay above the base) that counts as "delay builds":
/// five times DualPI2's 1 ms L4S marking step (RFC 9332 §A.1) and far above what an
/// isolated L4S flow sees.
pub const DELAY_EXCESS_MS: f64 = 5.0;
/// Below this utilisation of the busiest queue the link never saturated.
pub const MIN_UTILIZATION: f64 = 0.80;
/// Per-flow throughput ratio (L4S : classic, mean over bulk flows) above which one class starves the other.
pub const STARVE_RATIO: f64 = 4.0;
/// A bulk flow with less than this fraction of the fair share (bulk throughput / bulk flows) is starved.
pub const STARVE_SHARE: f64 = 0.10;
/// CE fraction of an L4S flow above which "nearly every packet arrives CE".
pub const CE_SATURATED: f64 = 0.95;
/// Flows with fewer arrivals than this are too small for the ECN rules.
pub const MIN_PACKETS: u64 = 100;
/// Samples needed for a p99.9 (p99.99 needs ten times as many) to rest on at least one
/// sample beyond it.
pub const SAMPLES_P999: u64 = 1_000;
pub const SAMPLES_P9999: u64 = 10_000;

/// How good the run looks. Ordered: `Good < Warn < Bad`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Good,
    Warn,
    Bad,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Good => "good",
            Level::Warn => "warn",
            Level::Bad => "bad",
        }
    }
}

/// How much a warning matters. A `Note` (a caveat on a statistic) does not change the
/// verdict's level; `Warn` and `Bad` raise it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Note,
    Warn,
    Bad,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Note => "note",
            Severity::Warn => "warn",
            Severity::Bad => "bad",
        }
    }
}

/// One finding. `code` is stable (for scripts); `text` explains it to a person.
#[derive(Clone, Debug, PartialEq)]
pub struct Warning {
    pub code: &'static str,
    pub severity: Severity,
    pub text: String,
}

/// Media flows need this many frames before their frame statistics are judged.
const MIN_FRAMES: u64 = 100;
/// Late plus incomplete frames above this fraction are noticeable (about one bad frame in
/// ten at 60 fps is a visible judder several times a second).
const MEDIA_BAD_FRAMES: f64 = 0.1;
/// Stalled more than this fraction of the time.
const MEDIA_STALL: f64 = 0.02;

#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    pub headline: String,
    pub level: Level,
    pub warnings: Vec<Warning>,
}

impl Verdict {
    pub fn has(&self, code: &str) -> bool {
        self.warnings.iter().any(|w| w.code == code)
    }
}

pub fn is_l4s(f: &FlowSummary) -> bool {
    f.class == "L4S"
}

pub fn is_bulk(f: &FlowSummary) -> bool {
    f.kind != "probe" && f.cc != "none"
}

fn base_owd(f: &FlowSummary) -> f64 {
    if f.base_rtt_ms.is_finite() && f.base_rtt_ms > 0.0 {
        f.base_rtt_ms / 2.0
    } else {
        0.0
    }
}

fn excess(f: &FlowSummary) -> f64 {
    f.owd_ms.p99 - base_owd(f)
}

/// [`DELAY_EXCESS_MS`] plus two 1500-byte packets at the slowest queue's rate.
pub fn tolerance_ms(s: &Summary) -> f64 {
    let slowest = s.queues.iter().map(|q| q.rate_bps).filter(|r| *r > 0).min();
    DELAY_EXCESS_MS + slowest.map(|r| 2.0 * 1500.0 * 8.0 / r as f64 * 1e3).unwrap_or(0.0)
}

fn names(fs: &[&FlowSummary]) -> String {
    let v: Vec<String> = fs.iter().map(|f| format!("'{}'", f.name)).collect();
    list(&v)
}

fn list(v: &[String]) -> String {
    const MAX: usize = 6;
    if v.len() <= MAX {
        v.join(", ")
    } else {
        format!("{} and {} more", v[..MAX].join(", "), v.len() - MAX)
    }
}

fn pct0(u: f64) -> String {
    if u.is_finite() {
        format!("{:.0} %", u * 100.0)
    } else {
        "–".into()
    }
}

/// Compute the verdict. `snaps`, when given, adds per-interval detail to some warnings.
pub fn verdict(s: &Summary, snaps: Option<&Snapshots>) -> Verdict {
    let tol = tolerance_ms(s);
    let window = (s.scenario.warmup_s, s.scenario.duration_s);
    let mut w: Vec<Warning> = Vec::new();
    let l4s: Vec<&FlowSummary> = s.flows.iter().filter(|f| is_l4s(f)).collect();
    let classic: Vec<&FlowSummary> = s.flows.iter().filter(|f| !is_l4s(f)).collect();

    // Flows that delivered nothing.
    let silent: Vec<&FlowSummary> = s.flows.iter().filter(|f| f.received_packets == 0).collect();
    if !silent.is_empty() {
        w.push(Warning {
            code: "flow-silent",
            severity: Severity::Warn,
            text: format!(
                "{} delivered no packet during the statistics window ({:.1}–{:.1} s): their numbers are empty. \
                 Check the flow's start/stop times and that the warm-up is shorter than the run.",
                names(&silent),
                window.0,
                window.1
            ),
        });
    }

    // 1. ECT(1) traffic unmarked while delay builds: no L4S-aware AQM at the bottleneck.
    let unmarked: Vec<&FlowSummary> = l4s
        .iter()
        .copied()
        .filter(|f| f.received_packets >= MIN_PACKETS && f.ce_packets == 0 && excess(f) > tol)
        .collect();
    if !unmarked.is_empty() {
        let detail: Vec<String> = unmarked
            .iter()
            .map(|f| {
                let mut d = format!(
                    "'{}' OWD p99 {} ms vs base {} ms (+{} ms)",
                    f.name,
                    ms(f.owd_ms.p99),
                    ms(base_owd(f)),
                    ms(excess(f))
                );
                if let Some(sr) = snaps.and_then(|sn| sn.flow(&f.name)) {
                    let (n, of) = intervals_unmarked_with_delay(sr, base_owd(f) + tol, window);
                    if of > 0 {
                        d.push_str(&format!(", {n} of {of} snapshot intervals delayed with no CE"));
                    }
                }
                d
            })
            .collect();
        w.push(Warning {
            code: "no-l4s-marking",
            severity: Severity::Bad,
            text: format!(
                "No CE marks on ECT(1) traffic while delay builds: {}. An L4S-aware AQM (DualPI2, RFC 9332) \
                 marks ECT(1) packets once they queue for about 1 ms, so the queue where the delay builds \
                 does not support L4S (a FIFO, or an AQM that drops), or the L4S AQM is not the bottleneck.",
                list(&detail)
            ),
        });
    }

    // 2. ECT(1) traffic marked but still queued like classic traffic.
    let queued: Vec<&FlowSummary> = l4s
        .iter()
        .copied()
        .filter(|f| f.received_packets >= MIN_PACKETS && f.ce_packets > 0 && excess(f) > tol)
        .collect();
    if !queued.is_empty() {
        let detail: Vec<String> = queued
            .iter()
            .map(|f| {
                format!(
                    "'{}' +{} ms at p99 with {} CE",
                    f.name,
                    ms(excess(f)),
                    pct(f.ce_fraction)
                )
            })
            .collect();
        w.push(Warning {
            code: "l4s-marked-but-queued",
            severity: Severity::Warn,
            text: format!(
                "ECT(1) traffic is CE-marked but still queues like classic traffic: {} (more than {} ms above the \
                 base one-way delay). The marking AQM treats ECT(1) like ECT(0) with a classic delay target (an RFC 3168 \
                 AQM such as fq-codel or PIE with ECN), or the L queue is overloaded by unresponsive traffic.",
                list(&detail),
                ms(tol)
            ),
        });
    }

    // 3. ECN bleached or remarked.
    let has_dualpi2 = s.queues.iter().any(|q| q.aqm == "dualpi2");
    if has_dualpi2 {
        let lost_unmarked: Vec<&FlowSummary> = l4s
            .iter()
            .copied()
            .filter(|f| f.ecn == "ect1" && f.received_packets >= MIN_PACKETS && f.ce_packets == 0 && f.lost_packets > 0)
            .collect();
        if !lost_unmarked.is_empty() {
            let detail: Vec<String> = lost_unmarked
                .iter()
                .map(|f| format!("'{}' lost {} packets, 0 CE", f.name, count(f.lost_packets)))
                .collect();
            w.push(Warning {
                code: "ecn-bleached",
                severity: Severity::Bad,
                text: format!(
                    "ECT(1) flows lost packets but none arrived CE-marked although the path has a DualPI2 queue, which \
                     marks ECT(1) long before it drops: {}. If these flows cross that queue, their ECN field was bleached \
                     to Not-ECT or remarked to ECT(0) before it (a classifier, tunnel or middlebox).",
                    list(&detail)
                ),
            });
        }
        let ect1_sent: u64 = l4s
            .iter()
            .filter(|f| f.ecn == "ect1")
            .map(|f| f.received_packets)
            .fold(0, u64::saturating_add);
        for q in s.queues.iter().filter(|q| q.aqm == "dualpi2") {
            if let Some(lq) = q.subqueues.get("L") {
                if lq.enqueued_packets == 0 && q.dequeued_packets >= MIN_PACKETS && ect1_sent >= MIN_PACKETS {
                    w.push(Warning {
                        code: "ecn-bleached",
                        severity: Severity::Bad,
                        text: format!(
                            "DualPI2 queue '{}' put no packet in its L4S (L) queue, although {} delivered {} ECT(1) \
                             packets. If they cross this queue, their ECT(1) codepoint was remarked before it.",
                            q.name,
                            names(&l4s),
                            count(ect1_sent)
                        ),
                    });
                }
            }
        }
    }

    // 3b. A sender's own ECN validation failed: it says when and why.
    let failed: Vec<&FlowSummary> = s.flows.iter().filter(|f| f.ecn_validation == "failed").collect();
    if !failed.is_empty() {
        let detail: Vec<String> = failed
            .iter()
            .map(|f| {
                format!(
                    "'{}' at {} s ({})",
                    f.name,
                    f.ecn_failed_at_s
                        .map(|t| format!("{t:.3}"))
                        .unwrap_or_else(|| "?".into()),
                    f.ecn_failure.as_deref().unwrap_or("unknown")
                )
            })
            .collect();
        w.push(Warning {
            code: "ecn-validation-failed",
            severity: Severity::Bad,
            text: format!(
                "ECN validation failed, so these senders stopped sending ECT(1) and now behave as classic, loss-based \
                 flows: {}. Their feedback showed the path rewriting the ECN field (bleached: ECT arrived as Not-ECT; \
                 remarked: ECT(1) arrived as ECT(0); all-ce: every packet arrived CE; not-ect1: the receiver saw a \
                 packet that was neither ECT(1) nor CE), as RFC 9000 §13.4.2 and RFC 9331 §4 ask a sender to detect.",
                list(&detail)
            ),
        });
    }

    // Media flows whose users would notice: frames late or missing, or the picture stalling.
    let hurt: Vec<String> = s
        .flows
        .iter()
        .filter_map(|f| f.media.as_ref().map(|m| (f, m)))
        .filter(|(_, m)| {
            m.frames_sent >= MIN_FRAMES && (m.bad_frame_fraction >= MEDIA_BAD_FRAMES || m.stall_fraction >= MEDIA_STALL)
        })
        .map(|(f, m)| {
            format!(
                "'{}' {} of frames late or incomplete (frame delay p99 {} ms), stalled {} of the time",
                f.name,
                pct(m.bad_frame_fraction),
                crate::fmt::ms_fine(m.frame_delay_ms.p99),
                pct(m.stall_fraction)
            )
        })
        .collect();
    if !hurt.is_empty() {
        w.push(Warning {
            code: "media-frames-late",
            severity: Severity::Warn,
            text: format!(
                "Real-time media is suffering: {}. A frame is late when it completes more than its deadline (one frame \
                 interval by default) after its expected display time; a stall is a gap of more than 100 ms with no new \
                 frame.",
                list(&hurt)
            ),
        });
    }

    // 4. Nearly every L4S packet CE.
    let saturated: Vec<&FlowSummary> = l4s
        .iter()
        .copied()
        .filter(|f| f.received_packets >= MIN_PACKETS && f.ce_fraction >= CE_SATURATED)
        .collect();
    if !saturated.is_empty() {
        let detail: Vec<String> = saturated
            .iter()
            .map(|f| format!("'{}' {} CE", f.name, pct(f.ce_fraction)))
            .collect();
        w.push(Warning {
            code: "ce-saturated",
            severity: Severity::Warn,
            text: format!(
                "Nearly every ECT(1) packet arrived CE-marked: {}. A healthy L4S flow sees a few percent. Either \
                 something sets CE on every packet (remarking) or the L queue is overloaded (unresponsive ECT(1) traffic, \
                 or capacity far below the offered load).",
                list(&detail)
            ),
        });
    }

    // 5. Link never saturated.
    if let Some(busiest) = bottleneck(s) {
        if busiest.utilization < MIN_UTILIZATION {
            let mut text = format!(
                "No link was saturated: the busiest queue, '{}', was busy {} of the statistics window (< {}).",
                busiest.name,
                pct0(busiest.utilization),
                pct0(MIN_UTILIZATION)
            );
            if let Some(sr) = snaps.and_then(|sn| sn.queue(&busiest.name)) {
                let (n, of) = intervals_busy(sr, 0.95, window);
                if of > 0 {
                    text.push_str(&format!(" It was ≥ 95 % busy in {n} of {of} snapshot intervals."));
                }
            }
            text.push_str(
                " Latency here is not latency under load: the senders were limited elsewhere (application, receive \
                 window, an upstream link) or the run is too short for them to ramp up.",
            );
            w.push(Warning {
                code: "link-not-saturated",
                severity: Severity::Warn,
                text,
            });
        }
    }

    // 6. One class starving the other (bulk flows only).
    let bl: Vec<&FlowSummary> = l4s.iter().copied().filter(|f| is_bulk(f)).collect();
    let bc: Vec<&FlowSummary> = classic.iter().copied().filter(|f| is_bulk(f)).collect();
    if !bl.is_empty() && !bc.is_empty() {
        let mean = |v: &[&FlowSummary]| v.iter().map(|f| f.throughput_bps).sum::<f64>() / v.len() as f64;
        let (ml, mc) = (mean(&bl), mean(&bc));
        let total: f64 = bl.iter().chain(bc.iter()).map(|f| f.throughput_bps).sum();
        let fair = total / (bl.len() + bc.len()) as f64;
        let ratio = ml / mc;
        let starved = |v: &[&FlowSummary]| -> Vec<String> {
            v.iter()
                .filter(|f| f.throughput_bps < STARVE_SHARE * fair)
                .map(|f| {
                    format!(
                        "'{}' {} ({} of the fair share)",
                        f.name,
                        rate(f.throughput_bps),
                        pct0(f.throughput_bps / fair)
                    )
                })
                .collect()
        };
        let (sc, sl) = (starved(&bc), starved(&bl));
        if total > 0.0 && (ml > STARVE_RATIO * mc || !sc.is_empty()) {
            let mut text = format!(
                "Scalable (L4S) flows starve classic ones: per-flow throughput L4S {} vs classic {} (ratio {}, limit {}).",
                rate(ml),
                rate(mc),
                ratio_str(ratio),
                STARVE_RATIO
            );
            if !sc.is_empty() {
                text.push_str(&format!(
                    " Starved below {} of the fair share {}: {}.",
                    pct0(STARVE_SHARE),
                    rate(fair),
                    list(&sc)
                ));
            }
            text.push_str(
                " A coupled DualQ AQM (RFC 9332 §2.4) should give roughly equal rates; a shared queue with a classic ECN \
                 AQM or a missing coupling lets scalable flows take over.",
            );
            w.push(Warning {
                code: "l4s-starves-classic",
                severity: Severity::Warn,
                text,
            });
        }
        if total > 0.0 && (mc > STARVE_RATIO * ml || !sl.is_empty()) {
            let mut text = format!(
                "Classic flows starve scalable (L4S) ones: per-flow throughput classic {} vs L4S {} (ratio {}, limit {}).",
                rate(mc),
                rate(ml),
                ratio_str(1.0 / ratio),
                STARVE_RATIO
            );
            if !sl.is_empty() {
                text.push_str(&format!(
                    " Starved below {} of the fair share {}: {}.",
                    pct0(STARVE_SHARE),
                    rate(fair),
                    list(&sl)
                ));
            }
            w.push(Warning {
                code: "classic-starves-l4s",
                severity: Severity::Warn,
                text,
            });
        }
    }

    // 7. Percentiles shown with too few samples.
    let mut few999 = Vec::new();
    let mut few9999 = Vec::new();
    let mut check = |what: String, p: &Percentiles| {
        if p.count > 0 && p.count < SAMPLES_P999 {
            few999.push(format!("{what} ({})", count(p.count)));
        } else if p.count > 0 && p.count < SAMPLES_P9999 {
            few9999.push(format!("{what} ({})", count(p.count)));
        }
    };
    for f in &s.flows {
        check(format!("OWD of '{}'", f.name), &f.owd_ms);
        if let Some(r) = &f.rtt_ms {
            check(format!("RTT of '{}'", f.name), r);
        }
    }
    for q in &s.queues {
        check(format!("sojourn of '{}'", q.name), &q.sojourn_ms);
        for (k, sq) in &q.subqueues {
            if k != "single" {
                check(format!("sojourn of '{}/{k}'", q.name), &sq.sojourn_ms);
            }
        }
    }
    if !few999.is_empty() {
        w.push(Warning {
            code: "few-samples-p999",
            severity: Severity::Note,
            text: format!(
                "p99.9 and p99.99 rest on fewer than {} samples for {}: both are in effect the maximum. \
                 Run longer or raise the probe rate.",
                count(SAMPLES_P999),
                list(&few999)
            ),
        });
    }
    if !few9999.is_empty() {
        w.push(Warning {
            code: "few-samples-p9999",
            severity: Severity::Note,
            text: format!(
                "p99.99 rests on fewer than {} samples for {}: it is in effect the maximum (p99.9 is sound).",
                count(SAMPLES_P9999),
                list(&few9999)
            ),
        });
    }

    // A live run whose host held the testbed's own elements back: the tails include it.
    if let Some(t) = s.testbed.as_ref().filter(|t| t.disrupted) {
        let steal = match t.cpu_steal {
            Some(x) if x >= 0.001 => format!("; the hypervisor took {:.1} % of the CPU time (steal)", x * 100.0),
            _ => String::new(),
        };
        w.push(Warning {
            code: "testbed-timing",
            severity: Severity::Warn,
            text: format!(
                "the testbed fell behind: {} of {} packet hand-offs by its own elements left over 1 ms late \
                 ({:.2} %, p99.9 {} ms, worst {} ms){steal}. Delays at p99 and beyond include this lateness, which is the host's, \
                 not the network's: other processes or the hypervisor took the CPU, or the rates are more than this machine \
                 forwards. Run on a quieter machine, or at lower rates.",
                count(t.late_over_1ms),
                count(t.packets),
                t.late_share * 100.0,
                ms(t.worst_p999_ms),
                ms(t.max_ms)
            ),
        });
    }

    let (headline, hl) = headline(s, tol);
    let level = w.iter().fold(hl, |acc, x| {
        acc.max(match x.severity {
            Severity::Note => Level::Good,
            Severity::Warn => Level::Warn,
            Severity::Bad => Level::Bad,
        })
    });
    Verdict {
        headline,
        level,
        warnings: w,
    }
}

/// The bottleneck: the queue with the highest utilisation (the first of equals). The summary
/// lists queues in link order, which is not always bottleneck first (multi-hop paths).
pub fn bottleneck(s: &Summary) -> Option<&QueueSummary> {
    s.queues.iter().rev().max_by(|a, b| {
        let u = |x: f64| if x.is_finite() { x } else { f64::NEG_INFINITY };
        u(a.utilization).total_cmp(&u(b.utilization))
    })
}

fn ratio_str(r: f64) -> String {
    if r.is_finite() {
        format!("{r:.1}")
    } else {
        "∞".into()
    }
}

/// (intervals in the window where OWD max exceeded `limit_ms` and no packet was CE, intervals in the window)
fn intervals_unmarked_with_delay(sr: &crate::data::Series, limit_ms: f64, window: (f64, f64)) -> (usize, usize) {
    use crate::data::FlowCol;
    let (owd, ce) = (sr.flow(FlowCol::OwdMaxMs), sr.flow(FlowCol::CeFraction));
    let mut n = 0;
    let mut of = 0;
    for (i, t) in sr.time_s.iter().enumerate() {
        if *t > window.0 && *t <= window.1 + 1e-9 {
            let (o, c) = (
                owd.get(i).copied().unwrap_or(f64::NAN),
                ce.get(i).copied().unwrap_or(f64::NAN),
            );
            if o.is_finite() {
                of += 1;
                if o > limit_ms && c == 0.0 {
                    n += 1;
                }
            }
        }
    }
    (n, of)
}

fn intervals_busy(sr: &crate::data::Series, min: f64, window: (f64, f64)) -> (usize, usize) {
    use crate::data::QueueCol;
    let u = sr.queue(QueueCol::Utilization);
    let mut n = 0;
    let mut of = 0;
    for (i, t) in sr.time_s.iter().enumerate() {
        if *t > window.0 && *t <= window.1 + 1e-9 {
            if let Some(v) = u.get(i).filter(|v| v.is_finite()) {
                of += 1;
                if *v >= min {
                    n += 1;
                }
            }
        }
    }
    (n, of)
}

/// The class's merged OWD p99 (from `classes`, else the worst flow's), and the smallest base OWD.
fn class_p99(s: &Summary, l4s: bool) -> Option<(f64, f64)> {
    let flows: Vec<&FlowSummary> = s
        .flows
        .iter()
        .filter(|f| is_l4s(f) == l4s && f.received_packets > 0)
        .collect();
    if flows.is_empty() {
        return None;
    }
    let name = if l4s { "L4S" } else { "classic" };
    let p99 = s
        .classes
        .iter()
        .find(|c| c.class == name && c.owd_ms.count > 0)
        .map(|c| c.owd_ms.p99)
        .unwrap_or_else(|| flows.iter().map(|f| f.owd_ms.p99).fold(f64::NEG_INFINITY, f64::max));
    let base = flows.iter().map(|f| base_owd(f)).fold(f64::INFINITY, f64::min);
    Some((p99, base))
}

fn headline(s: &Summary, tol: f64) -> (String, Level) {
    let q = bottleneck(s);
    let util = q
        .map(|q| format!(" at {} utilisation", pct0(q.utilization)))
        .unwrap_or_default();
    let subq = q
        .and_then(|q| Some((q.subqueues.get("L")?, q.subqueues.get("C")?)))
        .map(|(l, c)| {
            format!(
                " (queue p99: L {} ms, C {} ms)",
                ms(l.sojourn_ms.p99),
                ms(c.sojourn_ms.p99)
            )
        })
        .unwrap_or_default();
    let l = class_p99(s, true);
    let c = class_p99(s, false);
    let marked = s.flows.iter().any(|f| is_l4s(f) && f.ce_packets > 0);
    let (label, level) = match l {
        Some((p99, base)) if !marked && p99 - base > tol => (
            "L4S not working: ECT(1) traffic got no CE marks while delay built",
            Level::Bad,
        ),
        Some(_) if !marked => ("No queue built, so no CE marks were needed", Level::Good),
        Some((p99, base)) if p99 - base > tol => ("L4S degraded: marked but queued", Level::Warn),
        Some(_) => ("L4S working", Level::Good),
        None => ("", Level::Good),
    };
    let text = match (l, c) {
        (Some((lp, _)), Some((cp, _))) => {
            format!(
                "{label}: L4S p99 {} ms vs classic {} ms one-way delay{subq}{util}",
                ms(lp),
                ms(cp)
            )
        }
        (Some((lp, lb)), None) => {
            format!(
                "{label}: L4S p99 {} ms one-way delay (base {} ms){subq}{util}",
                ms(lp),
                ms(lb)
            )
        }
        (None, Some((cp, cb))) => {
            return (
                format!(
                    "Classic traffic only: p99 {} ms one-way delay (base {} ms){util}",
                    ms(cp),
                    ms(cb)
                ),
                Level::Good,
            )
        }
        (None, None) => return ("No traffic arrived in the statistics window".into(), Level::Bad),
    };
    (text, level)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth;

    fn codes(v: &Verdict) -> Vec<&'static str> {
        v.warnings.iter().map(|w| w.code).collect()
    }

    #[test]
    fn healthy_dualpi2_is_good_and_silent() {
        let s = synth::healthy_dualpi2();
        let v = verdict(&s, None);
        assert_eq!(codes(&v), Vec::<&str>::new(), "{v:#?}");
        assert_eq!(v.level, Level::Good);
        assert!(
            v.headline
                .starts_with("L4S working: L4S p99 10.4 ms vs classic 29.4 ms"),
            "{}",
            v.headline
        );
        assert!(v.headline.contains("L 0.233 ms, C 19.3 ms"), "{}", v.headline);
        assert!(v.headline.ends_with("at 100 % utilisation"), "{}", v.headline);
        let snaps = synth::snapshots(&s, 60.0, 0.1, 1);
        assert_eq!(
            verdict(&s, Some(&snaps)),
            v,
            "snapshots add detail, never a warning of their own"
        );
    }

    #[test]
    fn a_disrupted_live_testbed_is_named_with_its_figures() {
        let mut s = synth::healthy_dualpi2();
        let check = l4s_metrics::summary::TestbedCheck {
            packets: 120_000,
            late_over_1ms: 600,
            late_share: 0.005,
            worst_p99_ms: 0.9,
            worst_p999_ms: 2.6,
            max_ms: 4.1,
            cpu_steal: Some(0.031),
            disrupted: true,
        };
        s.testbed = Some(l4s_metrics::summary::TestbedCheck {
            disrupted: false,
            ..check.clone()
        });
        assert_eq!(codes(&verdict(&s, None)), Vec::<&str>::new());
        s.testbed = Some(check);
        let v = verdict(&s, None);
        assert_eq!(codes(&v), vec!["testbed-timing"]);
        assert_eq!(v.level, Level::Warn);
        let t = &v.warnings[0].text;
        for part in [
            "600 of 120 000",
            "0.50 %",
            "p99.9 2.60 ms",
            "worst 4.10 ms",
            "3.1 % of the CPU time (steal)",
        ] {
            assert!(t.contains(part), "{part:?} in {t}");
        }
        // The finding itself is unchanged.
        assert!(v.headline.starts_with("L4S working"), "{}", v.headline);
    }

    #[test]
    fn fifo_bottleneck_fires_no_l4s_marking() {
        let mut s = synth::healthy_dualpi2();
        for f in &mut s.flows {
            f.ce_packets = 0;
            f.ce_fraction = 0.0;
            f.owd_ms.p99 = 129.0;
        }
        for c in &mut s.classes {
            c.owd_ms.p99 = 129.0;
        }
        s.queues[0].aqm = "fifo".into();
        s.queues[0].subqueues.clear();
        let v = verdict(&s, None);
        assert_eq!(codes(&v), vec!["no-l4s-marking"]);
        assert_eq!(v.level, Level::Bad);
        assert!(
            v.warnings[0]
                .text
                .contains("'prague' OWD p99 129 ms vs base 10.0 ms (+119 ms)"),
            "{}",
            v.warnings[0].text
        );
        assert!(v.headline.starts_with("L4S not working"), "{}", v.headline);
        // Just under the tolerance (5 ms + 2 × 0.12 ms at 100 Mbit/s): silent.
        let mut s2 = synth::healthy_dualpi2();
        s2.flows[0].ce_packets = 0;
        s2.flows[0].owd_ms.p99 = 10.0 + 5.2;
        assert!(!verdict(&s2, None).has("no-l4s-marking"));
        s2.flows[0].owd_ms.p99 = 10.0 + 5.3;
        assert!(verdict(&s2, None).has("no-l4s-marking"));
    }

    #[test]
    fn classic_ecn_aqm_fires_marked_but_queued() {
        let mut s = synth::healthy_dualpi2();
        s.flows[0].owd_ms.p99 = 22.6;
        s.classes[0].owd_ms.p99 = 22.6;
        let v = verdict(&s, None);
        assert_eq!(codes(&v), vec!["l4s-marked-but-queued"]);
        assert!(
            v.warnings[0].text.contains("'prague' +12.6 ms at p99"),
            "{}",
            v.warnings[0].text
        );
        assert_eq!(v.level, Level::Warn);
        assert!(v.headline.starts_with("L4S degraded"));
    }

    #[test]
    fn idle_link_fires_not_saturated() {
        let mut s = synth::healthy_dualpi2();
        s.queues[0].utilization = 0.79;
        let v = verdict(&s, None);
        assert_eq!(codes(&v), vec!["link-not-saturated"]);
        assert!(
            v.warnings[0].text.contains("'bottleneck', was busy 79 %"),
            "{}",
            v.warnings[0].text
        );
        s.queues[0].utilization = 0.80;
        assert!(!verdict(&s, None).has("link-not-saturated"));
    }

    #[test]
    fn bleaching_fires_on_losses_without_marks_and_on_empty_l_queue() {
        let mut s = synth::healthy_dualpi2();
        s.flows[0].ce_packets = 0;
        s.flows[0].ce_fraction = 0.0;
        s.flows[0].lost_packets = 120;
        let v = verdict(&s, None);
        assert_eq!(codes(&v), vec!["ecn-bleached"]);
        assert!(v.warnings[0].text.contains("'prague' lost 120 packets, 0 CE"));
        assert_eq!(v.level, Level::Bad);
        // Same flow without losses and with low delay is not evidence of bleaching.
        s.flows[0].lost_packets = 0;
        assert!(!verdict(&s, None).has("ecn-bleached"));
        // Under a FIFO (no AQM that should mark), losses without CE are expected.
        s.flows[0].lost_packets = 120;
        s.queues[0].aqm = "fifo".into();
        assert!(!verdict(&s, None).has("ecn-bleached"));

        let mut s = synth::healthy_dualpi2();
        s.queues[0].subqueues.get_mut("L").unwrap().enqueued_packets = 0;
        let v = verdict(&s, None);
        assert_eq!(codes(&v), vec!["ecn-bleached"]);
        assert!(v.warnings[0].text.contains("put no packet in its L4S (L) queue"));
    }

    #[test]
    fn idle_l4s_path_is_not_called_broken() {
        let mut s = synth::healthy_dualpi2();
        for f in &mut s.flows {
            f.ce_packets = 0;
            f.ce_fraction = 0.0;
        }
        s.queues[0].utilization = 0.3;
        let v = verdict(&s, None);
        assert!(
            v.headline
                .starts_with("No queue built, so no CE marks were needed: L4S p99 10.4 ms"),
            "{}",
            v.headline
        );
        assert_eq!(codes(&v), vec!["link-not-saturated"]);
        assert_eq!(v.level, Level::Warn);
    }

    #[test]
    fn headline_uses_the_busiest_queue() {
        let mut s = synth::healthy_dualpi2();
        s.queues.swap(0, 1); // the reverse queue first, as on a multi-hop path
        let v = verdict(&s, None);
        assert!(
            v.headline
                .contains("(queue p99: L 0.233 ms, C 19.3 ms) at 100 % utilisation"),
            "{}",
            v.headline
        );
        s.queues[1].utilization = 0.024712; // equal utilisations: the first queue
        assert!(verdict(&s, None).headline.ends_with("at 2 % utilisation"));
    }

    #[test]
    fn ce_saturation_fires() {
        let mut s = synth::healthy_dualpi2();
        s.flows[0].ce_fraction = 0.97;
        let v = verdict(&s, None);
        assert_eq!(codes(&v), vec!["ce-saturated"]);
    }

    #[test]
    fn starvation_fires_on_ratio_and_on_share() {
        let mut s = synth::healthy_dualpi2();
        s.flows[0].throughput_bps = 81e6;
        s.flows[1].throughput_bps = 19e6; // ratio 4.26
        let v = verdict(&s, None);
        assert_eq!(codes(&v), vec!["l4s-starves-classic"]);
        assert!(
            v.warnings[0].text.contains("(ratio 4.3, limit 4)"),
            "{}",
            v.warnings[0].text
        );
        s.flows[0].throughput_bps = 79e6;
        s.flows[1].throughput_bps = 21e6; // ratio 3.76
        assert!(!verdict(&s, None).has("l4s-starves-classic"));
        // Two Prague flows at 40 Mbit/s, CUBIC flows at 18 and 2 Mbit/s: the ratio is exactly 4
        // (not above), but one classic flow has 8 % of the fair share of 25 Mbit/s.
        let mut s = synth::healthy_dualpi2();
        let mut p = s.flows[0].clone();
        p.name = "prague-2".into();
        s.flows.push(p);
        let mut c = s.flows[1].clone();
        c.name = "cubic-2".into();
        s.flows.push(c);
        s.flows[0].throughput_bps = 40e6;
        s.flows[4].throughput_bps = 40e6;
        s.flows[1].throughput_bps = 18e6;
        s.flows[5].throughput_bps = 2e6;
        let v = verdict(&s, None);
        assert_eq!(codes(&v), vec!["l4s-starves-classic"]);
        let t = &v.warnings[0].text;
        assert!(t.contains("(ratio 4.0, limit 4)"), "{t}");
        assert!(
            t.contains(
                "Starved below 10 % of the fair share 25.00 Mbit/s: 'cubic-2' 2.00 Mbit/s (8 % of the fair share)"
            ),
            "{t}"
        );
        // The mirror case.
        let mut s = synth::healthy_dualpi2();
        s.flows[0].throughput_bps = 10e6;
        s.flows[1].throughput_bps = 90e6;
        assert_eq!(codes(&verdict(&s, None)), vec!["classic-starves-l4s"]);
    }

    #[test]
    fn few_samples_say_which_percentile_and_series() {
        let mut s = synth::healthy_dualpi2();
        s.flows[2].owd_ms.count = 3200; // probe: p99.99 unsupported, p99.9 fine
        s.flows[3].owd_ms.count = 800; // probe: p99.9 unsupported too
        let v = verdict(&s, None);
        assert_eq!(codes(&v), vec!["few-samples-p999", "few-samples-p9999"]);
        assert!(
            v.warnings[0].text.contains("OWD of 'probe-classic' (800)"),
            "{}",
            v.warnings[0].text
        );
        assert!(
            v.warnings[1].text.contains("OWD of 'probe-l4s' (3 200)"),
            "{}",
            v.warnings[1].text
        );
        assert!(v.warnings[1]
            .text
            .starts_with("p99.99 rests on fewer than 10 000 samples"));
        assert_eq!(v.level, Level::Good, "a statistical caveat does not change the verdict");
    }

    #[test]
    fn snapshots_add_interval_detail() {
        let mut s = synth::healthy_dualpi2();
        s.queues[0].utilization = 0.5;
        let snaps = synth::snapshots(&s, 60.0, 0.1, 7);
        let v = verdict(&s, Some(&snaps));
        let t = &v.warnings[0].text;
        assert!(t.contains("snapshot intervals"), "{t}");
    }

    #[test]
    fn degenerate_summaries_do_not_panic() {
        let mut s = synth::healthy_dualpi2();
        s.flows.clear();
        s.classes.clear();
        s.queues.clear();
        let v = verdict(&s, None);
        assert_eq!(v.level, Level::Bad);
        let mut s = synth::healthy_dualpi2();
        for f in &mut s.flows {
            f.throughput_bps = 0.0;
            f.base_rtt_ms = f64::NAN;
            f.received_packets = 0;
        }
        s.queues[0].rate_bps = 0;
        s.queues[0].utilization = f64::NAN;
        let _ = verdict(&s, None);
    }

    #[test]
    fn late_media_frames_are_reported() {
        let mut s = crate::synth::healthy_dualpi2();
        assert!(!verdict(&s, None).has("media-frames-late"));
        let mut m = l4s_metrics::summary::MediaSummary {
            profile: "cloud-gaming".into(),
            controller: "scream".into(),
            l4s: true,
            fps: 60.0,
            frames_sent: 3000,
            frames_complete: 2990,
            frames_late: 30,
            frames_incomplete: 10,
            bad_frame_fraction: 40.0 / 3000.0,
            frame_delay_ms: s.flows[0].owd_ms,
            deadline_ms: 16.7,
            stall_time_s: 0.0,
            stall_fraction: 0.0,
            stall_gap_ms: 100.0,
            received_fps: 59.8,
            target_bitrate_mean_bps: 2e7,
            target_bitrate_min_bps: 1e7,
            target_bitrate_max_bps: 3e7,
            frames_discarded: 0,
            feedback_reports: 3000,
            feedback_malformed: 0,
        };
        s.flows[0].media = Some(m.clone());
        assert!(!verdict(&s, None).has("media-frames-late"), "1.3 % bad frames is fine");
        m.frames_late = 400;
        m.bad_frame_fraction = 410.0 / 3000.0;
        s.flows[0].media = Some(m.clone());
        let v = verdict(&s, None);
        let w = v
            .warnings
            .iter()
            .find(|w| w.code == "media-frames-late")
            .expect("warned");
        assert!(w.text.contains("13.7 %"), "{}", w.text);
        m.bad_frame_fraction = 0.0;
        m.stall_fraction = 0.05;
        s.flows[0].media = Some(m);
        assert!(verdict(&s, None).has("media-frames-late"), "a 5 % stall is reported");
    }

    #[test]
    fn validation_failure_is_reported() {
        let mut s = crate::synth::healthy_dualpi2();
        assert!(!verdict(&s, None).has("ecn-validation-failed"));
        s.flows[0].ecn_validation = "failed".into();
        s.flows[0].ecn_failed_at_s = Some(10.016);
        s.flows[0].ecn_failure = Some("bleached".into());
        let v = verdict(&s, None);
        assert!(v.has("ecn-validation-failed"));
        let w = v.warnings.iter().find(|w| w.code == "ecn-validation-failed").unwrap();
        assert!(w.text.contains("at 10.016 s (bleached)"), "{}", w.text);
        assert_eq!(v.level, Level::Bad);
    }
}
