//! Parsing of human units used in scenario files: rates (`100Mbit`, `1.5Gbit`, `64kbit`),
//! durations (`20ms`, `1.5s`, `250us`, `100ns`) and sizes (`1500B`, `1.5MB`, `64KiB`).
//!
//! Decimal prefixes are powers of 1000; binary prefixes (`Ki`, `Mi`, `Gi`) powers of 1024.
//! Errors say what was expected, so that the scenario loader can quote them.

use crate::time::{Dur, Rate};

fn split_number(s: &str) -> Option<(Number<'_>, &str)> {
    let s = s.trim();
    let end = s
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '.' || *c == '_' || *c == '+' || *c == '-' || *c == 'e'))
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    // A trailing 'e' may belong to no exponent (e.g. none of our units start with e, so fine).
    let (text, unit) = s.split_at(end);
    let value: f64 = text.replace('_', "").parse().ok()?;
    Some((Number { text, value }, unit.trim()))
}

/// A number as written (with any `_`) and its value.
struct Number<'a> {
    text: &'a str,
    value: f64,
}

/// `n · mult` as a whole number, or `None` past `u64::MAX`. A number written in digits
/// alone, times a whole multiplier, is computed exactly: as f64, `18446744073709551615`
/// (the largest u64) and `18446744073709551616` (one past it) are the same number, 2^64.
/// Otherwise the f64 product is rounded, and 2^64 and above are past.
fn whole(n: &Number, mult: f64) -> Option<u64> {
    let digits_only =
        n.text.bytes().any(|b| b.is_ascii_digit()) && n.text.bytes().all(|b| b.is_ascii_digit() || b == b'_');
    if digits_only && mult.fract() == 0.0 && mult < 1e18 {
        let k: u128 = n.text.replace('_', "").parse().ok()?;
        return u64::try_from(k.checked_mul(mult as u128)?).ok();
    }
    let x = n.value * mult;
    // u64::MAX as f64 is 2^64, one past the largest u64: it too is out of range.
    (x < u64::MAX as f64).then(|| x.round() as u64)
}

/// Parse a rate such as `100Mbit`, `1Gbit/s`, `12.5MBps` (bytes), `500kbit`.
///
/// The `bps` spellings with a lower-case `b` (`"20Mbps"`, `"20mbps"`, `"64kbps"`) are
/// refused: most people read them as bits per second, but `tc` (and so a qdisc configured
/// from the same numbers) reads `bps`, `kbps`, `mbps` as *bytes* per second, whatever the
/// case. Bits are written `bit` (`"20Mbit"`, as `tc`), bytes `Bps` or `B` (`"2.5MBps"`).
pub fn parse_rate(s: &str) -> Result<Rate, String> {
    let expected = "a rate such as \"100Mbit\", \"1.5Gbit\", \"500kbit\" or \"12.5MBps\" (bytes/s)";
    let (n, unit) = split_number(s).ok_or_else(|| format!("expected {expected}, found {s:?}"))?;
    let unit_l = unit.trim_end_matches("/s");
    if let Some(prefix) = unit_l.strip_suffix("bps") {
        let num = s.trim().strip_suffix(unit).unwrap_or(s).trim();
        return Err(format!(
            "{s:?} is ambiguous: most people read \"{prefix}bps\" as bits per second, but tc reads it as bytes \
             per second; write \"{num}{}bit\" for bits per second or \"{num}{}Bps\" for bytes per second",
            prefix,
            prefix.to_uppercase().replace('K', "k")
        ));
    }
    let (mult, bytes) = match unit_l {
        "bit" | "b" => (1.0, false),
        "kbit" | "Kbit" | "kb" => (1e3, false),
        "Mbit" | "mbit" | "Mb" => (1e6, false),
        "Gbit" | "gbit" | "Gb" => (1e9, false),
        "Tbit" | "tbit" => (1e12, false),
        "Bps" | "B" => (1.0, true),
        "kBps" | "KBps" | "kB" | "KB" => (1e3, true),
        "MBps" | "MB" => (1e6, true),
        "GBps" | "GB" => (1e9, true),
        "" => return Err(format!("expected {expected}, found {s:?} (the unit is missing)")),
        _ => return Err(format!("expected {expected}, found unknown unit {unit:?} in {s:?}")),
    };
    let bits = n.value * mult * if bytes { 8.0 } else { 1.0 };
    if bits.is_nan() || bits < 0.0 {
        return Err(format!("expected {expected}, found {s:?}"));
    }
    whole(&n, mult * if bytes { 8.0 } else { 1.0 })
        .map(Rate)
        .ok_or_else(|| format!("rate {s:?} is too large"))
}

/// Parse a duration such as `20ms`, `1.5s`, `250us`, `100ns`, `2min`.
pub fn parse_dur(s: &str) -> Result<Dur, String> {
    let expected = "a duration such as \"20ms\", \"1.5s\", \"250us\" or \"100ns\"";
    let (n, unit) = split_number(s).ok_or_else(|| format!("expected {expected}, found {s:?}"))?;
    let mult = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" | "sec" => 1e9,
        "min" | "m" => 60e9,
        "h" => 3600e9,
        "" => return Err(format!("expected {expected}, found {s:?} (the unit is missing)")),
        _ => return Err(format!("expected {expected}, found unknown unit {unit:?} in {s:?}")),
    };
    let ns = n.value * mult;
    if ns.is_nan() || ns < 0.0 {
        return Err(format!(
            "expected {expected}, found {s:?} (durations cannot be negative)"
        ));
    }
    whole(&n, mult)
        .map(Dur)
        .ok_or_else(|| format!("duration {s:?} is too large"))
}

