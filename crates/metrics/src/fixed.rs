//! Floats as decimal text with a fixed number of decimals, exactly as `format!("{v:.N}")`
//! writes them, for the writers that print many of them (the snapshot CSVs, the report's
//! chart coordinates).
//!
//! The standard formatter rounds the float's exact binary value to `N` decimals (ties to
//! even), which costs it an exact multi-precision conversion for every number. For the
//! numbers these writers print (below 2^32 - 1 once scaled by 10^N) one float
//! multiplication gives the same digits: its rounding error is below 2^-21, so it cannot
//! cross a rounding boundary unless the scaled value is within 10^-5 of a tie, and there
//! the error itself, which a fused multiply-add gives exactly, tells on which side the
//! exact value lies. Large and non-finite values go to the standard formatter, so the text
//! is the same byte for byte in every case.
//!
//! [`plain_decimal`] reads such text back, as `str::parse` would, without its general
//! algorithm.

use std::fmt;

/// `v` with `decimals` digits after the point, as `format!("{v:.decimals$}")`; fill, width
/// and alignment of the format string apply as to a string.
pub fn fixed(v: f64, decimals: u8) -> Fixed {
    Fixed { v, decimals }
}

/// See [`fixed`].
#[derive(Clone, Copy, Debug)]
pub struct Fixed {
    v: f64,
    decimals: u8,
}

impl fmt::Display for Fixed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = [0u8; BUF];
        let text = match digits(self.v, self.decimals, &mut buf) {
            Some(start) => ascii(&buf[start..]),
            None => return f.pad(&format!("{:.*}", usize::from(self.decimals), self.v)),
        };
        if f.width().is_some() {
            f.pad(text)
        } else {
            f.write_str(text)
        }
    }
}

/// Append `v` with `decimals` digits after the point to `out`: the text of [`fixed`],
/// without the formatting machinery, for loops that write many numbers.
pub fn push_fixed(out: &mut String, v: f64, decimals: u8) {
    let mut buf = [0u8; BUF];
    match digits(v, decimals, &mut buf) {
        // Byte by byte: the text is ASCII, and checking it as UTF-8 (`ascii`) cost the
        // report's charts more than the copy.
        Some(start) => {
            out.reserve(BUF - start);
            for &b in &buf[start..] {
                out.push(char::from(b));
            }
        }
        None => {
            use std::fmt::Write as _;
            // Writing to a String cannot fail.
            let _ = write!(out, "{:.*}", usize::from(decimals), v);
        }
    }
}

/// The text [`digits`] wrote: only ASCII digits, '-' and '.'.
fn ascii(b: &[u8]) -> &str {
    std::str::from_utf8(b).unwrap_or_default()
}

/// Room for a sign, ten integer digits, the point and nine decimals.
const BUF: usize = 24;

/// Largest number of decimals the fast path takes.
const MAX_DECIMALS: u8 = 9;

const POW10: [u32; MAX_DECIMALS as usize + 1] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
    1_000_000_000,
];

/// "00", "01", ... "99".
const PAIRS: [u8; 200] = {
    let mut t = [0u8; 200];
    let mut i = 0;
    while i < 100 {
        t[2 * i] = b'0' + (i / 10) as u8;
        t[2 * i + 1] = b'0' + (i % 10) as u8;
        i += 1;
    }
    t
};

