//! The verdict: one headline and warnings that explain themselves, computed from
//! `summary.json` (and, for extra detail, the snapshot time series).
//!
//! The warnings come from a table of rules, run in order; each rule is a small function
//! that checks one thing, and the warnings appear in the order of the table. Every rule
//! uses only what the results contain, and its thresholds are the constants below.
//! Definitions used by the rules:
//!
//! * **L4S flow**: `class == "L4S"` (its data is sent ECT(1)); **classic flow**: otherwise.
//! * **bulk flow**: a congestion-controlled flow (`kind != "probe"` and `cc != "none"`);
//!   probes are paced and do not compete for capacity.
//! * **base one-way delay**: `base_rtt_ms / 2`. This assumes a symmetric path (true for
//!   the dumbbell and multi-hop topologies the simulator builds).
//! * **queueing excess** of a flow: `owd_ms.p99 - base_rtt_ms / 2`.
//! * **tolerance**: [`DELAY_EXCESS_MS`] plus the serialisation time of two 1500-byte packets at
//!   the slowest queue's rate, so slow links are not mistaken for standing queues.
//! * **bottleneck**: the queue with the highest utilisation ([`bottleneck`]).
//!
//! The rules, in the order they run (warning code, severity: when it fires). "Enough
//! packets" means at least [`MIN_PACKETS`] arrivals.
//!
//! 1. `flow-silent`, warn: a flow delivered no packet in the statistics window.
//! 2. `no-l4s-marking`, bad: an L4S flow with enough packets got no CE mark while its
//!    queueing excess is above the tolerance: the queue where the delay builds is not an
//!    L4S-aware AQM (RFC 9332).
//! 3. `l4s-marked-but-queued`, warn: an L4S flow with enough packets got CE marks but its
//!    queueing excess is above the tolerance (an RFC 3168 AQM, or an overloaded L queue).
//! 4. `ecn-bleached`, bad: the path has a DualPI2 queue, and an L4S flow that sends
//!    ECT(1) and has enough packets lost some but got no CE mark.
//! 5. `ecn-bleached`, bad, once per queue: a DualPI2 queue that dequeued at least
//!    [`MIN_PACKETS`] put no packet in its L queue although the L4S flows sent ECT(1)
//!    delivered at least [`MIN_PACKETS`] between them.
//! 6. `ecn-validation-failed`, bad: a sender's own ECN validation failed (RFC 9000
//!    §13.4.2, RFC 9331 §4).
//! 7. `media-frames-late`, warn: a media flow that sent at least 100 frames had 10 % or
//!    more of them late or incomplete, or stalled 2 % or more of the time.
//! 8. `media-at-floor`, warn: a media flow's encoder target sat at its minimum bitrate for
//!    [`MEDIA_FLOOR_TIME`] or more of the window.
//! 9. `ce-saturated`, warn: an L4S flow with enough packets had at least
//!    [`CE_SATURATED`] of them arrive CE-marked.
//! 10. `link-not-saturated`, warn: the bottleneck's utilisation is below
//!     [`MIN_UTILIZATION`].
//! 11. `l4s-starves-classic`, warn: with bulk flows of both classes, the mean L4S per-flow
//!     throughput is more than [`STARVE_RATIO`] times the classic one, or a classic bulk
//!     flow has less than [`STARVE_SHARE`] of the fair share (RFC 9332 §2.4).
//! 12. `classic-starves-l4s`, warn: the mirror case.
//! 13. `flow-starved`, warn: without bulk flows of both classes, a capacity-seeking flow
//!     (`summary.fairness`) has less than [`STARVE_SHARE`] of an equal share.
//! 14. `few-samples-p999`, note: a shown p99.9 rests on fewer than [`SAMPLES_P999`]
//!     samples.
//! 15. `few-samples-p9999`, note: a shown p99.99 rests on fewer than [`SAMPLES_P9999`]
//!     samples (and its p99.9 on enough).
//! 16. `testbed-timing`, warn: a live run's own timing check says the host held the
//!     testbed back.
//! 17. `incomplete`, warn: the run was stopped before its end (Ctrl-C); its figures cover
//!     the statistics window up to the time reached.
//!
//! The headline sums up the L4S and classic one-way delay p99 at the bottleneck ("L4S
//! working", "L4S degraded: marked but queued", "L4S not working: ECT(1) traffic got no
//! CE marks while delay built", "No queue built, so no CE marks were needed", "Classic
//! traffic only", or "No traffic arrived in the statistics window"), with a level of its
//! own. The verdict's level is that level raised by every `warn` or `bad` warning; a
//! `note` does not change it.

use crate::fmt::{count, ms, pct, rate};
use crate::Snapshots;
use l4s_metrics::summary::{FlowSummary, QueueSummary, Summary};
use l4s_metrics::Percentiles;
use std::collections::HashSet;
use std::ops::Range;

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
/// Fraction of the window a media encoder's target may sit at its minimum bitrate before
/// the flow counts as held at its floor.
pub const MEDIA_FLOOR_TIME: f64 = 0.25;
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
    /// The verdict as `summary.json` records it.
    pub fn to_summary(&self) -> l4s_metrics::summary::VerdictSummary {
        l4s_metrics::summary::VerdictSummary {
            level: self.level.as_str().to_string(),
            headline: self.headline.clone(),
            findings: self
                .warnings
                .iter()
                .map(|w| l4s_metrics::summary::Finding {
                    code: w.code.to_string(),
                    severity: w.severity.as_str().to_string(),
                    text: w.text.clone(),
                })
                .collect(),
        }
    }

    pub fn has(&self, code: &str) -> bool {
        self.warnings.iter().any(|w| w.code == code)
    }
}

pub fn is_l4s(f: &FlowSummary) -> bool {
    f.class == "L4S"
}

/// A flow that takes what capacity it can get (`l4s_metrics::summary::seeks_capacity`: a
/// transport, a bulk transfer, or real-time media below its encoder's maximum), as the
/// fairness figures count them: the starvation rules compare these only. Probes and
/// constant-rate streams send at a fixed rate, and request-driven applications (sync,
/// request-response, web, query) at their application's pace: a DNS-like query flow at
/// 120 kbit/s is not starved.
pub fn is_bulk(f: &FlowSummary) -> bool {
    l4s_metrics::summary::seeks_capacity(f) && f.cc != "none"
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

/// A flow's name in quotes, as the warnings name flows.
fn quoted(f: &FlowSummary) -> String {
    format!("'{}'", f.name)
}

fn names(fs: &[&FlowSummary]) -> String {
    let v: Vec<String> = fs.iter().map(|f| quoted(f)).collect();
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

/// What every rule may look at: the run's results and the facts several rules share,
/// worked out once per verdict.
struct Context<'a> {
    /// The run's `summary.json`.
    s: &'a Summary,
    /// The snapshot time series, when the caller has them. They add per-interval detail
    /// to a warning, never a warning of their own.
    snaps: Option<&'a Snapshots>,
    /// Queueing excess above which "delay builds", ms ([`tolerance_ms`]).
    tol: f64,
    /// The statistics window, `(warmup_s, duration_s)`: snapshot intervals outside it
    /// are not counted.
    window: (f64, f64),
    /// The L4S flows ([`is_l4s`]), in summary order.
    l4s: Vec<&'a FlowSummary>,
    /// The bulk flows of both classes and their shares, for the two starvation rules
    /// ([`bulk_shares`]).
    bulk: Option<BulkShares<'a>>,
}

impl<'a> Context<'a> {
    fn new(s: &'a Summary, snaps: Option<&'a Snapshots>) -> Context<'a> {
        Context {
            s,
            snaps,
            tol: tolerance_ms(s),
            window: (s.scenario.warmup_s, s.scenario.duration_s),
            l4s: s.flows.iter().filter(|f| is_l4s(f)).collect(),
            bulk: bulk_shares(&s.flows),
        }
    }

    /// The L4S flows with enough packets for the ECN rules to judge ([`enough_packets`]),
    /// in summary order.
    fn judged_l4s(&self) -> impl Iterator<Item = &'a FlowSummary> + '_ {
        self.l4s.iter().copied().filter(|f| enough_packets(f))
    }
}

