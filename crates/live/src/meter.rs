//! Per-flow measurement of a live run: the shared meters of [`l4s_measure`], with what a
//! live flow adds (its first error, the datagrams its socket refused), shared between a
//! flow's sender and receiver threads behind a lock.

use l4s_measure::FlowMeter;
pub use l4s_measure::{AppMeter, MediaMeter, Window};
use std::sync::{Arc, Mutex, MutexGuard};

/// One live flow's meters.
#[derive(Debug)]
pub struct LiveFlow {
    pub meter: FlowMeter,
    /// The flow could not run (e.g. a socket error): the first error, reported at the end.
    pub error: Option<String>,
    /// Datagrams the sender's socket refused (full buffer, ICMP error): lost before the
    /// network, counted as sent.
    pub send_errors: u64,
}

impl std::ops::Deref for LiveFlow {
    type Target = FlowMeter;
    fn deref(&self) -> &FlowMeter {
        &self.meter
    }
}

impl std::ops::DerefMut for LiveFlow {
    fn deref_mut(&mut self) -> &mut FlowMeter {
        &mut self.meter
    }
}

/// A meter shared by the threads of one flow.
#[derive(Clone, Debug)]
pub struct SharedMeter(Arc<Mutex<LiveFlow>>);

impl SharedMeter {
    pub fn new(meter: FlowMeter) -> SharedMeter {
        SharedMeter(Arc::new(Mutex::new(LiveFlow {
            meter,
            error: None,
            send_errors: 0,
        })))
    }
    /// Lock it; a thread that panicked while holding the lock left consistent counters
    /// (each update is a few additions), so the poison is ignored.
    pub fn lock(&self) -> MutexGuard<'_, LiveFlow> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
    /// Record the first error of the flow.
    pub fn fail(&self, e: impl Into<String>) {
        let mut m = self.lock();
        if m.error.is_none() {
            m.error = Some(e.into());
        }
    }
}

/// A live flow's meter: loss is what was sent and never arrived (the testbed does not see
/// every drop); `per_interval_loss` for flows whose sends and arrivals pair one to one
/// (datagrams; not kernel TCP, whose retransmissions count as sends again).
pub fn flow_meter(window: Window, budget: Option<l4s_core::Dur>, per_interval_loss: bool) -> FlowMeter {
    FlowMeter::new(
        window,
        budget,
        l4s_measure::LossCount::Missing {
            per_interval: per_interval_loss,
        },
        true,
    )
}
