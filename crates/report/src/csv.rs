//! A small CSV reader for the results files: comma separated, optional double quotes
//! (RFC 4180 style, `""` inside quotes is a quote), `\n` or `\r\n` line ends. Columns are
//! looked up by header name, so extra columns are ignored and missing optional ones read
//! as "not applicable". Errors carry the 1-based line number.

use crate::ReportError;
use l4s_metrics::fixed::plain_decimal;
use std::path::Path;

/// Stream the rows of `text` (the content of `path`): `header` is called once with the
/// trimmed header names and returns what `row` needs from it; `row` is then called with that,
/// each row's 1-based line number and its fields. Every row must have as many fields as the
/// header; blank lines are skipped. Parsing is the `csv` crate's (RFC 4180 quoting, CRLF).
///
/// The fields come as bytes: `text` is already UTF-8, and a field cut from it at the ASCII
/// delimiters (quotes undone) is too, so the `csv` crate's check of every field again is
/// left out; [`num`] reads a number from its bytes and [`field`] gives the text of one.
pub(crate) fn scan<H>(
    path: &Path,
    text: &str,
    header: impl FnOnce(&[String]) -> Result<H, ReportError>,
    mut row: impl FnMut(&H, usize, &::csv::ByteRecord) -> Result<(), ReportError>,
) -> Result<(), ReportError> {
    let err = |line: usize, reason: String| ReportError::Csv {
        path: path.to_path_buf(),
        line,
        reason,
    };
    if text.trim().is_empty() {
        return Err(err(1, "empty file: expected a header line".into()));
    }
    let mut rd = ::csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(text.as_bytes());
    let mut rec = ::csv::ByteRecord::new();
    // Line numbers from byte offsets (the csv crate's own line count skips blank lines),
    // counted incrementally: records come in order.
    let (mut seen, mut lines_before) = (0usize, 0usize);
    let mut line_of = |r: &::csv::ByteRecord| {
        let mut at = r.position().map(|p| p.byte() as usize).unwrap_or(seen).min(text.len());
        // A record's offset can point at blank lines skipped before it.
        while at < text.len() && matches!(text.as_bytes()[at], b'\n' | b'\r') && !r.is_empty() && !r[0].is_empty() {
            at += 1;
        }
        if at >= seen {
            lines_before += text.as_bytes()[seen..at].iter().filter(|&&b| b == b'\n').count();
            seen = at;
        }
        lines_before + 1
    };
    let read = |rd: &mut ::csv::Reader<&[u8]>, rec: &mut ::csv::ByteRecord| -> Result<bool, ReportError> {
        rd.read_byte_record(rec).map_err(|e| {
            let line = e.position().map(|p| p.line() as usize).unwrap_or(0);
            err(line, e.to_string())
        })
    };
    if !read(&mut rd, &mut rec)? || line_of(&rec) != 1 {
        return Err(err(1, "empty first line: expected a header line".into()));
    }
    let names = rec
        .iter()
        .map(|h| field(path, 1, "header", h).map(|h| h.trim().to_string()))
        .collect::<Result<Vec<String>, _>>()?;
    let h = header(&names)?;
    while read(&mut rd, &mut rec)? {
        let n = line_of(&rec);
        if rec.len() == 1 && field(path, n, "1", &rec[0])?.trim().is_empty() {
            continue; // blank line
        }
        if rec.len() != names.len() {
            return Err(err(
                n,
                format!("expected {} fields as in the header, found {}", names.len(), rec.len()),
            ));
        }
        row(&h, n, &rec)?;
    }
    Ok(())
}

/// Where column `name` is in the header `h`, or an error on line 1 that names it, with
/// `hint` in brackets after it.
pub(crate) fn column(path: &Path, h: &[String], name: &str, hint: &str) -> Result<usize, ReportError> {
    h.iter().position(|x| x == name).ok_or_else(|| ReportError::Csv {
        path: path.to_path_buf(),
        line: 1,
        reason: format!("header has no `{name}` column ({hint})"),
    })
}

/// The text of a field of column `col` on line `line`.
pub(crate) fn field<'a>(path: &Path, line: usize, col: &str, cell: &'a [u8]) -> Result<&'a str, ReportError> {
    std::str::from_utf8(cell).map_err(|_| ReportError::Csv {
        path: path.to_path_buf(),
        line,
        reason: format!("column {col}: not UTF-8 text"),
    })
}