/// How a rule is run.
#[derive(Clone, Copy)]
enum Check {
    /// Once per verdict: at most one warning.
    Once(fn(&Context) -> Option<Warning>),
    /// Once per queue, in summary order: at most one warning per queue.
    EachQueue(fn(&Context, &QueueSummary) -> Option<Warning>),
}

/// One row of [`RULES`].
struct Rule {
    /// The rule's function, by name (for messages).
    name: &'static str,
    /// The code of every warning it gives.
    code: &'static str,
    check: Check,
}

impl Rule {
    const fn once(name: &'static str, code: &'static str, f: fn(&Context) -> Option<Warning>) -> Rule {
        Rule {
            name,
            code,
            check: Check::Once(f),
        }
    }

    const fn each_queue(
        name: &'static str,
        code: &'static str,
        f: fn(&Context, &QueueSummary) -> Option<Warning>,
    ) -> Rule {
        Rule {
            name,
            code,
            check: Check::EachQueue(f),
        }
    }

    /// The rule's warnings for this run, in order.
    fn run(&self, cx: &Context) -> Vec<Warning> {
        let found: Vec<Warning> = match self.check {
            Check::Once(f) => f(cx).into_iter().collect(),
            Check::EachQueue(f) => cx.s.queues.iter().filter_map(|q| f(cx, q)).collect(),
        };
        debug_assert!(
            found.iter().all(|w| w.code == self.code),
            "rule {} gives only {} warnings",
            self.name,
            self.code
        );
        found
    }
}

/// The rules, in the order their warnings appear (the module documentation lists them).
const RULES: &[Rule] = &[
    Rule::once("flow_silent", "flow-silent", flow_silent),
    Rule::once("no_l4s_marking", "no-l4s-marking", no_l4s_marking),
    Rule::once("l4s_marked_but_queued", "l4s-marked-but-queued", l4s_marked_but_queued),
    Rule::once("ect1_lost_without_ce", "ecn-bleached", ect1_lost_without_ce),
    Rule::each_queue("dualpi2_l_queue_empty", "ecn-bleached", dualpi2_l_queue_empty),
    Rule::once("ecn_validation_failed", "ecn-validation-failed", ecn_validation_failed),
    Rule::once("media_frames_late", "media-frames-late", media_frames_late),
    Rule::once("media_at_floor", "media-at-floor", media_at_floor),
    Rule::once("ce_saturated", "ce-saturated", ce_saturated),
    Rule::once("link_not_saturated", "link-not-saturated", link_not_saturated),
    Rule::once("l4s_starves_classic", "l4s-starves-classic", l4s_starves_classic),
    Rule::once("classic_starves_l4s", "classic-starves-l4s", classic_starves_l4s),
    Rule::once("flow_starved", "flow-starved", flow_starved),
    Rule::once("few_samples_p999", "few-samples-p999", few_samples_p999),
    Rule::once("few_samples_p9999", "few-samples-p9999", few_samples_p9999),
    Rule::once("testbed_timing", "testbed-timing", testbed_timing),
    Rule::once("incomplete", "incomplete", incomplete),
];

