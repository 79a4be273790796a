//! `distributions.csv` (`kind,name,value_ms,cdf`): the cumulative distribution of each
//! flow's one-way delay (`owd`), RTT (`rtt`) and, for media flows, frame delay
//! (`frame_delay`), and of each queue's sojourn (`sojourn`, name `link` for all
//! sub-queues, `link/L` and `link/C` for DualPI2), and of each Wi-Fi station's MAC access
//! delay (`access_delay`, name `<bss>/<station>/<down|up>`), over the statistics window,
//! sampled from the HDR histograms ([`l4s_metrics::hist::cdf_points`]).

use crate::{FlowMeter, QueueMeter};
use l4s_metrics::fixed::fixed;
use l4s_metrics::LatencyHist;
use std::io::{self, Write};

/// Write the distributions of these flows and queues (name, meter), and these MAC access
/// delays (name, µs), in this order.
pub fn write(
    w: &mut dyn Write,
    flows: &[(&str, &FlowMeter)],
    queues: &[(&str, &QueueMeter)],
    access: &[(String, l4s_link::wifi::Histogram)],
) -> io::Result<()> {
    writeln!(w, "kind,name,value_ms,cdf")?;
    let mut put = |kind: &str, name: &str, h: &LatencyHist| -> io::Result<()> {
        for (v, f) in h.cdf_points() {
            writeln!(w, "{kind},{name},{},{}", fixed(v as f64 / 1e6, 6), fixed(f, 8))?;
        }
        Ok(())
    };
    for (name, m) in flows {
        put("owd", name, &m.owd)?;
        put("rtt", name, &m.rtt)?;
        if let Some(mm) = &m.media {
            put("frame_delay", name, &mm.delay)?;
        }
    }
    for (name, q) in queues {
        put("sojourn", name, &q.sojourn_all())?;
        if q.subqueues.len() > 1 {
            for (id, h) in q.subqueues.iter().zip(&q.sojourn) {
                put("sojourn", &format!("{name}/{}", id.name()), h)?;
            }
        }
    }
    for (name, h) in access {
        let max = h.quantile(1.0);
        for (v, f) in l4s_metrics::hist::cdf_points(h.hdr(), max) {
            writeln!(w, "access_delay,{name},{},{}", fixed(v as f64 / 1e3, 6), fixed(f, 8))?;
        }
    }
    w.flush()
}
