//! What `l4s run` shows while runs go: the progress bar on a terminal, and each run's
//! verdict, tables and figures as it finishes.

use l4s_core::{Dur, Time};
use l4s_lab::{Progress, Run};
use std::io::IsTerminal;

/// The progress bar on a terminal and the results of each run as it finishes.
pub struct Shell {
    /// Print only the results paths (and nothing with `json`, which prints the summaries
    /// at the end).
    pub quiet: bool,
    pub json: bool,
    pub bar: indicatif::ProgressBar,
}

impl Progress for Shell {
    fn variant(&mut self, name: &str) {
        if !self.quiet {
            println!("\n=== variant {name} ===");
        }
    }
    fn started(&mut self, total: Dur, backend: &str) {
        if !std::io::stderr().is_terminal() || self.quiet {
            return;
        }
        let b = indicatif::ProgressBar::new(total.as_nanos() / 1_000_000);
        b.set_style(
            indicatif::ProgressStyle::with_template(if backend == "live" {
                "  {bar:30.cyan/blue} live {msg} of {prefix}  eta {eta}"
            } else {
                "  {bar:30.cyan/blue} simulated {msg} of {prefix}  wall {elapsed_precise}  eta {eta}"
            })
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b.set_prefix(format!("{:.1} s", total.as_secs_f64()));
        self.bar = b;
    }
    fn notice(&mut self, message: &str) {
        self.bar.suspend(|| eprintln!("note: {}", clean(message)));
    }
    fn time(&mut self, t: Time) {
        self.bar.set_position(t.as_nanos() / 1_000_000);
        self.bar.set_message(format!("{:.1} s", t.as_secs_f64()));
    }
    fn finished(&mut self, r: &Run) {
        self.bar.finish_and_clear();
        self.bar = indicatif::ProgressBar::hidden();
        if self.quiet {
            if !self.json {
                println!("{}", r.dir.display());
            }
            return;
        }
        if let Some(v) = &r.summary.verdict {
            print_verdict(v);
        }
        print!("{}", clean(&l4s_metrics::table::summary_tables(&r.summary)));
        let (st, wall) = (&r.stats, r.wall.as_secs_f64());
        match (&st.live, st.events) {
            (Some(li), _) => println!(
                "\nlive run {} ({} namespaces, kernel {}): {:.1} s in {wall:.2} s wall, {} bottleneck packets",
                li.run_id,
                li.namespaces,
                li.kernel,
                st.duration.as_secs_f64(),
                st.bottleneck_packets
            ),
            (None, events) => {
                let events = events.unwrap_or(0);
                println!(
                    "\nsimulated {:.1} s in {wall:.2} s wall ({events} events, {:.1} M events/s, {} bottleneck packets)",
                    st.duration.as_secs_f64(),
                    events as f64 / wall.max(1e-9) / 1e6,
                    st.bottleneck_packets
                )
            }
        }
        println!("results: {}", r.dir.join("summary.json").display());
        if let Some(Ok(p)) = &r.report {
            println!("report:  {}", p.display());
        }
        if let Some(Ok(p)) = &r.png {
            println!("charts:  {}", p.display());
        }
    }
}

/// Print the verdict: a headline, then warnings that explain themselves.
fn print_verdict(v: &l4s_metrics::summary::VerdictSummary) {
    let tag = match v.level.as_str() {
        "good" => "OK",
        "warn" => "WARNING",
        _ => "PROBLEM",
    };
    println!("{tag}: {}", clean(&v.headline));
    for w in &v.findings {
        println!("  - [{}] {}", w.severity, clean(&w.text));
    }
    println!();
}

/// Text for the terminal: control characters (escape sequences a hostile scenario name
/// could carry) become U+FFFD.
pub fn clean(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() && c != '\n' { '\u{fffd}' } else { c })
        .collect()
}

/// A flag that the first SIGINT or SIGTERM sets; with `exit_on_second`, a second one exits
/// at once with status 130 (results are written beside their place and renamed, so nothing
/// half-written is left). A signal within [`l4s_fwd::netns::SAME_INTERRUPT`] of the first is the same
/// interrupt ([`l4s_fwd::netns::Interrupts`]): GNU `timeout` sends its signal to the command and then to its process group,
/// so the command gets it twice at once. The live testbed's own handler does its clean-up
/// on a second signal, so a live run asks for the flag alone.
pub fn interrupt_flag(exit_on_second: bool) -> Result<std::sync::Arc<std::sync::atomic::AtomicBool>, l4s_lab::Error> {
    use std::sync::atomic::Ordering;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let setup = |e: std::io::Error| {
        l4s_lab::Error::new(
            l4s_lab::ErrorKind::Setup,
            format!("cannot install the interrupt handler: {e}"),
        )
    };
    let mut signals = signal_hook::iterator::Signals::new([signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM])
        .map_err(setup)?;
    let flag = stop.clone();
    std::thread::Builder::new()
        .name("l4s-interrupt".into())
        .spawn(move || {
            let mut interrupts = l4s_fwd::netns::Interrupts::default();
            for _ in signals.forever() {
                match interrupts.on_signal() {
                    l4s_fwd::netns::Interrupt::First => flag.store(true, Ordering::SeqCst),
                    l4s_fwd::netns::Interrupt::Second if exit_on_second => std::process::exit(130),
                    _ => {}
                }
            }
        })
        .map_err(setup)?;
    Ok(stop)
}

/// A JSON object of these entries in this order (a map would sort them).
pub struct InOrder<'a, T>(pub Vec<(String, &'a T)>);

impl<T: serde::Serialize> serde::Serialize for InOrder<'_, T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.0.iter().map(|(k, v)| (k, v)))
    }
}