/// Write `v` rounded to `decimals` at the end of `buf`; the index where the text starts,
/// or `None` where only the exact conversion can tell the digits.
fn digits(v: f64, decimals: u8, buf: &mut [u8; BUF]) -> Option<usize> {
    if decimals > MAX_DECIMALS {
        return None;
    }
    // Powers of ten up to 10^9 are exact in an f64, so this is one rounding of the exact
    // product.
    let scale = f64::from(POW10[usize::from(decimals)]);
    let t = v.abs() * scale;
    // Also for NaN. Below 2^32 - 1 the rounded value fits a `u32`, whose divisions by ten
    // the compiler turns into multiplications.
    if t.is_nan() || t >= 4_294_967_295.0 {
        return None;
    }
    // Truncation is the floor of a number that is not negative; exact.
    let whole = t as u32;
    // Exact (Sterbenz: whole <= t < 2 * whole, or whole is 0).
    let frac = t - f64::from(whole);
    let up = if (frac - 0.5).abs() < 1e-5 {
        // Near a tie the product's rounding can decide: its error is exactly
        // `|v| * scale - t` (a product's error is a double, and here `t` is at least 0.49,
        // far from underflow), so the exact scaled value is `whole + frac + err`. `frac -
        // 0.5` is exact (Sterbenz), so the comparison with `-err` is exact too. An exact tie
        // rounds to even, as the standard formatter does.
        let err = v.abs().mul_add(scale, -t);
        let above = frac - 0.5;
        if above == -err {
            whole % 2 == 1
        } else {
            above > -err
        }
    } else {
        frac > 0.5
    };
    let mut n = whole + u32::from(up);
    let mut i = BUF;
    // The decimals from the last, the point, then the integer part (at least one digit).
    for _ in 0..decimals {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
    }
    if decimals > 0 {
        i -= 1;
        buf[i] = b'.';
    }
    // Two digits at a time, from a table.
    while n >= 100 {
        let pair = 2 * (n % 100) as usize;
        n /= 100;
        i -= 2;
        buf[i..i + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if n >= 10 {
        let pair = 2 * n as usize;
        i -= 2;
        buf[i..i + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    } else {
        i -= 1;
        buf[i] = b'0' + n as u8;
    }
    // The standard formatter keeps the sign of a negative number that rounds to zero
    // ("-0.0"), and of -0.0 itself.
    if v.is_sign_negative() {
        i -= 1;
        buf[i] = b'-';
    }
    Some(i)
}

/// Powers of ten a double holds exactly.
const POW10_F64: [f64; 16] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
];

/// A number as [`fixed`] writes them (`-`, digits, a point and digits, at most 15
/// digits in all), read as `str::parse::<f64>` reads it; `None` for anything else, which
/// the caller hands to `str::parse`. With at most 15 digits the digits make an integer `k`
/// below 2^53, exact in a double, and `10^d` is exact too, so the one correctly rounded
/// division `k / 10^d` is the double nearest the decimal, which is what `parse` returns
/// (the "fast path" of W. D. Clinger, "How to read floating point numbers accurately",
/// PLDI 1990). Reading the snapshot tables back (the report, the Parquet copies), it
/// replaces `str::parse`'s general algorithm for nearly every cell.
#[inline]
pub fn plain_decimal(b: &[u8]) -> Option<f64> {
    let (neg, b) = match b.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, b),
    };
    // At most 15 digits and a point; so `k` stays below 10^16 on the way.
    if b.len() > 16 {
        return None;
    }
    let mut k: u64 = 0;
    let mut point: Option<usize> = None;
    for (i, &c) in b.iter().enumerate() {
        let d = c.wrapping_sub(b'0');
        if d < 10 {
            k = k * 10 + u64::from(d);
        } else if c == b'.' && point.is_none() {
            point = Some(i);
        } else {
            return None;
        }
    }
    let digits = b.len() - usize::from(point.is_some());
    if digits == 0 || digits > 15 {
        return None;
    }
    let v = k as f64 / POW10_F64[point.map_or(0, |p| b.len() - 1 - p)];
    Some(if neg { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(v: f64, d: u8) {
        let want = format!("{:.*}", usize::from(d), v);
        assert_eq!(
            fixed(v, d).to_string(),
            want,
            "{v:e} ({:#x}) to {d} decimals",
            v.to_bits()
        );
    }

    /// splitmix64: a fixed sequence of well-spread 64-bit values.
    fn mix(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    #[test]
    fn same_text_as_the_standard_formatter_at_the_edges() {
        let edges = [
            0.0,
            -0.0,
            0.25,
            0.35,
            0.05,
            0.15,
            2.5,
            -2.5,
            0.125,
            0.0625,
            1.45,
            2.675,
            -0.01,
            -0.04,
            0.5,
            0.9999999,
            9.95,
            99.95,
            4_294_967_295.4,
            4_294_967_295.5,
            4_294_967_296.0,
            1e16,
            1e21,
            -1e300,
            f64::MIN_POSITIVE,
            f64::EPSILON,
            f64::MAX,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        for d in 0..=12 {
            for &v in &edges {
                check(v, d);
                check(-v, d);
            }
        }
    }

    #[test]
    fn same_text_as_the_standard_formatter_on_spread_values_and_near_ties() {
        let mut s = 1;
        for _ in 0..60_000 {
            let r = mix(&mut s);
            let d = (r % 10) as u8;
            // Magnitudes from 1e-6 to 1e10, so that both sides of the fast path's limit
            // are taken.
            let mag = 10f64.powi((r >> 8) as i32 % 17 - 6);
            let v = (mix(&mut s) >> 11) as f64 / (1u64 << 53) as f64 * mag;
            check(v, d);
            check(-v, d);
            // Ties and their neighbours: k + 1/2 units of the last decimal, and the floats
            // on either side of it.
            let scale = 10f64.powi(i32::from(d));
            // Small and large units (up to the fast path's limit), where the product's
            // rounding error is largest.
            for units in [mix(&mut s) % 1_000_000, mix(&mut s) % 4_294_967_294] {
                let tie = (units as f64 + 0.5) / scale;
                for t in [
                    tie,
                    f64::from_bits(tie.to_bits() + 1),
                    f64::from_bits(tie.to_bits() - 1),
                    f64::from_bits(tie.to_bits() + 2),
                    f64::from_bits(tie.to_bits() - 2),
                ] {
                    check(t, d);
                    check(-t, d);
                }
            }
        }
    }

    #[test]
    fn push_fixed_appends_the_same_text() {
        let mut s = String::from("x=");
        for v in [0.25, -0.04, 123.456, 4_294_967_296.5, f64::NAN] {
            push_fixed(&mut s, v, 1);
            s.push(' ');
        }
        assert_eq!(s, "x=0.2 -0.0 123.5 4294967296.5 NaN ");
    }

    #[test]
    fn width_and_alignment_apply_as_to_a_string() {
        assert_eq!(
            format!("{:>7}|{:<6}|", fixed(12.345_67, 2), fixed(-1.0, 1)),
            "  12.35|-1.0  |"
        );
        assert_eq!(format!("{:>9}", fixed(f64::NAN, 2)), "      NaN");
    }

    /// `plain_decimal` reads what it takes exactly as `str::parse` does, and takes nearly
    /// everything [`fixed`] writes: numbers written at 0 to 17 decimals, digit strings of 1
    /// to 17 digits with and without a point and a sign, and edge forms.
    #[test]
    fn plain_decimals_read_as_parse_reads_them() {
        let same = |s: &str| -> bool {
            match plain_decimal(s.as_bytes()) {
                Some(v) => {
                    let want: f64 = s.parse().unwrap_or_else(|e| panic!("{s:?} taken, but parse says {e}"));
                    assert_eq!(v.to_bits(), want.to_bits(), "{s:?}: {v} != {want}");
                    true
                }
                None => false,
            }
        };
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let (mut written, mut taken) = (0, 0);
        for _ in 0..200_000 {
            let r = next();
            // Magnitudes from 1e-3 to 1e9, either sign.
            let v = (r >> 11) as f64 / 2f64.powi(53)
                * 10f64.powi((r % 13) as i32 - 3)
                * if r & 1024 == 0 { 1.0 } else { -1.0 };
            let prec = (next() % 10) as u8;
            let s = fixed(v, prec).to_string();
            written += 1;
            taken += usize::from(same(&s));
            same(&format!("{v:.*}", 10 + (next() % 8) as usize));
            let n = 1 + (next() % 17) as usize;
            let mut d: String = (0..n).map(|_| char::from(b'0' + (next() % 10) as u8)).collect();
            let at = (next() % (n as u64 + 1)) as usize;
            if next() % 4 != 0 {
                d.insert(at, '.');
            }
            same(&d);
            same(&format!("-{d}"));
        }
        // What it leaves: numbers of more than 15 digits (from 1e6 up, with 9 decimals).
        assert!(taken * 10 > written * 9, "took {taken} of {written}");
        for s in [
            "0",
            "-0",
            "-0.000",
            "0.1",
            "1.",
            ".5",
            "-.5",
            "123456789012345",
            "0.00000000000001",
        ] {
            assert!(same(s), "{s:?} not taken");
        }
        for s in [
            "",
            "-",
            ".",
            "1..2",
            "--1",
            "+1",
            "1e5",
            " 7",
            "nan",
            "inf",
            "0x10",
            "1_000",
            "１",
            "9999999999999999",
            "0.0000000000000001",
            "9007199254740993",
        ] {
            assert!(!same(s), "{s:?} taken");
        }
    }
}
