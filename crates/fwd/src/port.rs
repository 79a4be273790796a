//! The two halves of a forwarder's interface: [`Input`] reads frames (batched or one at a
//! time) into pool buffers and classifies them, [`Output`] sends the frames a link model
//! delivers, keeping them in order while the interface is busy. The two-port forwarder
//! ([`crate::router`]) and the shared-medium forwarder ([`crate::medium`]) are built from
//! them.

use std::collections::{BTreeMap, VecDeque};

use l4s_core::{Dur, Time};

use crate::afpacket::{monotonic_now, IoMode, PacketSocket, Received, RecvScratch};
use crate::error::FwdError;
use crate::packet::{BufferPool, Frame, Malformed};

/// The reading side of an interface and its counters.
pub(crate) struct Input {
    batch: usize,
    staging: Vec<Box<[u8]>>,
    results: Vec<Received>,
    scratch: RecvScratch,
    spare: Box<[u8]>,
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub non_ip: u64,
    pub malformed: [u64; 6],
    pub oversize: u64,
    pub no_buffer: u64,
    pub kernel_drops: u64,
    pub unstamped: u64,
    /// The latest entry time so far.
    last_enqueue: Time,
}

impl Input {
    pub fn new(batch: usize, buf_size: usize) -> Input {
        Input {
            batch,
            staging: Vec::with_capacity(batch),
            results: Vec::with_capacity(batch),
            scratch: RecvScratch::new(batch),
            spare: vec![0u8; buf_size].into_boxed_slice(),
            rx_packets: 0,
            rx_bytes: 0,
            non_ip: 0,
            malformed: [0; 6],
            oversize: 0,
            no_buffer: 0,
            kernel_drops: 0,
            unstamped: 0,
            last_enqueue: Time::ZERO,
        }
    }

    /// Whether a [`Input::receive`] that returned `got` frames may have left some waiting:
    /// it read its four batches full.
    pub fn may_have_more(&self, got: usize) -> bool {
        got >= 4 * self.batch
    }

    /// The malformed frames per reason, for the statistics.
    pub fn malformed_counts(&self) -> BTreeMap<&'static str, u64> {
        Malformed::ALL
            .iter()
            .map(|m| (m.name(), self.malformed[m.index()]))
            .collect()
    }

    /// Read what is waiting on `sock`, up to four batches, into `out`: each frame stamped
    /// with the kernel's receive time (the time it queued from: a frame that waited in the
    /// socket while this thread was held back has queued that long already), never before
    /// the previous one, so that queues stay in order. Returns the frames read.
    pub fn receive(
        &mut self,
        sock: &PacketSocket,
        mode: IoMode,
        pool: &mut BufferPool,
        now: Time,
        out: &mut Vec<Frame>,
    ) -> Result<usize, FwdError> {
        let mut total = 0;
        for _ in 0..4 {
            let got = match mode {
                IoMode::Batched => self.receive_batch(sock, pool, now, out)?,
                IoMode::Single => self.receive_single(sock, pool, now, out)?,
            };
            total += got;
            if got < self.batch {
                break;
            }
        }
        Ok(total)
    }

    fn receive_batch(
        &mut self,
        sock: &PacketSocket,
        pool: &mut BufferPool,
        now: Time,
        out: &mut Vec<Frame>,
    ) -> Result<usize, FwdError> {
        let want = self.batch;
        while self.staging.len() < want {
            match pool.get() {
                Some(b) => self.staging.push(b),
                None => break,
            }
        }
        if self.staging.is_empty() {
            // Every buffer is in use: read into the spare one and drop.
            let mut n = 0;
            while let Some(r) = sock.recv_one(&mut self.spare)? {
                if let Received::Frame(len) | Received::Oversize(len) = r {
                    self.rx_packets += 1;
                    self.rx_bytes += len as u64;
                    self.no_buffer += 1;
                }
                n += 1;
                if n >= want {
                    break;
                }
            }
            return Ok(n);
        }
        let mut results = std::mem::take(&mut self.results);
        let res = sock.recv_batch(&mut self.staging, &mut self.scratch, &mut results);
        let got = results.len();
        // Take the filled buffers off the front of the staging area, in order (an empty
        // boxed slice does not allocate).
        for (i, r) in results.iter().enumerate() {
            let buf = std::mem::take(&mut self.staging[i]);
            let stamp = self.scratch.stamp(i);
            self.handle(buf, *r, stamp, now, pool, out);
        }
        self.staging.drain(..got);
        self.results = results;
        res?;
        Ok(got)
    }

    fn receive_single(
        &mut self,
        sock: &PacketSocket,
        pool: &mut BufferPool,
        now: Time,
        out: &mut Vec<Frame>,
    ) -> Result<usize, FwdError> {
        let want = self.batch;
        let mut n = 0;
        while n < want {
            let Some(mut buf) = pool.get() else {
                return self.receive_batch(sock, pool, now, out).map(|m| n + m);
            };
            match sock.recv_one_at(&mut buf) {
                Ok(Some((r, stamp))) => {
                    n += 1;
                    self.handle(buf, r, stamp, now, pool, out);
                }
                Ok(None) => {
                    pool.put(buf);
                    break;
                }
                Err(e) => {
                    pool.put(buf);
                    return Err(e);
                }
            }
        }
        Ok(n)
    }

    fn handle(
        &mut self,
        buf: Box<[u8]>,
        r: Received,
        stamp: Option<Time>,
        now: Time,
        pool: &mut BufferPool,
        out: &mut Vec<Frame>,
    ) {
        let len = match r {
            Received::Skip => return pool.put(buf),
            Received::Oversize(len) => {
                self.rx_packets += 1;
                self.rx_bytes += len as u64;
                self.oversize += 1;
                return pool.put(buf);
            }
            Received::Frame(len) => len,
        };
        self.rx_packets += 1;
        self.rx_bytes += len as u64;
        if stamp.is_none() {
            self.unstamped += 1;
        }
        let arrival = stamp.unwrap_or(now).min(now).max(self.last_enqueue);
        self.last_enqueue = arrival;
        match Frame::new(buf, len, arrival) {
            Err((buf, m)) => {
                self.malformed[m.index()] += 1;
                pool.put(buf);
            }
            Ok(frame) => {
                if frame.ip().is_none() {
                    self.non_ip += 1;
                }
                out.push(frame);
            }
        }
    }
}

