//! Any byte string as an Ethernet frame: parsing, classification and CE marking must never
//! panic, offsets stay inside the frame, and marking changes only ECN-capable IP packets.
#![no_main]

use l4s_core::{QueuePacket, Time};
use l4s_fwd::packet::{parse, Frame, Parsed};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Parsed::Ip(i) = parse(data) {
        assert!(i.l3_end as usize <= data.len());
        assert!(i.l4_offset.is_none_or(|o| o <= i.l3_end));
        assert!(i.payload_offset.is_none_or(|o| o <= i.l3_end));
    }
    if let Ok(mut f) = Frame::new(data.to_vec().into_boxed_slice(), data.len(), Time::ZERO) {
        let ecn = f.ecn();
        let _ = f.flow_hash();
        assert_eq!(f.set_ce(), ecn.is_ect());
        if !ecn.is_ect() {
            assert_eq!(f.bytes(), data);
        }
    }
});