/// Compute the verdict. `snaps`, when given, adds per-interval detail to some warnings.
pub fn verdict(s: &Summary, snaps: Option<&Snapshots>) -> Verdict {
    let cx = Context::new(s, snaps);
    let w: Vec<Warning> = RULES.iter().flat_map(|r| r.run(&cx)).collect();
    let (headline, hl) = headline(s, cx.tol);
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

/// Enough arrivals for the ECN rules to judge a flow ([`MIN_PACKETS`]).
fn enough_packets(f: &FlowSummary) -> bool {
    f.received_packets >= MIN_PACKETS
}

/// The shape of most rules: a warning about a list of findings. `None` when `items` is
/// empty; else a warning whose text is `text` applied to the items, each put in words by
/// `describe`, joined by [`list`].
fn listed<T>(
    code: &'static str,
    severity: Severity,
    items: impl IntoIterator<Item = T>,
    describe: impl FnMut(T) -> String,
    text: impl FnOnce(String) -> String,
) -> Option<Warning> {
    let detail: Vec<String> = items.into_iter().map(describe).collect();
    if detail.is_empty() {
        return None;
    }
    Some(Warning {
        code,
        severity,
        text: text(list(&detail)),
    })
}

/// `flow-silent`: flows that delivered no packet in the statistics window. Their
/// statistics are empty, which usually means the flow's start/stop times or the warm-up
/// do not fit the run, not that the network lost everything.
fn flow_silent(cx: &Context) -> Option<Warning> {
    listed(
        "flow-silent",
        Severity::Warn,
        cx.s.flows.iter().filter(|f| f.received_packets == 0),
        quoted,
        |silent| {
            format!(
                "{} delivered no packet during the statistics window ({:.1}–{:.1} s): their numbers are empty. \
                 Check the flow's start/stop times and that the warm-up is shorter than the run.",
                silent, cx.window.0, cx.window.1
            )
        },
    )
}

/// `no-l4s-marking`: ECT(1) traffic unmarked while delay builds, i.e. L4S flows with
/// enough packets, no CE mark and a queueing excess above the tolerance. An L4S-aware
/// AQM (DualPI2, RFC 9332) marks ECT(1) packets once they queue for about 1 ms, so the
/// queue where the delay builds has no L4S support (a FIFO, or an AQM that drops), or the
/// L4S AQM is not the bottleneck. With snapshots, says in how many intervals of the window
/// the flow was delayed with no CE.
fn no_l4s_marking(cx: &Context) -> Option<Warning> {
    listed(
        "no-l4s-marking",
        Severity::Bad,
        cx.judged_l4s().filter(|f| f.ce_packets == 0 && excess(f) > cx.tol),
        |f| {
            let mut d = format!(
                "'{}' OWD p99 {} ms vs base {} ms (+{} ms)",
                f.name,
                ms(f.owd_ms.p99),
                ms(base_owd(f)),
                ms(excess(f))
            );
            if let Some(sr) = cx.snaps.and_then(|sn| sn.flow(&f.name)) {
                let (n, of) = intervals_unmarked_with_delay(sr, base_owd(f) + cx.tol, cx.window);
                if of > 0 {
                    d.push_str(&format!(", {n} of {of} snapshot intervals delayed with no CE"));
                }
            }
            d
        },
        |unmarked| {
            format!(
                "No CE marks on ECT(1) traffic while delay builds: {}. An L4S-aware AQM (DualPI2, RFC 9332) \
                 marks ECT(1) packets once they queue for about 1 ms, so the queue where the delay builds \
                 does not support L4S (a FIFO, or an AQM that drops), or the L4S AQM is not the bottleneck.",
                unmarked
            )
        },
    )
}

/// `l4s-marked-but-queued`: ECT(1) traffic marked but still queued like classic traffic,
/// i.e. L4S flows with enough packets, CE marks and a queueing excess above the
/// tolerance. The marking AQM treats ECT(1) like ECT(0) with a classic delay target (an
/// RFC 3168 AQM such as fq-codel or PIE with ECN), or unresponsive traffic overloads the
/// L queue.
fn l4s_marked_but_queued(cx: &Context) -> Option<Warning> {
    listed(
        "l4s-marked-but-queued",
        Severity::Warn,
        cx.judged_l4s().filter(|f| f.ce_packets > 0 && excess(f) > cx.tol),
        |f| {
            format!(
                "'{}' +{} ms at p99 with {} CE",
                f.name,
                ms(excess(f)),
                pct(f.ce_fraction)
            )
        },
        |queued| {
            format!(
                "ECT(1) traffic is CE-marked but still queues like classic traffic: {} (more than {} ms above the \
                 base one-way delay). The marking AQM treats ECT(1) like ECT(0) with a classic delay target (an RFC 3168 \
                 AQM such as fq-codel or PIE with ECN), or the L queue is overloaded by unresponsive traffic.",
                queued,
                ms(cx.tol)
            )
        },
    )
}

/// Whether queue `q` carries flow `f`'s data, as its `data_flows` says; `None` where it
/// does not say (one of several queues of a link, or a summary written before the field).
fn carries(q: &QueueSummary, f: &FlowSummary) -> Option<bool> {
    q.data_flows.as_ref().map(|d| d.contains(&f.name))
}

/// `ecn-bleached` (losses): ECN bleached or remarked before a DualPI2 queue. L4S flows
/// sent ECT(1) with enough packets that lost packets but got no CE mark while their data
/// crossed a DualPI2 queue: DualPI2 marks ECT(1) long before it drops, so their ECN field
/// was bleached to Not-ECT or remarked to ECT(0) on the way (a classifier, tunnel or
/// middlebox). Without a DualPI2 queue, losses without CE are what a FIFO does. A queue
/// that does not say which flows cross it (`data_flows` absent: one of several queues of
/// a link, or a summary written before the field) counts as crossed by every flow.
fn ect1_lost_without_ce(cx: &Context) -> Option<Warning> {
    let dualpi2: Vec<&QueueSummary> = cx.s.queues.iter().filter(|q| q.aqm == "dualpi2").collect();
    if dualpi2.is_empty() {
        return None;
    }
    let crosses_dualpi2 = |f: &FlowSummary| dualpi2.iter().any(|q| carries(q, f) != Some(false));
    let flagged: Vec<&FlowSummary> = cx
        .judged_l4s()
        .filter(|f| f.ecn == "ect1" && f.ce_packets == 0 && f.lost_packets > 0 && crosses_dualpi2(f))
        .collect();
    // Every flagged flow is listed in a DualPI2 queue's `data_flows`: no "if" left.
    let known = flagged
        .iter()
        .all(|f| dualpi2.iter().any(|q| carries(q, f) == Some(true)));
    listed(
        "ecn-bleached",
        Severity::Bad,
        flagged,
        |f| format!("'{}' lost {} packets, 0 CE", f.name, count(f.lost_packets)),
        |lost_unmarked| {
            if known {
                format!(
                    "ECT(1) flows lost packets but none arrived CE-marked although their data crosses a DualPI2 \
                     queue, which marks ECT(1) long before it drops: {}. Their ECN field was bleached to Not-ECT \
                     or remarked to ECT(0) before it (a classifier, tunnel or middlebox).",
                    lost_unmarked
                )
            } else {
                format!(
                    "ECT(1) flows lost packets but none arrived CE-marked although the path has a DualPI2 queue, \
                     which marks ECT(1) long before it drops: {}. If these flows cross that queue, their ECN field \
                     was bleached to Not-ECT or remarked to ECT(0) before it (a classifier, tunnel or middlebox).",
                    lost_unmarked
                )
            }
        },
    )
}

/// `ecn-bleached` (empty L queue), checked for each queue `q`: a DualPI2 queue that
/// dequeued at least [`MIN_PACKETS`] classified none of them into its L4S (L) queue,
/// although the L4S flows sent ECT(1) whose data crosses it delivered at least
/// [`MIN_PACKETS`] between them. DualPI2 classifies on the ECT(1) codepoint (RFC 9332
/// §2.3), so their codepoint was remarked before it. A queue that only the flows'
/// feedback crosses (the reverse direction of a bottleneck) is not judged. A queue that
/// does not say which flows cross it (`data_flows` absent: one of several queues of a
/// link, or a summary written before the field) is judged against every L4S flow, and
/// the warning says so.
fn dualpi2_l_queue_empty(cx: &Context, q: &QueueSummary) -> Option<Warning> {
    if q.aqm != "dualpi2" {
        return None;
    }
    let lq = q.subqueues.get("L")?;
    // The names looked up once each (a queue may carry 10 000 flows): as `carries`.
    let listed: Option<HashSet<&str>> = q.data_flows.as_ref().map(|d| d.iter().map(String::as_str).collect());
    let crossing: Vec<&FlowSummary> = cx
        .l4s
        .iter()
        .copied()
        .filter(|f| f.ecn == "ect1" && listed.as_ref().is_none_or(|l| l.contains(f.name.as_str())))
        .collect();
    let ect1_sent: u64 = crossing.iter().map(|f| f.received_packets).fold(0, u64::saturating_add);
    let fires = lq.enqueued_packets == 0 && q.dequeued_packets >= MIN_PACKETS && ect1_sent >= MIN_PACKETS;
    if !fires {
        return None;
    }
    let text = if q.data_flows.is_some() {
        format!(
            "DualPI2 queue '{}' put no packet in its L4S (L) queue, although {} delivered {} ECT(1) packets \
             across it: their ECT(1) codepoint was remarked before it.",
            q.name,
            names(&crossing),
            count(ect1_sent)
        )
    } else {
        format!(
            "DualPI2 queue '{}' put no packet in its L4S (L) queue, although {} delivered {} ECT(1) \
             packets. If they cross this queue, their ECT(1) codepoint was remarked before it.",
            q.name,
            names(&crossing),
            count(ect1_sent)
        )
    };
    Some(Warning {
        code: "ecn-bleached",
        severity: Severity::Bad,
        text,
    })
}

/// `ecn-validation-failed`: a sender's own ECN validation failed; the warning says when
/// and why. Such a sender stops sending ECT(1) and falls back to classic, loss-based
/// congestion control, because its feedback showed the path rewriting the ECN field, as
/// RFC 9000 §13.4.2 and RFC 9331 §4 ask a sender to detect.
fn ecn_validation_failed(cx: &Context) -> Option<Warning> {
    listed(
        "ecn-validation-failed",
        Severity::Bad,
        cx.s.flows.iter().filter(|f| f.ecn_validation == "failed"),
        |f| {
            format!(
                "'{}' at {} s ({})",
                f.name,
                f.ecn_failed_at_s
                    .map(|t| format!("{t:.3}"))
                    .unwrap_or_else(|| "?".into()),
                f.ecn_failure.as_deref().unwrap_or("unknown")
            )
        },
        |failed| {
            format!(
                "ECN validation failed, so these senders stopped sending ECT(1) and now behave as classic, loss-based \
                 flows: {}. Their feedback showed the path rewriting the ECN field (bleached: ECT arrived as Not-ECT; \
                 remarked: ECT(1) arrived as ECT(0); all-ce: every packet arrived CE; not-ect1: the receiver saw a \
                 packet that was neither ECT(1) nor CE), as RFC 9000 §13.4.2 and RFC 9331 §4 ask a sender to detect.",
                failed
            )
        },
    )
}

/// `media-frames-late`: real-time media whose users would notice. A media flow that sent
/// at least `MIN_FRAMES` (100) frames had `MEDIA_BAD_FRAMES` (10 %) or more of them late or
/// incomplete, or stalled `MEDIA_STALL` (2 %) or more of the time.
fn media_frames_late(cx: &Context) -> Option<Warning> {
    listed(
        "media-frames-late",
        Severity::Warn,
        cx.s.flows
            .iter()
            .filter_map(|f| f.media.as_ref().map(|m| (f, m)))
            .filter(|(_, m)| {
                m.frames_sent >= MIN_FRAMES
                    && (m.bad_frame_fraction >= MEDIA_BAD_FRAMES || m.stall_fraction >= MEDIA_STALL)
            }),
        |(f, m)| {
            format!(
                "'{}' {} of frames late or incomplete (frame delay p99 {} ms), stalled {} of the time",
                f.name,
                pct(m.bad_frame_fraction),
                crate::fmt::ms_fine(m.frame_delay_ms.p99),
                pct(m.stall_fraction)
            )
        },
        |hurt| {
            format!(
                "Real-time media is suffering: {}. A frame is late when it completes more than its deadline (one frame \
                 interval by default) after its expected display time; a stall is a gap of more than 100 ms with no new \
                 frame.",
                hurt
            )
        },
    )
}

/// `media-at-floor`: a media flow's encoder target sat at the profile's minimum bitrate
/// for [`MEDIA_FLOOR_TIME`] or more of the window: its rate controller got no more than the
/// floor, from congestion or from a competing flow taking the capacity.
fn media_at_floor(cx: &Context) -> Option<Warning> {
    listed(
        "media-at-floor",
        Severity::Warn,
        cx.s.flows
            .iter()
            .filter_map(|f| f.media.as_ref().map(|m| (f, m)))
            .filter(|(_, m)| m.min_bitrate_bps > 0.0 && m.time_at_min_fraction >= MEDIA_FLOOR_TIME),
        |(f, m)| {
            format!(
                "'{}' {} of the window at {}",
                f.name,
                pct(m.time_at_min_fraction),
                rate(m.min_bitrate_bps)
            )
        },
        |held| {
            format!(
                "Media held at its encoder's minimum bitrate: {}. The rate controller got no more than its floor: the \
                 bottleneck was congested, or another flow took the capacity (see each flow's share of an equal share \
                 in summary.json).",
                held
            )
        },
    )
}

/// `ce-saturated`: nearly every L4S packet arrives CE-marked ([`CE_SATURATED`] or more of
/// a flow with enough packets), where a healthy L4S flow sees a few percent. Something
/// sets CE on every packet (remarking), or the L queue is overloaded (unresponsive ECT(1)
/// traffic, or capacity far below the offered load).
fn ce_saturated(cx: &Context) -> Option<Warning> {
    listed(
        "ce-saturated",
        Severity::Warn,
        cx.judged_l4s().filter(|f| f.ce_fraction >= CE_SATURATED),
        |f| format!("'{}' {} CE", f.name, pct(f.ce_fraction)),
        |saturated| {
            format!(
                "Nearly every ECT(1) packet arrived CE-marked: {}. A healthy L4S flow sees a few percent. Either \
                 something sets CE on every packet (remarking) or the L queue is overloaded (unresponsive ECT(1) traffic, \
                 or capacity far below the offered load).",
                saturated
            )
        },
    )
}

/// `link-not-saturated`: the bottleneck was busy less than [`MIN_UTILIZATION`] of the
/// window, so the latency measured is not latency under load: the senders were limited
/// elsewhere or did not ramp up. With snapshots, says in how many intervals it was
/// at least 95 % busy.
fn link_not_saturated(cx: &Context) -> Option<Warning> {
    let busiest = bottleneck(cx.s).filter(|q| q.utilization < MIN_UTILIZATION)?;
    let mut text = format!(
        "No link was saturated: the busiest queue, '{}', was busy {} of the statistics window (< {}).",
        busiest.name,
        pct0(busiest.utilization),
        pct0(MIN_UTILIZATION)
    );
    if let Some(sr) = cx.snaps.and_then(|sn| sn.queue(&busiest.name)) {
        let (n, of) = intervals_busy(sr, 0.95, cx.window);
        if of > 0 {
            text.push_str(&format!(" It was ≥ 95 % busy in {n} of {of} snapshot intervals."));
        }
    }
    text.push_str(
        " Latency here is not latency under load: the senders were limited elsewhere (application, receive \
         window, an upstream link) or the run is too short for them to ramp up.",
    );
    Some(Warning {
        code: "link-not-saturated",
        severity: Severity::Warn,
        text,
    })
}

/// The bulk flows of both classes and their throughput, for the starvation rules.
struct BulkShares<'a> {
    /// Bulk L4S flows and bulk classic flows, in summary order.
    l4s: Vec<&'a FlowSummary>,
    classic: Vec<&'a FlowSummary>,
    /// Mean per-flow throughput of each class, bit/s.
    mean_l4s: f64,
    mean_classic: f64,
    /// Throughput of all bulk flows, and its equal share per bulk flow, bit/s.
    total: f64,
    fair: f64,
}