/// The sending side of an interface: frames go out in the order the link delivered them;
/// an output that is busy keeps them and is tried again every 20 µs for up to 100 ms after
/// a frame was due, then the frame counts as a send error.
pub(crate) struct Output {
    backlog: VecDeque<(Frame, Time)>,
    retry_at: Option<Time>,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub tx_retries: u64,
    pub tx_errors: u64,
    /// How late frames went out after the link said they leave.
    pub lateness: crate::lateness::Lateness,
}

impl Output {
    pub fn new() -> Output {
        Output {
            backlog: VecDeque::new(),
            retry_at: None,
            tx_packets: 0,
            tx_bytes: 0,
            tx_retries: 0,
            tx_errors: 0,
            lateness: crate::lateness::Lateness::new(),
        }
    }

    /// Send a frame the link delivered, due at `due` (after any the output refused before).
    pub fn send(&mut self, sock: &PacketSocket, pool: &mut BufferPool, f: Frame, due: Time) {
        if self.backlog.is_empty() {
            if let Some(f) = self.try_send(sock, pool, f, due) {
                self.backlog.push_back((f, due));
            }
        } else {
            self.backlog.push_back((f, due));
        }
    }

    /// Send one frame; give it back if the output is busy and it is not too late to wait.
    fn try_send(&mut self, sock: &PacketSocket, pool: &mut BufferPool, f: Frame, due: Time) -> Option<Frame> {
        let now = monotonic_now();
        match sock.send(f.bytes()) {
            Ok(true) => {
                self.lateness.record(now.since(due).as_nanos());
                self.tx_packets += 1;
                self.tx_bytes += f.len() as u64;
                self.retry_at = None;
                pool.put(f.into_buffer());
                None
            }
            Ok(false) if now.since(due) < Dur::from_millis(100) => {
                // The output is busy: keep the frame and try again shortly.
                self.tx_retries += 1;
                self.retry_at = Some(now + Dur::from_micros(20));
                Some(f)
            }
            Ok(false) | Err(_) => {
                self.tx_errors += 1;
                self.retry_at = None;
                pool.put(f.into_buffer());
                None
            }
        }
    }

    /// Try the frames the output refused again, in order, once their retry time came.
    pub fn flush(&mut self, sock: &PacketSocket, pool: &mut BufferPool, now: Time) {
        if self.retry_at.is_some_and(|t| now < t) {
            return;
        }
        while let Some((f, due)) = self.backlog.pop_front() {
            if let Some(f) = self.try_send(sock, pool, f, due) {
                self.backlog.push_front((f, due));
                return;
            }
        }
    }

    /// When frames the output refused are to be tried again.
    pub fn retry_at(&self) -> Option<Time> {
        self.retry_at.filter(|_| !self.backlog.is_empty())
    }
}
