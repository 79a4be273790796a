//! Bianchi's analytic model of saturated 802.11 contention (G. Bianchi, "Performance
//! analysis of the IEEE 802.11 distributed coordination function", IEEE JSAC 18(3), 2000):
//! the reference that the [`super::edca`] engine is validated against.
//!
//! n stations always have a frame to send. Each draws its backoff uniformly from
//! 0..W_i − 1 slots in backoff stage i (W_0 = W = CWmin + 1, doubling up to stage m with
//! W_m = CWmax + 1), and every attempt collides with the same probability p whatever its
//! stage (the decoupling assumption). A station then attempts in a slot with probability
//!
//! τ = 2(1 − 2p) / \[(1 − 2p)(W + 1) + pW(1 − (2p)^m)\] = 2 / \[1 + W + pW Σ_{i<m} (2p)^i\],
//!
//! (the second form has no 0/0 at p = ½), and p = 1 − (1 − τ)^(n−1). The fixed point is
//! found by bisection on p. From it, with P_tr = 1 − (1 − τ)^n the probability that a slot
//! is busy and P_s = nτ(1 − τ)^(n−1) / P_tr that a busy slot is a success, the saturation
//! throughput is
//!
//! S = P_s P_tr E\[L\] / \[(1 − P_tr) σ + P_tr P_s T_s + P_tr (1 − P_s) T_c\].
//!
//! The model's counters decrement once in every slot, busy ones included, which is the
//! EDCA rule of [`super::edca::Countdown::Edca`] (a decrement at the slot boundary that ends
//! AIFS); under the DCF rule ([`super::edca::Countdown::Dcf`]) stations attempt a little
//! less often and p is lower than the model's.

use super::edca::check_cw;
use super::WifiError;
use l4s_core::Dur;

/// Bianchi's fixed point: the per-slot attempt probability τ and the conditional collision
/// probability p of a station.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FixedPoint {
    pub tau: f64,
    pub p: f64,
}

/// τ(p) for a first window `w` = CWmin + 1 and `m` doublings.
fn attempt_probability(p: f64, w: f64, m: u32) -> f64 {
    let mut sum = 0.0;
    let mut term = 1.0;
    for _ in 0..m {
        sum += term;
        term *= 2.0 * p;
    }
    2.0 / (1.0 + w + p * w * sum)
}

/// The fixed point for `stations` saturated stations with contention windows `cw_min` and
/// `cw_max` (each 2^k − 1, `cw_min` ≤ `cw_max`). Errors name `stations` (at least 1),
/// `cw_min` or `cw_max`.
pub fn fixed_point(stations: u32, cw_min: u16, cw_max: u16) -> Result<FixedPoint, WifiError> {
    if stations == 0 {
        return Err(WifiError::new("stations", "at least 1 station", 0));
    }
    check_cw("cw_min", cw_min)?;
    check_cw("cw_max", cw_max)?;
    if cw_min > cw_max {
        return Err(WifiError::new("cw_min", format!("at most cw_max ({cw_max})"), cw_min));
    }
    let w = f64::from(cw_min) + 1.0;
    // Both are 2^k − 1, so the ratio of the windows is a power of two.
    let m = ((u32::from(cw_max) + 1) / (u32::from(cw_min) + 1)).trailing_zeros();
    let others = f64::from(stations - 1);
    // f(p) = p − (1 − (1 − τ(p))^(n−1)) increases from f(0) ≤ 0 to f(1) > 0.
    let f = |p: f64| p - (1.0 - (1.0 - attempt_probability(p, w, m)).powf(others));
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if f(mid) < 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let p = if stations == 1 { 0.0 } else { 0.5 * (lo + hi) };
    Ok(FixedPoint {
        tau: attempt_probability(p, w, m),
        p,
    })
}

/// The durations of the model's three kinds of slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotTimes {
    /// An idle slot, σ.
    pub idle: Dur,
    /// A success, T_s: data, SIFS, Ack and the AIFS (DIFS) that follows.
    pub success: Dur,
    /// A collision, T_c: data and the interframe space that follows (DIFS, or EIFS).
    pub collision: Dur,
}

/// Saturation throughput in bits per second of `stations` stations at fixed point `fp`,
/// each success carrying `payload_bits`.
pub fn saturation_throughput(stations: u32, fp: FixedPoint, payload_bits: u64, times: SlotTimes) -> f64 {
    let n = f64::from(stations);
    let p_tr = 1.0 - (1.0 - fp.tau).powf(n);
    if p_tr <= 0.0 {
        return 0.0;
    }
    let p_s = n * fp.tau * (1.0 - fp.tau).powf(n - 1.0) / p_tr;
    let mean_slot = (1.0 - p_tr) * times.idle.as_secs_f64()
        + p_tr * p_s * times.success.as_secs_f64()
        + p_tr * (1.0 - p_s) * times.collision.as_secs_f64();
    p_s * p_tr * payload_bits as f64 / mean_slot
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_points_are_bianchis() {
        // n, τ, p for CW 15/1023 (W = 16, m = 6).
        for (n, tau, p) in [
            (1, 0.1176, 0.0),
            (2, 0.1046, 0.1046),
            (5, 0.0762, 0.2715),
            (10, 0.0525, 0.3844),
            (20, 0.0339, 0.4809),
            (50, 0.0183, 0.5953),
        ] {
            let fp = fixed_point(n, 15, 1023).unwrap();
            assert!((fp.tau - tau).abs() <= 0.0005, "n = {n}: tau {}", fp.tau);
            assert!((fp.p - p).abs() <= 0.0005, "n = {n}: p {}", fp.p);
            // p = 1 − (1 − τ)^(n−1) holds at the solution.
            let implied = 1.0 - (1.0 - fp.tau).powi(n as i32 - 1);
            assert!((fp.p - implied).abs() < 1e-9, "n = {n}");
        }
        // One stage (CWmin = CWmax): τ = 2 / (W + 1) whatever the collisions.
        for n in [1, 2, 5, 10, 20, 50] {
            let fp = fixed_point(n, 63, 63).unwrap();
            assert!((fp.tau - 2.0 / 65.0).abs() < 1e-12, "n = {n}: {}", fp.tau);
        }
    }

    #[test]
    fn throughput_of_11a_at_54_mbps() {
        // 1534-byte MPDUs at 54 Mb/s (248 us), Ack at 24 Mb/s (28 us), DIFS 34 us:
        // T_s = 248 + 16 + 28 + 34 = 326 us, T_c = 248 + 34 = 282 us.
        let times = SlotTimes {
            idle: Dur::from_micros(9),
            success: Dur::from_micros(326),
            collision: Dur::from_micros(282),
        };
        for (n, mbps) in [(5, 30.13), (10, 28.30), (20, 26.32)] {
            let s = saturation_throughput(n, fixed_point(n, 15, 1023).unwrap(), 12_000, times) / 1e6;
            assert!((s - mbps).abs() < 0.005, "n = {n}: {s} Mb/s");
        }
    }

    #[test]
    fn invalid_models_are_named() {
        assert_eq!(fixed_point(0, 15, 1023).unwrap_err().parameter, "stations");
        assert_eq!(fixed_point(5, 16, 1023).unwrap_err().parameter, "cw_min");
        assert_eq!(fixed_point(5, 15, 1000).unwrap_err().parameter, "cw_max");
        assert_eq!(fixed_point(5, 31, 15).unwrap_err().parameter, "cw_min");
    }
}
