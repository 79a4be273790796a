//! Integer time and rates (DESIGN.md principle 2).
//!
//! [`Time`] is an instant in nanoseconds since the start of a run; [`Dur`] is a span in
//! nanoseconds; [`Rate`] is bits per second. Arithmetic saturates instead of wrapping.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::ops::{Add, AddAssign, Div, Mul, Sub, SubAssign};

/// An instant: nanoseconds since the start of the run (or of the process, live).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time(pub u64);

/// A span of time in nanoseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Dur(pub u64);

impl Time {
    pub const ZERO: Time = Time(0);
    pub const MAX: Time = Time(u64::MAX);
    pub const fn from_nanos(ns: u64) -> Time {
        Time(ns)
    }
    pub const fn from_micros(us: u64) -> Time {
        Time(us * 1_000)
    }
    pub const fn from_millis(ms: u64) -> Time {
        Time(ms * 1_000_000)
    }
    pub const fn from_secs(s: u64) -> Time {
        Time(s * 1_000_000_000)
    }
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    /// Span since `earlier`, zero if `earlier` is later.
    pub fn since(self, earlier: Time) -> Dur {
        Dur(self.0.saturating_sub(earlier.0))
    }
    pub fn min(self, o: Time) -> Time {
        Time(self.0.min(o.0))
    }
    pub fn max(self, o: Time) -> Time {
        Time(self.0.max(o.0))
    }
}

impl Dur {
    pub const ZERO: Dur = Dur(0);
    pub const MAX: Dur = Dur(u64::MAX);
    pub const fn from_nanos(ns: u64) -> Dur {
        Dur(ns)
    }
    pub const fn from_micros(us: u64) -> Dur {
        Dur(us * 1_000)
    }
    pub const fn from_millis(ms: u64) -> Dur {
        Dur(ms * 1_000_000)
    }
    pub const fn from_secs(s: u64) -> Dur {
        Dur(s * 1_000_000_000)
    }
    /// From seconds as a float (for derived quantities only; rounds to the nearest ns).
    pub fn from_secs_f64(s: f64) -> Dur {
        if s.is_nan() || s <= 0.0 {
            Dur(0)
        } else if s >= u64::MAX as f64 / 1e9 {
            Dur::MAX
        } else {
            Dur(round_positive(s * 1e9))
        }
    }
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    pub fn as_micros(self) -> u64 {
        self.0 / 1_000
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }
    pub fn is_zero(self) -> bool {
        self.0 == 0
    }
    pub fn min(self, o: Dur) -> Dur {
        Dur(self.0.min(o.0))
    }
    pub fn max(self, o: Dur) -> Dur {
        Dur(self.0.max(o.0))
    }
    pub fn saturating_sub(self, o: Dur) -> Dur {
        Dur(self.0.saturating_sub(o.0))
    }
    /// Multiply by a non-negative factor, rounding to the nearest nanosecond.
    pub fn mul_f64(self, f: f64) -> Dur {
        Dur::from_secs_f64(self.as_secs_f64() * f)
    }
}

impl Add<Dur> for Time {
    type Output = Time;
    fn add(self, d: Dur) -> Time {
        Time(self.0.saturating_add(d.0))
    }
}
impl AddAssign<Dur> for Time {
    fn add_assign(&mut self, d: Dur) {
        *self = *self + d;
    }
}
impl Sub<Dur> for Time {
    type Output = Time;
    fn sub(self, d: Dur) -> Time {
        Time(self.0.saturating_sub(d.0))
    }
}
impl Sub<Time> for Time {
    type Output = Dur;
    /// Saturating: an earlier minus a later instant is zero.
    fn sub(self, o: Time) -> Dur {
        self.since(o)
    }
}
impl Add for Dur {
    type Output = Dur;
    fn add(self, o: Dur) -> Dur {
        Dur(self.0.saturating_add(o.0))
    }
}
impl AddAssign for Dur {
    fn add_assign(&mut self, o: Dur) {
        *self = *self + o;
    }
}
impl Sub for Dur {
    type Output = Dur;
    fn sub(self, o: Dur) -> Dur {
        Dur(self.0.saturating_sub(o.0))
    }
}
impl SubAssign for Dur {
    fn sub_assign(&mut self, o: Dur) {
        *self = *self - o;
    }
}
impl Mul<u64> for Dur {
    type Output = Dur;
    fn mul(self, k: u64) -> Dur {
        Dur(self.0.saturating_mul(k))
    }
}
impl Div<u64> for Dur {
    type Output = Dur;
    fn div(self, k: u64) -> Dur {
        Dur(self.0 / k.max(1))
    }
}