/// The bulk flows of `flows` by class, and their shares ([`Context::bulk`]). `None` unless
/// both classes have a bulk flow: starvation needs two classes competing.
fn bulk_shares(flows: &[FlowSummary]) -> Option<BulkShares<'_>> {
    let l4s: Vec<&FlowSummary> = flows.iter().filter(|f| is_bulk(f) && is_l4s(f)).collect();
    let classic: Vec<&FlowSummary> = flows.iter().filter(|f| is_bulk(f) && !is_l4s(f)).collect();
    if l4s.is_empty() || classic.is_empty() {
        return None;
    }
    let mean = |v: &[&FlowSummary]| v.iter().map(|f| f.throughput_bps).sum::<f64>() / v.len() as f64;
    let (mean_l4s, mean_classic) = (mean(&l4s), mean(&classic));
    let total: f64 = l4s.iter().chain(classic.iter()).map(|f| f.throughput_bps).sum();
    let fair = total / (l4s.len() + classic.len()) as f64;
    Some(BulkShares {
        l4s,
        classic,
        mean_l4s,
        mean_classic,
        total,
        fair,
    })
}

/// The flows of `v` below [`STARVE_SHARE`] of the fair share, described.
fn starved(v: &[&FlowSummary], fair: f64) -> Vec<String> {
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
}

/// `l4s-starves-classic`: scalable flows take the capacity from classic ones. Among bulk
/// flows, the mean L4S per-flow throughput is more than [`STARVE_RATIO`] times the classic
/// one, or a classic flow has less than [`STARVE_SHARE`] of the fair share. A coupled
/// DualQ AQM (RFC 9332 §2.4) should give roughly equal rates; a shared queue with a classic
/// ECN AQM, or a missing coupling, lets scalable flows take over.
fn l4s_starves_classic(cx: &Context) -> Option<Warning> {
    let b = cx.bulk.as_ref()?;
    let sc = starved(&b.classic, b.fair);
    let fires = b.total > 0.0 && (b.mean_l4s > STARVE_RATIO * b.mean_classic || !sc.is_empty());
    if !fires {
        return None;
    }
    let mut text = format!(
        "Scalable (L4S) flows starve classic ones: per-flow throughput L4S {} vs classic {} (ratio {}, limit {}).",
        rate(b.mean_l4s),
        rate(b.mean_classic),
        ratio_str(b.mean_l4s / b.mean_classic),
        STARVE_RATIO
    );
    if !sc.is_empty() {
        text.push_str(&format!(
            " Starved below {} of the fair share {}: {}.",
            pct0(STARVE_SHARE),
            rate(b.fair),
            list(&sc)
        ));
    }
    text.push_str(
        " A coupled DualQ AQM (RFC 9332 §2.4) should give roughly equal rates; a shared queue with a classic ECN \
         AQM or a missing coupling lets scalable flows take over.",
    );
    Some(Warning {
        code: "l4s-starves-classic",
        severity: Severity::Warn,
        text,
    })
}

/// `classic-starves-l4s`: the mirror of [`l4s_starves_classic`]. Among bulk flows, the mean
/// classic per-flow throughput is more than [`STARVE_RATIO`] times the L4S one, or an L4S
/// flow has less than [`STARVE_SHARE`] of the fair share.
fn classic_starves_l4s(cx: &Context) -> Option<Warning> {
    let b = cx.bulk.as_ref()?;
    let sl = starved(&b.l4s, b.fair);
    let fires = b.total > 0.0 && (b.mean_classic > STARVE_RATIO * b.mean_l4s || !sl.is_empty());
    if !fires {
        return None;
    }
    // The ratio as the L4S rule computes it, inverted: the same digits in both warnings.
    let ratio = b.mean_l4s / b.mean_classic;
    let mut text = format!(
        "Classic flows starve scalable (L4S) ones: per-flow throughput classic {} vs L4S {} (ratio {}, limit {}).",
        rate(b.mean_classic),
        rate(b.mean_l4s),
        ratio_str(1.0 / ratio),
        STARVE_RATIO
    );
    if !sl.is_empty() {
        text.push_str(&format!(
            " Starved below {} of the fair share {}: {}.",
            pct0(STARVE_SHARE),
            rate(b.fair),
            list(&sl)
        ));
    }
    Some(Warning {
        code: "classic-starves-l4s",
        severity: Severity::Warn,
        text,
    })
}

