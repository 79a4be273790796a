//! A small CSV reader for the results files: comma separated, optional double quotes
//! (RFC 4180 style, `""` inside quotes is a quote), `\n` or `\r\n` line ends. Columns are
//! looked up by header name, so extra columns are ignored and missing optional ones read
//! as "not applicable". Errors carry the 1-based line number.

use crate::ReportError;
use std::borrow::Cow;
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

/// Split one line into `out`. Lines without a quote are split without copying.
/// `Err` on an unterminated quote.
fn split_into<'a>(line: &'a str, out: &mut Vec<Cow<'a, str>>) -> Result<(), String> {
    out.clear();
    if !line.contains('"') {
        out.extend(line.split(',').map(Cow::Borrowed));
        return Ok(());
    }
    let mut cur = String::new();
    let mut chars = line.chars().peekable();
    let mut in_quotes = false;
    let mut was_quoted = false;
    while let Some(c) = chars.next() {
        if in_quotes {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    chars.next();
                    cur.push('"');
                } else {
                    in_quotes = false;
                }
            } else {
                cur.push(c);
            }
        } else if c == ',' {
            out.push(Cow::Owned(std::mem::take(&mut cur)));
            was_quoted = false;
        } else if c == '"' && cur.is_empty() && !was_quoted {
            in_quotes = true;
            was_quoted = true;
        } else {
            cur.push(c);
        }
    }
    if in_quotes {
        return Err("unterminated quoted field".into());
    }
    out.push(Cow::Owned(cur));
    Ok(())
}

#[cfg(test)]
fn split_line(line: &str) -> Result<Vec<String>, String> {
    let mut v = Vec::new();
    split_into(line, &mut v)?;
    Ok(v.into_iter().map(|c| c.into_owned()).collect())
}

/// Stream the rows of `text` (the content of `path`): `header` is called once with the
/// trimmed header names and returns what `row` needs from it; `row` is then called with that,
/// each row's 1-based line number and its fields. Every
/// row must have as many fields as the header; blank lines are skipped.
pub(crate) fn scan<'a, H>(
    path: &Path,
    text: &'a str,
    header: impl FnOnce(&[String]) -> Result<H, ReportError>,
    mut row: impl FnMut(&H, usize, &[Cow<'a, str>]) -> Result<(), ReportError>,
) -> Result<(), ReportError> {
    let err = |line: usize, reason: String| ReportError::Csv {
        path: path.to_path_buf(),
        line,
        reason,
    };
    if text.trim().is_empty() {
        return Err(err(1, "empty file: expected a header line".into()));
    }
    let mut lines = text
        .split('\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l.strip_suffix('\r').unwrap_or(l)));
    let mut buf = Vec::new();
    match lines.next() {
        Some((n, l)) if !l.trim().is_empty() => split_into(l, &mut buf).map_err(|e| err(n, e))?,
        _ => return Err(err(1, "empty first line: expected a header line".into())),
    }
    let names: Vec<String> = buf.iter().map(|h| h.trim().to_string()).collect();
    let h = header(&names)?;
    for (n, l) in lines {
        if l.is_empty() {
            continue; // trailing newline, or blank lines
        }
        split_into(l, &mut buf).map_err(|e| err(n, e))?;
        if buf.len() != names.len() {
            return Err(err(
                n,
                format!("expected {} fields as in the header, found {}", names.len(), buf.len()),
            ));
        }
        row(&h, n, &buf)?;
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
        assert_eq!(split_line("a,\"b,c\",\"d\"\"e\"").unwrap(), vec!["a", "b,c", "d\"e"]);
        assert_eq!(split_line("").unwrap(), vec![""]);
        assert!(split_line("\"abc").is_err());
        let p = Path::new("x.csv");
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