/// Parse a numeric cell: empty means "not applicable" (NaN); non-finite values also read as NaN.
#[inline]
pub(crate) fn num(path: &Path, line: usize, col: &str, cell: &[u8]) -> Result<f64, ReportError> {
    // The tables write numbers without spaces around them, so only a cell that starts or
    // ends with one is trimmed.
    let spaced = |b: Option<&u8>| b.is_some_and(u8::is_ascii_whitespace);
    let b = if spaced(cell.first()) || spaced(cell.last()) {
        cell.trim_ascii()
    } else {
        cell
    };
    if b.is_empty() {
        return Ok(f64::NAN);
    }
    match plain_decimal(b) {
        Some(v) => Ok(v),
        None => parsed(path, line, col, cell),
    }
}

/// [`num`] of a cell that is not a plain decimal: `str::parse`'s other forms, or an error.
#[inline(never)]
fn parsed(path: &Path, line: usize, col: &str, cell: &[u8]) -> Result<f64, ReportError> {
    let c = field(path, line, col, cell)?.trim();
    if c.is_empty() {
        return Ok(f64::NAN);
    }
    match c.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        Ok(_) => Ok(f64::NAN),
        Err(_) => Err(ReportError::Csv {
            path: path.to_path_buf(),
            line,
            reason: format!("column {col}: expected a number, found {:?}", truncate(c, 40)),
        }),
    }
}

pub(crate) fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n).collect();
        t.push('…');
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A parsed CSV file: the header and the rows with their line numbers.
    #[derive(Debug)]
    struct Table {
        header: Vec<String>,
        rows: Vec<(usize, Vec<String>)>,
    }

    /// Parse a whole (small) file into a [`Table`].
    fn parse(path: &Path, text: &str) -> Result<Table, ReportError> {
        let mut t = Table {
            header: Vec::new(),
            rows: Vec::new(),
        };
        let mut rows = Vec::new();
        scan(
            path,
            text,
            |h| {
                t.header = h.to_vec();
                Ok(())
            },
            |_, n, r| {
                let cells = r.iter().map(|c| field(path, n, "any", c).map(str::to_string));
                rows.push((n, cells.collect::<Result<_, _>>()?));
                Ok(())
            },
        )?;
        t.rows = rows;
        Ok(t)
    }

    #[test]
    fn quotes_and_errors() {
        let p = Path::new("x.csv");
        let q = parse(p, "a,b,c\n1,\"b,c\",\"d\"\"e\"\n").unwrap();
        assert_eq!(q.rows[0].1, vec!["1", "b,c", "d\"e"]);
        let t = parse(p, "a,b\r\n1,2\n\n3,4\n").unwrap();
        assert_eq!(t.rows.len(), 2);
        assert_eq!(t.rows[1].0, 4);
        match parse(p, "a,b\n1,2\n3\n") {
            Err(ReportError::Csv { line: 3, .. }) => {}
            other => panic!("{other:?}"),
        }
        assert!(num(p, 2, "a", b"").unwrap().is_nan());
        assert!(num(p, 2, "a", b" ").unwrap().is_nan());
        assert!(num(p, 2, "a", b"inf").unwrap().is_nan());
        assert!(num(p, 2, "a", b"x1").is_err());
        assert!(num(p, 2, "a", b"1\xff").is_err());
        assert_eq!(num(p, 2, "a", b" 1e3 ").unwrap(), 1000.0);
    }

    /// A cell reads as `str::parse` reads it, by the fast path (tested on its own in
    /// `l4s_metrics::fixed`) or not: plain decimals at the 15-digit limit and past it,
    /// padded cells, and forms the fast path leaves to `parse`.
    #[test]
    fn cells_read_as_parse_reads_them() {
        let p = Path::new("x.csv");
        let same = |s: &str| {
            let want = match s.trim().parse::<f64>() {
                Ok(v) if v.is_finite() => v,
                Ok(_) => f64::NAN,
                Err(_) => {
                    assert!(num(p, 2, "a", s.as_bytes()).is_err(), "{s:?}");
                    return;
                }
            };
            let got = num(p, 2, "a", s.as_bytes()).unwrap();
            assert!(
                got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                "{s:?}: {got} != {want}"
            );
        };
        for s in [
            "0",
            "-0",
            "-0.000",
            "0.1",
            "0.3",
            "\u{a0}5",
            "1.",
            ".5",
            "-.5",
            "123456789012345",
            "999999999999999",
            "9999999999999999",
            "0.000000000000001",
            "0.0000000000000001",
            "4503599627370497",
            "9007199254740993",
            "1e5",
            "+1",
            "-",
            ".",
            "1..2",
            "1.2.3",
            "--1",
            " 7 ",
            "	8	",
            "nan",
            "inf",
            "-inf",
            "0x10",
            "1_000",
            "１",
        ] {
            same(s);
        }
    }
}
