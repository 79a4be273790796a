//! Number formatting shared by the verdict, the HTML tables and the text tables.

/// Milliseconds with 3 significant digits ("0.231", "10.4", "129").
pub fn ms(x: f64) -> String {
    if !x.is_finite() {
        "–".into()
    } else if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else if x.abs() >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// Milliseconds for tables, with a fixed resolution of about 10 µs below 100 ms ("10.21",
/// "0.233", "129.4"), so the spread of an L4S flow's percentiles stays visible.
pub fn ms_fine(x: f64) -> String {
    if !x.is_finite() {
        "–".into()
    } else if x.abs() >= 100.0 {
        format!("{x:.1}")
    } else if x.abs() >= 10.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// A signed difference in ms ("+1.2", "−0.31").
pub fn dms(x: f64) -> String {
    if !x.is_finite() {
        "–".into()
    } else if x >= 0.0 {
        format!("+{}", ms(x))
    } else {
        format!("-{}", ms(-x))
    }
}

/// A rate with its unit ("69.5 Mbit/s").
pub fn rate(bps: f64) -> String {
    if !bps.is_finite() {
        return "–".into();
    }
    let a = bps.abs();
    if a >= 1e9 {
        format!("{:.3} Gbit/s", bps / 1e9)
    } else if a >= 1e6 {
        format!("{:.2} Mbit/s", bps / 1e6)
    } else if a >= 1e3 {
        format!("{:.1} kbit/s", bps / 1e3)
    } else {
        format!("{bps:.0} bit/s")
    }
}

/// A fraction as a percentage with enough digits for small loss/CE fractions ("0 %",
/// "0.0030 %", "2.5 %"); zero keeps its unit, so "0 % of frames" reads as a percentage.
pub fn pct(x: f64) -> String {
    if !x.is_finite() {
        "–".into()
    } else if x == 0.0 {
        "0 %".into()
    } else if x.abs() < 0.0001 {
        format!("{:.4} %", x * 100.0)
    } else if x.abs() < 0.01 {
        format!("{:.3} %", x * 100.0)
    } else {
        format!("{:.1} %", x * 100.0)
    }
}

/// A count with thin thousands separators ("287 093").
pub fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

/// Escape text for HTML/SVG element content and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => o.push('\u{FFFD}'),
            c => o.push(c),
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn formats() {
        assert_eq!(ms(0.2311), "0.231");
        assert_eq!(ms(10.354), "10.4");
        assert_eq!(ms(129.4), "129");
        assert_eq!(ms_fine(10.207231), "10.21");
        assert_eq!(ms_fine(0.232575), "0.233");
        assert_eq!(ms_fine(129.44), "129.4");
        assert_eq!(rate(69_545_408.0), "69.55 Mbit/s");
        assert_eq!(pct(0.025121), "2.5 %");
        assert_eq!(pct(0.00003), "0.0030 %");
        assert_eq!(pct(0.0), "0 %", "zero keeps its unit");
        assert_eq!(count(287093), "287 093");
        assert_eq!(esc("<a href='x'>&\""), "&lt;a href=&#39;x&#39;&gt;&amp;&quot;");
        assert_eq!(dms(-0.5), "-0.500");
        assert_eq!(ms(f64::NAN), "–");
    }
}