/// `ns` in the largest unit it reaches, exactly (trailing zeros dropped): `1.5s`,
/// `1.234567ms`, `250us`; parsed back by [`parse_dur`](crate::units::parse_dur) to the same value.
fn fmt_ns(ns: u64, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let (unit, per, digits) = if ns == 0 {
        return write!(f, "0s");
    } else if ns >= 1_000_000_000 {
        ("s", 1_000_000_000, 9)
    } else if ns >= 1_000_000 {
        ("ms", 1_000_000, 6)
    } else if ns >= 1_000 {
        ("us", 1_000, 3)
    } else {
        return write!(f, "{ns}ns");
    };
    let (whole, part) = (ns / per, ns % per);
    if part == 0 {
        return write!(f, "{whole}{unit}");
    }
    let frac = format!("{part:0digits$}");
    write!(f, "{whole}.{}{unit}", frac.trim_end_matches('0'))
}
impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_ns(self.0, f)
    }
}
impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_ns(self.0, f)
    }
}

/// A rate in bits per second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rate(pub u64);

impl Rate {
    pub const ZERO: Rate = Rate(0);
    pub const fn bps(b: u64) -> Rate {
        Rate(b)
    }
    pub const fn kbps(k: u64) -> Rate {
        Rate(k * 1_000)
    }
    pub const fn mbps(m: u64) -> Rate {
        Rate(m * 1_000_000)
    }
    pub const fn gbps(g: u64) -> Rate {
        Rate(g * 1_000_000_000)
    }
    /// From bytes per second.
    pub fn from_bytes_per_sec(bps: f64) -> Rate {
        if bps.is_nan() || bps <= 0.0 {
            Rate(0)
        } else {
            Rate(round_positive(bps * 8.0))
        }
    }
    pub const fn bits_per_sec(self) -> u64 {
        self.0
    }
    pub fn bytes_per_sec(self) -> f64 {
        self.0 as f64 / 8.0
    }
    /// Time to serialise `bytes` at this rate, rounded up to the next nanosecond.
    /// A zero rate never finishes (`Dur::MAX`).
    pub fn tx_time(self, bytes: u64) -> Dur {
        if self.0 == 0 {
            return Dur::MAX;
        }
        // In 64 bits when the product fits (any packet: up to 2.3 GB), the same result as
        // in 128 bits without the slower wide division.
        if let Some(num) = bytes.checked_mul(8_000_000_000) {
            return Dur(num.div_ceil(self.0));
        }
        let num = bytes as u128 * 8 * 1_000_000_000;
        Dur(num.div_ceil(self.0 as u128).min(u64::MAX as u128) as u64)
    }
    /// Bytes sent at this rate during `d` (rounded down).
    pub fn bytes_in(self, d: Dur) -> u64 {
        (self.0 as u128 * d.0 as u128 / 8 / 1_000_000_000) as u64
    }
    /// The rate at which `bytes` cross in `d`.
    pub fn from_bytes_over(bytes: u64, d: Dur) -> Rate {
        if d.0 == 0 {
            return Rate(0);
        }
        Rate((bytes as u128 * 8 * 1_000_000_000 / d.0 as u128).min(u64::MAX as u128) as u64)
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0 as f64;
        if b >= 1e9 {
            write!(f, "{:.3}Gbit", b / 1e9)
        } else if b >= 1e6 {
            write!(f, "{:.3}Mbit", b / 1e6)
        } else if b >= 1e3 {
            write!(f, "{:.3}kbit", b / 1e3)
        } else {
            write!(f, "{}bit", self.0)
        }
    }
}

// Scenario files write units as text ("20ms", "100Mbit"); results write them the same way.
impl Serialize for Dur {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}
impl Serialize for Time {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}
impl Serialize for Rate {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{}bit", self.0))
    }
}
/// A text field's error: the wording for a value of the wrong type, but a missing key's
/// own error kept (it names the key).
fn text_error<E: serde::de::Error>(e: E, expected: &str) -> E {
    if e.to_string().starts_with("missing field") {
        e
    } else {
        E::custom(expected)
    }
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d).map_err(|e| {
            text_error(
                e,
                "expected a duration as text with a unit, such as \"20ms\" or \"1.5s\"",
            )
        })?;
        crate::units::parse_dur(&s).map_err(serde::de::Error::custom)
    }
}
impl<'de> Deserialize<'de> for Time {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Dur::deserialize(d).map(|x| Time(x.0))
    }
}
impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d).map_err(|e| {
            text_error(
                e,
                "expected a rate as text with a unit, such as \"100Mbit\" or \"1Gbit\"",
            )
        })?;
        crate::units::parse_rate(&s).map_err(serde::de::Error::custom)
    }
}

