#![allow(dead_code)]
//! A minimal packet for the tests.

use l4s_aqm::{Dequeued, Dropped, Enqueued, Qdisc, QueueId};
use l4s_core::{Ecn, QueuePacket, Time};

#[derive(Clone, Debug, PartialEq)]
pub struct TestPkt {
    pub id: u64,
    pub len: u32,
    pub mem: u32,
    pub ecn: Ecn,
    pub dscp: u8,
    pub port: Option<u16>,
    pub hash: u32,
}

impl QueuePacket for TestPkt {
    fn wire_len(&self) -> u32 {
        self.len
    }
    fn mem_size(&self) -> u32 {
        self.mem
    }
    fn ecn(&self) -> Ecn {
        self.ecn
    }
    fn set_ce(&mut self) -> bool {
        if self.ecn == Ecn::NotEct {
            false
        } else {
            self.ecn = Ecn::Ce;
            true
        }
    }
    fn dscp(&self) -> u8 {
        self.dscp
    }
    fn dst_port(&self) -> Option<u16> {
        self.port
    }
    fn flow_hash(&self) -> u32 {
        self.hash
    }
}

pub fn pkt(ecn: Ecn) -> TestPkt {
    TestPkt {
        id: 0,
        len: 1514,
        mem: 1514,
        ecn,
        dscp: 0,
        port: None,
        hash: 0,
    }
}

pub fn pkt_id(ecn: Ecn, id: u64) -> TestPkt {
    TestPkt { id, ..pkt(ecn) }
}

pub fn ms(x: u64) -> Time {
    Time::from_millis(x)
}

pub fn queued(e: &Enqueued<TestPkt>) -> Option<QueueId> {
    match e {
        Enqueued::Queued { queue, .. } => Some(*queue),
        Enqueued::Dropped(_) => None,
    }
}

pub fn deq(q: &mut dyn Qdisc<TestPkt>, now: Time, drops: &mut Vec<Dropped<TestPkt>>) -> Option<Dequeued<TestPkt>> {
    q.dequeue(now, drops)
}