/// `flow-starved`: among the capacity-seeking flows (`summary.fairness`), one has less
/// than [`STARVE_SHARE`] of an equal share while the flows are of one class only (with both
/// classes, `l4s-starves-classic` and `classic-starves-l4s` judge starvation).
fn flow_starved(cx: &Context) -> Option<Warning> {
    if cx.bulk.is_some() {
        return None;
    }
    let fair = cx.s.fairness.as_ref()?;
    let shares: Vec<(&FlowSummary, f64)> =
        cx.s.flows
            .iter()
            .filter_map(|f| f.share_of_equal.map(|x| (f, x)))
            .collect();
    let starved: Vec<String> = shares
        .iter()
        .filter(|(_, x)| *x < STARVE_SHARE)
        .map(|(f, x)| format!("'{}' {} ({} of it)", f.name, rate(f.throughput_bps), pct(*x)))
        .collect();
    if starved.is_empty() {
        return None;
    }
    let (top, top_share) = shares.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
    Some(Warning {
        code: "flow-starved",
        severity: Severity::Warn,
        text: format!(
            "Flows starved below {} of an equal share ({} over {} capacity-seeking flows): {}, while '{}' takes {} \
             ({} of an equal share); Jain's index {:.2} (1 = equal).",
            pct0(STARVE_SHARE),
            rate(fair.equal_share_bps),
            fair.flows,
            list(&starved),
            top.name,
            rate(top.throughput_bps),
            pct(*top_share),
            fair.jain
        ),
    })
}

/// Every percentile series the report shows, named: each flow's OWD and RTT, then each
/// queue's sojourn and its sub-queues' (not the lone "single" one).
fn shown_percentiles(s: &Summary) -> Vec<(String, &Percentiles)> {
    let mut v = Vec::new();
    for f in &s.flows {
        v.push((format!("OWD of '{}'", f.name), &f.owd_ms));
        if let Some(r) = &f.rtt_ms {
            v.push((format!("RTT of '{}'", f.name), r));
        }
    }
    for q in &s.queues {
        v.push((format!("sojourn of '{}'", q.name), &q.sojourn_ms));
        for (k, sq) in &q.subqueues {
            if k != "single" {
                v.push((format!("sojourn of '{}/{k}'", q.name), &sq.sojourn_ms));
            }
        }
    }
    v
}

/// The shown series whose sample count is in `samples`, described with the count.
fn series_with_samples(s: &Summary, samples: Range<u64>) -> impl Iterator<Item = String> + '_ {
    shown_percentiles(s)
        .into_iter()
        .filter(move |(_, p)| samples.contains(&p.count))
        .map(|(what, p)| format!("{what} ({})", count(p.count)))
}

/// `few-samples-p999` (a note): percentiles shown with too few samples. A series with
/// fewer than [`SAMPLES_P999`] samples has no sample beyond its p99.9 and p99.99, so both
/// are in effect its maximum.
fn few_samples_p999(cx: &Context) -> Option<Warning> {
    listed(
        "few-samples-p999",
        Severity::Note,
        series_with_samples(cx.s, 1..SAMPLES_P999),
        |d| d,
        |few| {
            format!(
                "p99.9 and p99.99 rest on fewer than {} samples for {}: both are in effect the maximum. \
                 Run longer or raise the probe rate.",
                count(SAMPLES_P999),
                few
            )
        },
    )
}

/// `few-samples-p9999` (a note): a series with at least [`SAMPLES_P999`] but fewer than
/// [`SAMPLES_P9999`] samples has a sound p99.9, but its p99.99 is in effect its maximum.
fn few_samples_p9999(cx: &Context) -> Option<Warning> {
    listed(
        "few-samples-p9999",
        Severity::Note,
        series_with_samples(cx.s, SAMPLES_P999..SAMPLES_P9999),
        |d| d,
        |few| {
            format!(
                "p99.99 rests on fewer than {} samples for {}: it is in effect the maximum (p99.9 is sound).",
                count(SAMPLES_P9999),
                few
            )
        },
    )
}

/// `testbed-timing`: a live run whose host held the testbed's own elements back (its
/// self-check, [`l4s_metrics::summary::TestbedCheck`], says `disrupted`). The lateness is
/// the host's, not the network's, and the delays at p99 and beyond include it.
fn testbed_timing(cx: &Context) -> Option<Warning> {
    let t = cx.s.testbed.as_ref().filter(|t| t.disrupted)?;
    let steal = match t.cpu_steal {
        Some(x) if x >= 0.001 => format!("; the hypervisor took {:.1} % of the CPU time (steal)", x * 100.0),
        _ => String::new(),
    };
    Some(Warning {
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
    })
}

