//! A small CSV reader for the results files: comma separated, optional double quotes
//! (RFC 4180 style, `""` inside quotes is a quote), `\n` or `\r\n` line ends. Columns are
//! looked up by header name, so extra columns are ignored and missing optional ones read
//! as "not applicable". Errors carry the 1-based line number.

use crate::ReportError;
use std::path::Path;

/// A parsed CSV file: the header and the rows with their line numbers.
#[derive(Debug)]
pub(crate) struct Table {
    pub header: Vec<String>,
    pub rows: Vec<(usize, Vec<String>)>,
}

impl Table {
    pub fn col(&self, name: &str) -> Option<usize> {
        self.header.iter().position(|h| h == name)
    }
}

/// Stream the rows of `text` (the content of `path`): `header` is called once with the
/// trimmed header names and returns what `row` needs from it; `row` is then called with that,
/// each row's 1-based line number and its fields. Every row must have as many fields as the
/// header; blank lines are skipped. Parsing is the `csv` crate's (RFC 4180 quoting, CRLF).
pub(crate) fn scan<H>(
    path: &Path,
    text: &str,
    header: impl FnOnce(&[String]) -> Result<H, ReportError>,
    mut row: impl FnMut(&H, usize, &::csv::StringRecord) -> Result<(), ReportError>,
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
    let mut rec = ::csv::StringRecord::new();
    // Line numbers from byte offsets (the csv crate's own line count skips blank lines),
    // counted incrementally: records come in order.
    let (mut seen, mut lines_before) = (0usize, 0usize);
    let mut line_of = |r: &::csv::StringRecord| {
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
    let read = |rd: &mut ::csv::Reader<&[u8]>, rec: &mut ::csv::StringRecord| -> Result<bool, ReportError> {
        rd.read_record(rec).map_err(|e| {
            let line = e.position().map(|p| p.line() as usize).unwrap_or(0);
            err(line, e.to_string())
        })
    };
    if !read(&mut rd, &mut rec)? || line_of(&rec) != 1 {
        return Err(err(1, "empty first line: expected a header line".into()));
    }
    let names: Vec<String> = rec.iter().map(|h| h.trim().to_string()).collect();
    let h = header(&names)?;
    while read(&mut rd, &mut rec)? {
        let n = line_of(&rec);
        if rec.len() == 1 && rec[0].trim().is_empty() {
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

/// Parse a whole (small) file into a [`Table`].
pub(crate) fn parse(path: &Path, text: &str) -> Result<Table, ReportError> {
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
            rows.push((n, r.iter().map(|c| c.to_string()).collect()));
            Ok(())
        },
    )?;
    t.rows = rows;
    Ok(t)
}

/// Parse a numeric cell: empty means "not applicable" (NaN); non-finite values also read as NaN.
pub(crate) fn num(path: &Path, line: usize, col: &str, cell: &str) -> Result<f64, ReportError> {
    let c = cell.trim();
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
        assert!(num(p, 2, "a", "").unwrap().is_nan());
        assert!(num(p, 2, "a", "inf").unwrap().is_nan());
        assert!(num(p, 2, "a", "x1").is_err());
    }
}