/// Parse a size in bytes such as `1500B`, `1500`, `1.5MB`, `64KiB`.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let expected = "a size such as \"1500B\", \"64KiB\" or \"1.5MB\"";
    let (n, unit) = split_number(s).ok_or_else(|| format!("expected {expected}, found {s:?}"))?;
    let mult = match unit {
        "" | "B" | "bytes" => 1.0,
        "kB" | "KB" | "k" => 1e3,
        "MB" | "M" => 1e6,
        "GB" | "G" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(format!("expected {expected}, found unknown unit {unit:?} in {s:?}")),
    };
    let b = n.value * mult;
    if b.is_nan() || b < 0.0 {
        return Err(format!("expected {expected}, found {s:?} (sizes cannot be negative)"));
    }
    whole(&n, mult).ok_or_else(|| format!("size {s:?} is too large"))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn rates() {
        assert_eq!(parse_rate("100Mbit").unwrap(), Rate::mbps(100));
        assert_eq!(parse_rate("1.5Gbit/s").unwrap(), Rate(1_500_000_000));
        assert_eq!(parse_rate("64kbit").unwrap(), Rate(64_000));
        // The lower-case-b `bps` forms mean bits to most people and bytes to tc: refused,
        // with both spellings offered.
        for (x, bits, bytes) in [
            ("20Mbps", "\"20Mbit\"", "\"20MBps\""),
            ("20mbps", "\"20mbit\"", "\"20MBps\""),
            ("64kbps", "\"64kbit\"", "\"64kBps\""),
            ("1.5Gbps", "\"1.5Gbit\"", "\"1.5GBps\""),
            ("100bps", "\"100bit\"", "\"100Bps\""),
        ] {
            let e = parse_rate(x).unwrap_err();
            assert!(e.contains("ambiguous") && e.contains(bits) && e.contains(bytes), "{e}");
        }
        // Capital B is bytes, as in tc's reading: 20 MB/s is 160 Mbit/s.
        assert_eq!(parse_rate("20MBps").unwrap(), Rate::mbps(160));
        assert_eq!(parse_rate("12.5MBps").unwrap(), Rate::mbps(100));
        assert!(parse_rate("100").unwrap_err().contains("unit is missing"));
        assert!(parse_rate("100furlongs").unwrap_err().contains("unknown unit"));
        assert!(parse_rate("-5Mbit").is_err());
        assert!(parse_rate("fast").is_err());
    }
    #[test]
    fn durations() {
        assert_eq!(parse_dur("20ms").unwrap(), Dur::from_millis(20));
        assert_eq!(parse_dur("1.5s").unwrap(), Dur::from_millis(1500));
        assert_eq!(parse_dur("250us").unwrap(), Dur::from_micros(250));
        assert_eq!(parse_dur("0s").unwrap(), Dur::ZERO);
        assert!(parse_dur("-1ms").is_err());
        assert!(parse_dur("20").is_err());
    }
    #[test]
    fn sizes() {
        assert_eq!(parse_bytes("1500B").unwrap(), 1500);
        assert_eq!(parse_bytes("1500").unwrap(), 1500);
        assert_eq!(parse_bytes("1.5MB").unwrap(), 1_500_000);
        assert_eq!(parse_bytes("64KiB").unwrap(), 65_536);
        assert!(parse_bytes("1.5 parsecs").is_err());
    }
    /// 2^64 itself is past the largest u64 (as f64 it equals `u64::MAX as f64`): refused,
    /// not clamped; just below it is taken.
    #[test]
    fn two_to_the_64_is_too_large_for_each_kind() {
        assert!(parse_rate("18446744073709551616bit").unwrap_err().contains("too large"));
        assert!(parse_dur("18446744073709551616ns").unwrap_err().contains("too large"));
        assert!(parse_bytes("18446744073709551616B").unwrap_err().contains("too large"));
        assert_eq!(
            parse_rate("18446744073709549568bit").unwrap(),
            Rate(18_446_744_073_709_549_568)
        );
        // Digits alone are exact: the largest u64 is taken as itself.
        assert_eq!(parse_dur("18446744073709551615ns").unwrap(), Dur(u64::MAX));
        assert_eq!(parse_bytes("18_446_744_073_709_551_615B").unwrap(), u64::MAX);
        assert!(parse_rate("2305843009213693952Bps").unwrap_err().contains("too large"));
        assert!(parse_dur("99999999999999999999999999999999999999999h")
            .unwrap_err()
            .contains("too large"));
        assert!(parse_rate("1.8446744073709552e19bit")
            .unwrap_err()
            .contains("too large"));
        assert!(parse_rate("1e30Mbit").unwrap_err().contains("too large"));
        assert_eq!(parse_rate("1.5e3kbit").unwrap(), Rate(1_500_000));
        assert_eq!(parse_dur("0.5us").unwrap(), Dur(500));
    }
}
