//! The summary of a finished run, with the shared assembly of [`l4s_measure::summary`].

use crate::endpoints::Ep;
use crate::world::Sim;
use l4s_measure::summary::{FlowEnd, QueueEnd};
use l4s_measure::Window;
use l4s_metrics::summary::Summary;

impl Sim {
    /// The results of the run so far (call after [`Sim::run`]).
    pub fn summary(&mut self) -> Summary {
        let window = Window {
            start: self.window_start,
            end: self.end,
        };
        let mut ends = Vec::with_capacity(self.flows.len());
        for fl in &mut self.flows {
            let sender = fl.ep[0].as_ref().map(|e| e.stats()).unwrap_or_default();
            let rcv = fl.ep[1].as_ref().map(|e| e.stats()).unwrap_or_default();
            let rbase = fl.receiver_base.unwrap_or_default();
            if let Some(mm) = fl.meter.media.as_mut() {
                if let (Some(Ep::MediaS(s)), Some(Ep::MediaR(r))) = (&fl.ep[0], &fl.ep[1]) {
                    mm.latest = Some(s.media_stats());
                    mm.highest_seen = r.highest_frame_seen();
                }
            }
            ends.push(FlowEnd {
                sender,
                sender_base: fl.meter.sender_base.unwrap_or_default(),
                goodput_bytes: rcv.delivered_bytes.saturating_sub(rbase.delivered_bytes),
            });
        }
        for link in &mut self.links {
            for (i, q) in link.queues.iter_mut().enumerate() {
                let now = link.model.queue_stats(i);
                q.meter.set_counts_from_stats(&q.window_base, &now);
            }
        }
        let flows: Vec<(&l4s_measure::FlowMeter, FlowEnd)> = self.flows.iter().map(|f| &f.meter).zip(ends).collect();
        let scenario = &self.scenario;
        let name_of = |h: u32, _port: Option<u16>| {
            (0..scenario.flows.len())
                .flat_map(|f| [(f, true), (f, false)])
                .find(|&(f, fwd)| crate::packet::flow_hash(f as l4s_core::FlowId, fwd) == h)
                .map(|(f, fwd)| {
                    let name = &scenario.flows[f].name;
                    if fwd {
                        name.clone()
                    } else {
                        format!("{name} (feedback)")
                    }
                })
                .unwrap_or_else(|| format!("{h:08x}"))
        };
        let links = &self.links;
        let member_link = move |owner: usize, ports: (l4s_link::Port, l4s_link::Port)| {
            links.iter().position(|k| k.owner as usize == owner && k.ports == ports)
        };
        let queues: Vec<(&l4s_measure::QueueMeter, QueueEnd)> = self
            .links
            .iter()
            .enumerate()
            .flat_map(|(l, link)| {
                let radio =
                    l4s_measure::summary::radio_summary(&self.scenario.links[l], &link.model.stats(), &link.stats_base);
                let model = &link.model;
                link.queues
                    .iter()
                    .zip(model.queues())
                    .enumerate()
                    .map(move |(i, (q, info))| {
                        (
                            &q.meter,
                            QueueEnd {
                                name: q.name.clone(),
                                // A cell's queue is its UE direction's scenario link's, as live.
                                link: model.queue_ports(i).and_then(|p| member_link(l, p)).unwrap_or(l),
                                aqm: info.aqm.to_string(),
                                rate_bps: model.queue_rate(i).map_or(0, |r| r.bits_per_sec()),
                                // One UE direction of a cell has its own counters.
                                radio: match model.queue_link_stats(i) {
                                    Some((now, dir)) => Some(l4s_measure::summary::radio_summary_of(
                                        match dir {
                                            l4s_link::RanDirection::Downlink => "downlink",
                                            l4s_link::RanDirection::Uplink => "uplink",
                                        },
                                        &now,
                                        &q.radio_base.unwrap_or_default(),
                                    )),
                                    None => radio.clone(),
                                },
                                queue_protection: model
                                    .queue_protection(i)
                                    .map(|s| l4s_measure::summary::queue_protection_summary(&s, name_of)),
                                data_flows: q.data_flows.as_ref().map(|v| v.iter().map(|&f| f as usize).collect()),
                            },
                        )
                    })
            })
            .collect();
        let mut summary =
            l4s_measure::summary::summary(&self.scenario, "sim", self.scenario.seed, window, &flows, &queues);
        for (l, link) in self.links.iter().enumerate() {
            if let Some(now) = link.model.wifi_stats() {
                let name = self.scenario.links[l]
                    .medium
                    .as_ref()
                    .map_or(&self.scenario.links[l].name, |m| &m.name);
                summary.wifi.push(l4s_measure::summary::wifi_summary(
                    name,
                    &now,
                    link.wifi_base.as_deref(),
                    window.secs(),
                ));
            }
        }
        summary
    }
}