/// `incomplete`: the run was stopped (Ctrl-C) before its end; its figures cover the
/// statistics window up to the time reached only.
fn incomplete(cx: &Context) -> Option<Warning> {
    if cx.s.complete {
        return None;
    }
    let sc = &cx.s.scenario;
    let (from, reached) = cx.s.stats_window();
    Some(Warning {
        code: "incomplete",
        severity: Severity::Warn,
        text: format!(
            "the run was stopped at {reached:.1} s of {:.1} s: these figures cover {from:.1}–{reached:.1} s only{}",
            sc.duration_s,
            if reached < sc.warmup_s {
                " (the warm-up had not ended, so they include it)"
            } else {
                ""
            }
        ),
    })
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
        let check = synth::testbed_check(true, Some(0.031));
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
    fn a_queue_only_feedback_crosses_is_not_called_bleached() {
        // The reverse direction of a DualPI2 bottleneck carries the flows' ACKs, which are
        // Not-ECT, and none of their data: its L queue stays empty however many ECT(1)
        // packets the forward direction carried (`bench-l4s-wired` was called a PROBLEM
        // for it).
        let mut s = synth::healthy_dualpi2();
        let names: Vec<String> = s.flows.iter().map(|f| f.name.clone()).collect();
        let mut rev = s.queues[0].clone();
        rev.name = "bottleneck-reverse".into();
        rev.subqueues.get_mut("L").unwrap().enqueued_packets = 0;
        rev.data_flows = Some(vec![]);
        s.queues[0].data_flows = Some(names.clone());
        s.queues.push(rev);
        let v = verdict(&s, None);
        assert!(!v.has("ecn-bleached"), "{:?}", v.warnings);
        assert_eq!(v.level, Level::Good);
        // The same queue crossed by the L4S flows' data is judged, and says so plainly.
        s.queues.last_mut().unwrap().data_flows = Some(names);
        let v = verdict(&s, None);
        assert_eq!(codes(&v), vec!["ecn-bleached"]);
        let t = &v.warnings[0].text;
        assert!(
            t.starts_with("DualPI2 queue 'bottleneck-reverse' put no packet in its L4S (L) queue"),
            "{t}"
        );
        assert!(
            t.ends_with("across it: their ECT(1) codepoint was remarked before it."),
            "{t}"
        );
        // Without `data_flows` (one of several queues of a link, or an older summary) every
        // L4S flow counts, as before.
        s.queues.last_mut().unwrap().data_flows = None;
        let v = verdict(&s, None);
        assert!(v.warnings[0].text.contains("If they cross this queue"));

        // Losses without CE are evidence only for flows whose data crosses a DualPI2 queue.
        let mut s = synth::healthy_dualpi2();
        s.flows[0].ce_packets = 0;
        s.flows[0].ce_fraction = 0.0;
        s.flows[0].lost_packets = 120;
        assert!(verdict(&s, None).has("ecn-bleached"));
        for q in &mut s.queues {
            q.data_flows = Some(vec![]);
        }
        assert!(!verdict(&s, None).has("ecn-bleached"));
        s.queues[0].data_flows = Some(vec![s.flows[0].name.clone()]);
        let v = verdict(&s, None);
        assert_eq!(codes(&v), vec!["ecn-bleached"]);
        let t = &v.warnings[0].text;
        assert!(t.contains("although their data crosses a DualPI2 queue"), "{t}");
        assert!(t.contains("Their ECN field was bleached"), "{t}");
        assert!(!t.contains("If these flows"), "{t}");
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
            frames_complete: 2990,
            frames_late: 30,
            frames_incomplete: 10,
            ..synth::media(3000, 40.0 / 3000.0, 0.0, s.flows[0].owd_ms)
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

/// One focused test per rule: a summary built to trigger it, and ones just on the other
/// side of its threshold that must not. Each calls the rule's function directly.
#[cfg(test)]
mod rule_tests {
    use super::*;
    use crate::synth;
    use l4s_metrics::summary::{MediaSummary, TestbedCheck};

    // The healthy synthetic run (no rule fires): flows 0 'prague' (L4S, bulk, ECT(1)),
    // 1 'cubic' (classic, bulk), 2 'probe-l4s' (L4S, ECT(1)), 3 'probe-classic'; queues
    // 0 'bottleneck' (DualPI2, 100 Mbit/s) and 1 'bottleneck-reverse' (FIFO). Base OWD
    // 10 ms; tolerance 5 ms + 2 × 0.12 ms = 5.24 ms.
    const PRAGUE: usize = 0;
    const CUBIC: usize = 1;
    const PROBE_L4S: usize = 2;
    const PROBE_CLASSIC: usize = 3;

    /// The healthy run with only the flows at `keep` (indices above), for a rule about them.
    fn with_flows(keep: &[usize]) -> Summary {
        let mut s = synth::healthy_dualpi2();
        s.flows = keep.iter().map(|&i| s.flows[i].clone()).collect();
        s
    }

    fn run(rule: fn(&Context) -> Option<Warning>, s: &Summary) -> Option<Warning> {
        rule(&Context::new(s, None))
    }

    /// The rule's warning, checked for its code and severity.
    fn fires(rule: fn(&Context) -> Option<Warning>, s: &Summary, code: &str, severity: Severity) -> String {
        let w = run(rule, s).unwrap_or_else(|| panic!("{code} should fire"));
        assert_eq!((w.code, w.severity), (code, severity));
        w.text
    }

    #[test]
    fn the_table_runs_every_rule_once_in_the_documented_order() {
        let rows: Vec<(&str, &str)> = RULES.iter().map(|r| (r.name, r.code)).collect();
        assert_eq!(
            rows,
            [
                ("flow_silent", "flow-silent"),
                ("no_l4s_marking", "no-l4s-marking"),
                ("l4s_marked_but_queued", "l4s-marked-but-queued"),
                ("ect1_lost_without_ce", "ecn-bleached"),
                ("dualpi2_l_queue_empty", "ecn-bleached"),
                ("ecn_validation_failed", "ecn-validation-failed"),
                ("media_frames_late", "media-frames-late"),
                ("media_at_floor", "media-at-floor"),
                ("ce_saturated", "ce-saturated"),
                ("link_not_saturated", "link-not-saturated"),
                ("l4s_starves_classic", "l4s-starves-classic"),
                ("classic_starves_l4s", "classic-starves-l4s"),
                ("flow_starved", "flow-starved"),
                ("few_samples_p999", "few-samples-p999"),
                ("few_samples_p9999", "few-samples-p9999"),
                ("testbed_timing", "testbed-timing"),
                ("incomplete", "incomplete"),
            ]
        );
        let s = synth::healthy_dualpi2();
        let cx = Context::new(&s, None);
        assert!(RULES.iter().all(|r| r.run(&cx).is_empty()), "the healthy run is silent");
    }

    #[test]
    fn flow_silent_names_flows_without_arrivals() {
        let mut s = with_flows(&[PRAGUE, CUBIC]);
        s.flows[1].received_packets = 1;
        assert_eq!(run(flow_silent, &s), None);
        s.flows[1].received_packets = 0;
        let t = fires(flow_silent, &s, "flow-silent", Severity::Warn);
        assert!(
            t.starts_with("'cubic' delivered no packet during the statistics window (10.0–60.0 s)"),
            "{t}"
        );
    }

    #[test]
    fn no_l4s_marking_needs_no_ce_and_delay_above_the_tolerance() {
        let mut s = with_flows(&[PRAGUE]);
        s.flows[0].ce_packets = 0;
        s.flows[0].owd_ms.p99 = 15.2; // +5.2 ms: within the tolerance
        assert_eq!(run(no_l4s_marking, &s), None);
        s.flows[0].owd_ms.p99 = 15.3;
        let t = fires(no_l4s_marking, &s, "no-l4s-marking", Severity::Bad);
        assert!(t.contains("'prague' OWD p99 15.3 ms vs base 10.0 ms (+5.30 ms)"), "{t}");
        assert!(t.contains("DualPI2, RFC 9332"), "{t}");
        // Snapshots add how many intervals were delayed without marks.
        let snaps = synth::snapshots(&s, 60.0, 0.1, 1);
        let w = no_l4s_marking(&Context::new(&s, Some(&snaps))).unwrap();
        assert!(w.text.contains("snapshot intervals delayed with no CE"), "{}", w.text);
        // Too few packets to judge, or marked (another rule), or classic: silent.
        s.flows[0].received_packets = MIN_PACKETS - 1;
        assert_eq!(run(no_l4s_marking, &s), None);
        s.flows[0].received_packets = MIN_PACKETS;
        s.flows[0].ce_packets = 1;
        assert_eq!(run(no_l4s_marking, &s), None);
        s.flows[0].ce_packets = 0;
        s.flows[0].class = "classic".into();
        assert_eq!(run(no_l4s_marking, &s), None);
    }

    #[test]
    fn l4s_marked_but_queued_needs_ce_and_delay_above_the_tolerance() {
        let mut s = with_flows(&[PRAGUE]);
        s.flows[0].owd_ms.p99 = 15.2;
        assert_eq!(run(l4s_marked_but_queued, &s), None);
        s.flows[0].owd_ms.p99 = 22.6;
        let t = fires(l4s_marked_but_queued, &s, "l4s-marked-but-queued", Severity::Warn);
        assert!(
            t.contains("'prague' +12.6 ms at p99 with 2.5 % CE (more than 5.24 ms above"),
            "{t}"
        );
        assert!(t.contains("RFC 3168"), "{t}");
        s.flows[0].ce_packets = 0;
        assert_eq!(run(l4s_marked_but_queued, &s), None, "unmarked is no-l4s-marking");
    }

    #[test]
    fn ect1_lost_without_ce_needs_a_dualpi2_queue_on_the_path() {
        let mut s = with_flows(&[PRAGUE, CUBIC]);
        s.flows[0].ce_packets = 0;
        assert_eq!(run(ect1_lost_without_ce, &s), None, "no loss, no evidence");
        s.flows[0].lost_packets = 1200;
        let t = fires(ect1_lost_without_ce, &s, "ecn-bleached", Severity::Bad);
        assert!(t.contains(": 'prague' lost 1 200 packets, 0 CE."), "{t}");
        // A sender that never sent ECT(1) is not bleached.
        s.flows[0].ecn = "ect0".into();
        assert_eq!(run(ect1_lost_without_ce, &s), None);
        // Under a FIFO, losses without CE are expected.
        s.flows[0].ecn = "ect1".into();
        s.queues[0].aqm = "fifo".into();
        assert_eq!(run(ect1_lost_without_ce, &s), None);
    }

    #[test]
    fn dualpi2_l_queue_empty_is_checked_per_queue() {
        let mut s = with_flows(&[PRAGUE, CUBIC, PROBE_L4S]);
        let cx = Context::new(&s, None);
        assert_eq!(dualpi2_l_queue_empty(&cx, &s.queues[0]), None);
        s.queues[0].subqueues.get_mut("L").unwrap().enqueued_packets = 0;
        let cx = Context::new(&s, None);
        let w = dualpi2_l_queue_empty(&cx, &s.queues[0]).expect("fires");
        assert_eq!((w.code, w.severity), ("ecn-bleached", Severity::Bad));
        assert!(
            w.text.starts_with(
                "DualPI2 queue 'bottleneck' put no packet in its L4S (L) queue, although 'prague', 'probe-l4s' \
                 delivered 299 893 ECT(1) packets."
            ),
            "{}",
            w.text
        );
        assert_eq!(dualpi2_l_queue_empty(&cx, &s.queues[1]), None, "a FIFO has no L queue");
        // Too little ECT(1) traffic to expect anything in L.
        s.flows[0].received_packets = 50;
        s.flows[2].received_packets = 49;
        let cx = Context::new(&s, None);
        assert_eq!(dualpi2_l_queue_empty(&cx, &s.queues[0]), None);
    }

    #[test]
    fn ecn_validation_failed_says_when_and_why() {
        let mut s = with_flows(&[PRAGUE, CUBIC]);
        s.flows[0].ecn_validation = "capable".into();
        assert_eq!(run(ecn_validation_failed, &s), None);
        s.flows[0].ecn_validation = "failed".into();
        s.flows[0].ecn_failed_at_s = Some(10.016);
        s.flows[0].ecn_failure = Some("bleached".into());
        s.flows[1].ecn_validation = "failed".into();
        let t = fires(ecn_validation_failed, &s, "ecn-validation-failed", Severity::Bad);
        assert!(
            t.contains("flows: 'prague' at 10.016 s (bleached), 'cubic' at ? s (unknown)."),
            "{t}"
        );
        assert!(t.contains("RFC 9000 §13.4.2 and RFC 9331 §4"), "{t}");
    }

    /// A media summary with the healthy run's L4S delay as its frame delay.
    fn media(frames_sent: u64, bad: f64, stall: f64) -> MediaSummary {
        synth::media(frames_sent, bad, stall, synth::healthy_dualpi2().flows[0].owd_ms)
    }

    #[test]
    fn media_frames_late_on_bad_frames_or_stalls() {
        let mut s = with_flows(&[PRAGUE]);
        s.flows[0].media = Some(media(3000, 0.0999, 0.0199));
        assert_eq!(run(media_frames_late, &s), None, "just under both limits");
        s.flows[0].media = Some(media(MIN_FRAMES - 1, 0.5, 0.5));
        assert_eq!(run(media_frames_late, &s), None, "too few frames to judge");
        s.flows[0].media = Some(media(3000, 0.1, 0.0));
        let t = fires(media_frames_late, &s, "media-frames-late", Severity::Warn);
        assert!(
            t.contains(
                "'prague' 10.0 % of frames late or incomplete (frame delay p99 10.35 ms), stalled 0 % of the time"
            ),
            "{t}"
        );
        s.flows[0].media = Some(media(3000, 0.0, 0.02));
        let t = fires(media_frames_late, &s, "media-frames-late", Severity::Warn);
        assert!(t.contains("stalled 2.0 % of the time"), "{t}");
        assert!(
            t.contains("'prague' 0 % of frames late or incomplete"),
            "a zero percentage keeps its unit: {t}"
        );
    }

    #[test]
    fn ce_saturated_at_95_percent() {
        let mut s = with_flows(&[PRAGUE, CUBIC]);
        s.flows[0].ce_fraction = 0.949;
        assert_eq!(run(ce_saturated, &s), None);
        s.flows[0].ce_fraction = CE_SATURATED;
        let t = fires(ce_saturated, &s, "ce-saturated", Severity::Warn);
        assert!(
            t.starts_with("Nearly every ECT(1) packet arrived CE-marked: 'prague' 95.0 % CE."),
            "{t}"
        );
        s.flows[0].received_packets = MIN_PACKETS - 1;
        assert_eq!(run(ce_saturated, &s), None, "too few packets");
        s.flows[0].received_packets = MIN_PACKETS;
        s.flows[1].ce_fraction = 1.0;
        s.flows[0].ce_fraction = 0.0;
        assert_eq!(run(ce_saturated, &s), None, "classic flows are not judged");
    }

    #[test]
    fn link_not_saturated_judges_the_busiest_queue() {
        let mut s = with_flows(&[PRAGUE, CUBIC]);
        s.queues[0].utilization = MIN_UTILIZATION;
        assert_eq!(run(link_not_saturated, &s), None);
        s.queues[0].utilization = 0.79;
        let t = fires(link_not_saturated, &s, "link-not-saturated", Severity::Warn);
        assert!(
            t.starts_with("No link was saturated: the busiest queue, 'bottleneck', was busy 79 % of the statistics window (< 80 %). Latency here"),
            "{t}"
        );
        let snaps = synth::snapshots(&s, 60.0, 0.1, 1);
        let w = link_not_saturated(&Context::new(&s, Some(&snaps))).unwrap();
        assert!(w.text.contains("% busy in 0 of 500 snapshot intervals."), "{}", w.text);
        s.queues[0].utilization = f64::NAN;
        s.queues[1].utilization = f64::NAN;
        assert_eq!(run(link_not_saturated, &s), None, "unknown utilisation");
        s.queues.clear();
        assert_eq!(run(link_not_saturated, &s), None, "no queue");
    }

    #[test]
    fn l4s_starves_classic_on_ratio_or_share() {
        let mut s = with_flows(&[PRAGUE, CUBIC, PROBE_L4S, PROBE_CLASSIC]);
        s.flows[0].throughput_bps = 79e6;
        s.flows[1].throughput_bps = 21e6; // ratio 3.76
        assert_eq!(run(l4s_starves_classic, &s), None);
        s.flows[0].throughput_bps = 81e6;
        s.flows[1].throughput_bps = 19e6; // ratio 4.26
        let t = fires(l4s_starves_classic, &s, "l4s-starves-classic", Severity::Warn);
        assert!(
            t.starts_with("Scalable (L4S) flows starve classic ones: per-flow throughput L4S 81.00 Mbit/s vs classic 19.00 Mbit/s (ratio 4.3, limit 4)."),
            "{t}"
        );
        assert!(t.contains("RFC 9332 §2.4"), "{t}");
        // Two L4S flows at 40 Mbit/s, classic ones at 18 and 2: the ratio is exactly 4 (not
        // above it), but 'cubic-2' has 8 % of the fair share of 25 Mbit/s.
        let mut s = with_flows(&[PRAGUE, CUBIC, PRAGUE, CUBIC]);
        s.flows[2].name = "prague-2".into();
        s.flows[3].name = "cubic-2".into();
        s.flows[0].throughput_bps = 40e6;
        s.flows[2].throughput_bps = 40e6;
        s.flows[1].throughput_bps = 18e6;
        s.flows[3].throughput_bps = 2e6;
        let t = fires(l4s_starves_classic, &s, "l4s-starves-classic", Severity::Warn);
        assert!(
            t.contains("(ratio 4.0, limit 4). Starved below 10 % of the fair share 25.00 Mbit/s: 'cubic-2' 2.00 Mbit/s (8 % of the fair share)."),
            "{t}"
        );
    }

    #[test]
    fn classic_starves_l4s_is_the_mirror() {
        let mut s = with_flows(&[PRAGUE, CUBIC, PROBE_L4S]);
        s.flows[0].throughput_bps = 21e6;
        s.flows[1].throughput_bps = 79e6;
        assert_eq!(run(classic_starves_l4s, &s), None);
        s.flows[0].throughput_bps = 10e6;
        s.flows[1].throughput_bps = 90e6;
        let t = fires(classic_starves_l4s, &s, "classic-starves-l4s", Severity::Warn);
        assert_eq!(
            t,
            "Classic flows starve scalable (L4S) ones: per-flow throughput classic 90.00 Mbit/s vs L4S 10.00 Mbit/s \
             (ratio 9.0, limit 4)."
        );
        assert_eq!(run(l4s_starves_classic, &s), None);
        // Within the ratio, but one of two L4S flows below a tenth of the fair share.
        let mut s = with_flows(&[PRAGUE, CUBIC, PRAGUE]);
        s.flows[2].name = "prague-2".into();
        s.flows[0].throughput_bps = 1e6;
        s.flows[1].throughput_bps = 50e6;
        s.flows[2].throughput_bps = 50e6;
        let t = fires(classic_starves_l4s, &s, "classic-starves-l4s", Severity::Warn);
        assert!(
            t.ends_with(
                "Starved below 10 % of the fair share 33.67 Mbit/s: 'prague' 1.00 Mbit/s (3 % of the fair share)."
            ),
            "{t}"
        );
        // Request-driven applications go at their own pace: an L4S query flow at
        // 120 kbit/s beside Prague and CUBIC at 50 Mbit/s each is not starved, nor are
        // web pages or a sync.
        let mut s = with_flows(&[PRAGUE, CUBIC, PRAGUE]);
        s.flows[0].throughput_bps = 50e6;
        s.flows[1].throughput_bps = 50e6;
        for kind in ["query", "web", "sync", "request-response"] {
            s.flows[2].name = "dns".into();
            s.flows[2].kind = kind.into();
            s.flows[2].throughput_bps = 120e3;
            assert_eq!(run(classic_starves_l4s, &s), None, "{kind}");
        }
        // A transfer does compete.
        s.flows[2].kind = "bulk".into();
        assert!(run(classic_starves_l4s, &s).is_some());
        // Probes do not compete: without a classic bulk flow there is no one to starve.
        let s = with_flows(&[PRAGUE, PROBE_CLASSIC]);
        assert_eq!(run(classic_starves_l4s, &s), None);
        assert_eq!(run(l4s_starves_classic, &s), None);
    }

    #[test]
    fn few_samples_p999_below_1000() {
        let mut s = with_flows(&[PROBE_CLASSIC]);
        s.flows[0].owd_ms.count = SAMPLES_P999;
        assert_eq!(run(few_samples_p999, &s), None);
        s.flows[0].owd_ms.count = 0;
        assert_eq!(run(few_samples_p999, &s), None, "an empty series shows no percentile");
        s.flows[0].owd_ms.count = 999;
        s.queues[0].subqueues.get_mut("L").unwrap().sojourn_ms.count = 5;
        let t = fires(few_samples_p999, &s, "few-samples-p999", Severity::Note);
        assert_eq!(
            t,
            "p99.9 and p99.99 rest on fewer than 1 000 samples for OWD of 'probe-classic' (999), sojourn of \
             'bottleneck/L' (5): both are in effect the maximum. Run longer or raise the probe rate."
        );
    }

    #[test]
    fn few_samples_p9999_from_1000_to_9999() {
        let mut s = with_flows(&[PRAGUE]);
        s.flows[0].rtt_ms.as_mut().unwrap().count = 999;
        assert_eq!(run(few_samples_p9999, &s), None, "that is the p99.9 rule's");
        s.flows[0].rtt_ms.as_mut().unwrap().count = SAMPLES_P9999;
        assert_eq!(run(few_samples_p9999, &s), None);
        s.flows[0].rtt_ms.as_mut().unwrap().count = 9_999;
        s.queues[1].subqueues.get_mut("single").unwrap().sojourn_ms.count = 1_000; // not shown
        let t = fires(few_samples_p9999, &s, "few-samples-p9999", Severity::Note);
        assert_eq!(
            t,
            "p99.99 rests on fewer than 10 000 samples for RTT of 'prague' (9 999): it is in effect the maximum \
             (p99.9 is sound)."
        );
    }

    #[test]
    fn incomplete_only_when_stopped() {
        let mut s = with_flows(&[PRAGUE]);
        assert_eq!(run(incomplete, &s), None);
        s.complete = false;
        s.reached_s = Some(23.45);
        let t = fires(incomplete, &s, "incomplete", Severity::Warn);
        assert!(t.starts_with("the run was stopped at 23.4 s of"), "{t}");
        let want = format!("cover {:.1}–23.4 s only", s.scenario.warmup_s);
        assert!(t.contains(&want), "{t}");
        s.reached_s = Some(s.scenario.warmup_s / 2.0);
        let t = fires(incomplete, &s, "incomplete", Severity::Warn);
        assert!(t.contains("the warm-up had not ended"), "{t}");
    }

    #[test]
    fn testbed_timing_only_when_disrupted() {
        let mut s = with_flows(&[PRAGUE]);
        assert_eq!(run(testbed_timing, &s), None, "simulator: no self-check");
        let check = synth::testbed_check(false, Some(0.0009));
        s.testbed = Some(check.clone());
        assert_eq!(run(testbed_timing, &s), None);
        s.testbed = Some(TestbedCheck {
            disrupted: true,
            ..check
        });
        let t = fires(testbed_timing, &s, "testbed-timing", Severity::Warn);
        assert!(
            t.starts_with(
                "the testbed fell behind: 600 of 120 000 packet hand-offs by its own elements left over 1 ms late \
                 (0.50 %, p99.9 2.60 ms, worst 4.10 ms). Delays"
            ),
            "steal under 0.1 % is not mentioned: {t}"
        );
    }

    #[test]
    fn media_at_floor_fires_from_a_quarter_of_the_window() {
        let mut s = with_flows(&[PRAGUE, CUBIC]);
        let mut m = synth::media(3000, 0.0, 0.0, Percentiles::default());
        m.time_at_min_fraction = 0.249;
        s.flows[0].media = Some(m.clone());
        assert!(run(media_at_floor, &s).is_none(), "just below 25 %");
        m.time_at_min_fraction = 0.25;
        s.flows[0].media = Some(m.clone());
        let text = fires(media_at_floor, &s, "media-at-floor", Severity::Warn);
        assert!(text.contains("'prague' 25.0 % of the window at 2.00 Mbit/s"), "{text}");
        // Summaries written before the range was recorded say nothing.
        m.min_bitrate_bps = 0.0;
        s.flows[0].media = Some(m);
        assert!(run(media_at_floor, &s).is_none());
    }

    #[test]
    fn flow_starved_fires_within_one_class_below_a_tenth_of_an_equal_share() {
        // Five classic flows: one takes 19.8 Mbit/s, four get 50 kbit/s each.
        let mut s = with_flows(&[CUBIC]);
        for i in 1..5 {
            let mut c = s.flows[0].clone();
            c.name = format!("dl-{i}");
            c.throughput_bps = 50e3;
            s.flows.push(c);
        }
        s.flows[0].name = "game".into();
        s.flows[0].throughput_bps = 19.8e6;
        s.fairness = l4s_metrics::summary::Fairness::compute(&mut s.flows);
        let f = s.fairness.as_ref().unwrap();
        assert_eq!(f.flows, 5);
        // Jain: (20)^2 / (5 · (19.8^2 + 4 · 0.05^2)) = 0.204.
        assert!(
            (f.jain - 400.0 / (5.0 * (19.8f64.powi(2) + 4.0 * 0.0025))).abs() < 1e-6,
            "{f:?}"
        );
        let text = fires(flow_starved, &s, "flow-starved", Severity::Warn);
        assert!(text.contains("'dl-1' 50.0 kbit/s (1.2 % of it)"), "{text}");
        assert!(
            text.contains("while 'game' takes 19.80 Mbit/s (495.0 % of an equal share)"),
            "{text}"
        );
        // At exactly a tenth of an equal share a flow is not starved: 18.4 and 4 × 0.4 Mbit/s
        // make an equal share of 4 Mbit/s.
        s.flows[0].throughput_bps = 18.4e6;
        for fl in &mut s.flows[1..] {
            fl.throughput_bps = 0.4e6;
        }
        s.fairness = l4s_metrics::summary::Fairness::compute(&mut s.flows);
        assert_eq!(s.flows[1].share_of_equal, Some(0.1));
        assert!(run(flow_starved, &s).is_none());
        // With bulk flows of both classes the class rules judge starvation.
        let mut s = with_flows(&[PRAGUE, CUBIC]);
        s.flows[1].throughput_bps = 1e3;
        s.fairness = l4s_metrics::summary::Fairness::compute(&mut s.flows);
        assert!(run(flow_starved, &s).is_none());
        assert!(run(l4s_starves_classic, &s).is_some());
    }
}