/// `x.round() as u64` for `x > 0` (not NaN), saturating at `u64::MAX`, without the call into
/// libm that `f64::round` is on x86-64's baseline (no SSE4.1 `roundsd`): the integer part
/// and the fraction are exact (below 2^52 the subtraction is; above, `x` is an integer),
/// and a fraction of one half rounds away from zero, as `round` does.
#[inline]
fn round_positive(x: f64) -> u64 {
    if x >= 18_446_744_073_709_551_616.0 {
        return u64::MAX;
    }
    let whole = x as u64;
    whole + u64::from(x - whole as f64 >= 0.5)
}

#[cfg(test)]
mod tests {
    #[test]
    fn round_positive_is_round_as_u64() {
        let mut xs = vec![
            1e-300,
            0.25,
            0.5,
            0.49999999999999994,
            0.5000000000000001,
            1.5,
            2.5,
            4503599627370495.5,
            4503599627370496.0,
            9007199254740993.0,
            9.223372036854776e18,
            (u64::MAX as f64).next_down(),
            u64::MAX as f64,
            f64::MAX,
            f64::INFINITY,
        ];
        let mut r = crate::Rng::new(7);
        for _ in 0..200_000 {
            let e = (r.next_u64() % 70) as i32 - 4;
            xs.push(r.next_f64() * 2f64.powi(e));
            // Ties and their neighbours.
            let t = (r.next_u64() % (1 << 40)) as f64 + 0.5;
            xs.extend([t, t.next_down(), t.next_up()]);
        }
        for x in xs {
            let want = x.round().min(u64::MAX as f64) as u64;
            assert_eq!(super::round_positive(x), want, "{x:e}");
        }
    }

    use super::*;
    #[test]
    fn arithmetic_saturates() {
        assert_eq!(Time(5) - Time(9), Dur(0));
        assert_eq!(Time(u64::MAX) + Dur(1), Time::MAX);
        assert_eq!(Time::from_millis(20) - Time::from_millis(5), Dur::from_millis(15));
    }
    #[test]
    fn tx_time_is_exact() {
        // 1500 B at 100 Mbit/s = 120 us exactly.
        assert_eq!(Rate::mbps(100).tx_time(1500), Dur::from_micros(120));
        // 1514 B at 1 Gbit/s = 12.112 us.
        assert_eq!(Rate::gbps(1).tx_time(1514), Dur(12_112));
        // Rounds up.
        assert_eq!(Rate(3).tx_time(1), Dur(2_666_666_667));
        assert_eq!(Rate::mbps(100).bytes_in(Dur::from_secs(1)), 12_500_000);
        assert_eq!(Rate::from_bytes_over(12_500_000, Dur::from_secs(1)), Rate::mbps(100));
        assert_eq!(Rate::ZERO.tx_time(1), Dur::MAX);
    }
    #[test]
    fn tx_time_is_the_same_either_side_of_the_64_bit_product() {
        let wide = |r: Rate, b: u64| {
            let n = b as u128 * 8_000_000_000;
            Dur(n.div_ceil(r.0 as u128).min(u64::MAX as u128) as u64)
        };
        let edge = u64::MAX / 8_000_000_000;
        for r in [Rate(1), Rate(7), Rate::mbps(100), Rate::gbps(400), Rate(u64::MAX)] {
            for b in [0, 1, 1514, 65_535, edge - 1, edge, edge + 1, u64::MAX / 2, u64::MAX] {
                assert_eq!(r.tx_time(b), wide(r, b), "{r:?} {b}");
            }
        }
    }
    #[test]
    fn display() {
        assert_eq!(Dur::from_millis(20).to_string(), "20ms");
        assert_eq!(Dur(1_500_000).to_string(), "1.5ms");
        assert_eq!(Dur::from_millis(1500).to_string(), "1.5s");
        assert_eq!(Dur(1_234_567_891).to_string(), "1.234567891s");
        assert_eq!(Dur(2_250).to_string(), "2.25us");
        assert_eq!(Dur(999).to_string(), "999ns");
        assert_eq!(Dur(0).to_string(), "0s");
        assert_eq!(Rate::mbps(100).to_string(), "100.000Mbit");
        // Exact: what is written reads back as the same duration.
        for ns in [
            1,
            999,
            1_000,
            1_001,
            1_999_999,
            20_000_000,
            1_500_000_000,
            1_000_000_007,
            86_400_123_456_789,
        ] {
            assert_eq!(crate::units::parse_dur(&Dur(ns).to_string()), Ok(Dur(ns)), "{ns}");
        }
    }
}
