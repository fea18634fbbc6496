//! CSV and JSON lines: one line per matching event with every field, written a chunk at a
//! time from the chunk's columns ([`super::cells`]): each table entry's strings escaped once,
//! numbers printed without the formatting machinery, one output buffer reused. The bytes are
//! those `fields::value` and `serde_json` give field by field (a test holds them equal).

use std::io::Write;
use std::ops::ControlFlow;

use iocap_analysis::scan;
use iocap_filter::fields::FieldInfo;
use iocap_format::ColSet;

use super::cells::{push_i64, push_u64, Cell, Cells, Flavor};
use crate::input::Input;

/// A CSV field, quoted when it holds a comma, quote or line break (RFC 4180).
pub(super) fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A string from the traced host as a CSV field a spreadsheet shows as text: one starting with
/// `=`, `+`, `-`, `@`, a tab or a carriage return would be run as a formula (a file named
/// `=HYPERLINK(...)`), so it gets a leading `'` (OWASP's advice). Numbers are never strings
/// here, so a negative return value stays a number.
pub(super) fn csv_text(s: &str) -> String {
    if s.starts_with(['=', '+', '-', '@', '\t', '\r']) {
        csv_field(&format!("'{s}"))
    } else {
        csv_field(s)
    }
}

/// Append a number, boolean or string cell as both CSV and JSON print it; `absent` for none.
#[inline]
fn push_cell(line: &mut Vec<u8>, cells: &Cells, cell: Cell, absent: &[u8]) {
    match cell {
        Cell::Absent => line.extend_from_slice(absent),
        Cell::Int(v) => push_i64(line, v),
        Cell::UInt(v) => push_u64(line, v),
        Cell::Bool(true) => line.extend_from_slice(b"true"),
        Cell::Bool(false) => line.extend_from_slice(b"false"),
        s @ Cell::Str(..) => line.extend_from_slice(cells.text(s)),
    }
}

/// Every field as CSV, a header line of the field names first.
pub(super) fn write_csv(out: &mut dyn Write, input: &Input) -> anyhow::Result<()> {
    let keys = iocap_filter::fields::canonical().collect::<Vec<_>>();
    let header: Vec<&str> = keys.iter().map(|f| f.name).collect();
    writeln!(out, "{}", header.join(","))?;
    write_rows(out, input, &keys, Flavor::Csv, |line, cells, c, row| {
        for k in 0..keys.len() {
            if k > 0 {
                line.push(b',');
            }
            push_cell(line, cells, cells.cell(c, k, row), b"");
        }
    })
}

/// Every field as a JSON object a line, keyed by field name in the order `serde_json` keeps
/// an object's keys (sorted), absent values as `null`.
pub(super) fn write_jsonl(out: &mut dyn Write, input: &Input) -> anyhow::Result<()> {
    let mut keys = iocap_filter::fields::canonical().collect::<Vec<_>>();
    keys.sort_by_key(|f| f.name);
    // `{"name":` and `,"name":`: field names are plain ASCII, quoted as they are.
    let prefixes: Vec<Vec<u8>> = keys
        .iter()
        .enumerate()
        .map(|(k, f)| format!("{}\"{}\":", if k == 0 { '{' } else { ',' }, f.name).into_bytes())
        .collect();
    write_rows(out, input, &keys, Flavor::Json, |line, cells, c, row| {
        for (k, prefix) in prefixes.iter().enumerate() {
            line.extend_from_slice(prefix);
            push_cell(line, cells, cells.cell(c, k, row), b"null");
        }
        line.push(b'}');
    })
}

/// Write one line per matching event, as `fill` renders it from the loaded cells; stops at
/// the first write error (a closed pipe, a full disk) and returns it.
fn write_rows(
    out: &mut dyn Write,
    input: &Input,
    keys: &[&'static FieldInfo],
    flavor: Flavor,
    mut fill: impl FnMut(&mut Vec<u8>, &Cells, &iocap_format::Columns, usize),
) -> anyhow::Result<()> {
    let r = &input.reader;
    let mut cells = Cells::new(keys, flavor, r.meta(), r.tables());
    let mut buf = Vec::with_capacity(1 << 17);
    let mut err = None;
    let all = 0..r.chunks().len();
    scan::for_each_matching_chunk_in(r, &input.filter, ColSet::ALL, all, |c, bits| {
        cells.load(c, bits);
        for row in 0..cells.len() {
            fill(&mut buf, &cells, c, row);
            buf.push(b'\n');
            if buf.len() >= 1 << 16 {
                if let Err(e) = out.write_all(&buf) {
                    err = Some(e);
                    return ControlFlow::Break(());
                }
                buf.clear();
            }
        }
        ControlFlow::Continue(())
    })?;
    if let Some(e) = err {
        return Err(e.into());
    }
    out.write_all(&buf)?;
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    //! The fast path against the field-by-field one it replaced, on a capture with every class,
    //! hostile strings, formula-like names, failed calls, unknown numbers and absent tables.

    use std::ops::ControlFlow;

    use iocap_filter::fields::{self, Value};
    use iocap_format::{ColSet, Event, Meta, Reader, Tables};

    use super::*;
    use crate::events::json_value;

    /// One event as a JSON object keyed by field names (sorted, as `serde_json` keeps them).
    fn event_json(keys: &[&'static FieldInfo], e: &Event, meta: &Meta, tables: &Tables) -> serde_json::Value {
        let m: serde_json::Map<String, serde_json::Value> = keys
            .iter()
            .map(|f| (f.name.to_string(), json_value(&fields::value(f, e, meta, tables))))
            .collect();
        serde_json::Value::Object(m)
    }

    /// The old CSV: `fields::value` and `Display` per cell.
    fn slow_csv(input: &Input) -> Vec<u8> {
        let r = &input.reader;
        let keys = iocap_filter::fields::canonical().collect::<Vec<_>>();
        let mut out = keys.iter().map(|f| f.name).collect::<Vec<_>>().join(",");
        out.push('\n');
        scan::for_each_match(r, &input.filter, ColSet::ALL, |cols, i| {
            let e = cols.event(i);
            for (k, f) in keys.iter().enumerate() {
                if k > 0 {
                    out.push(',');
                }
                match fields::value(f, &e, r.meta(), r.tables()) {
                    Value::Str(text) => out.push_str(&csv_text(&text)),
                    v => out.push_str(&csv_field(&v.to_string())),
                }
            }
            out.push('\n');
            ControlFlow::Continue(())
        })
        .unwrap();
        out.into_bytes()
    }

    /// The old JSON lines: a `serde_json::Value` per event.
    fn slow_jsonl(input: &Input) -> Vec<u8> {
        let r = &input.reader;
        let keys = iocap_filter::fields::canonical().collect::<Vec<_>>();
        let mut out = String::new();
        scan::for_each_match(r, &input.filter, ColSet::ALL, |cols, i| {
            out.push_str(&event_json(&keys, &cols.event(i), r.meta(), r.tables()).to_string());
            out.push('\n');
            ControlFlow::Continue(())
        })
        .unwrap();
        out.into_bytes()
    }

    /// The capture at `path` with `filter`, as `input::open` opens it.
    pub(crate) fn input(path: &std::path::Path, filter: &str) -> Input {
        let reader = Reader::open(path).unwrap();
        let parsed = iocap_filter::Filter::parse(filter).unwrap();
        Input {
            filter: parsed.compile(reader.meta(), reader.tables()),
            origin: reader.meta().start_ts,
            reader,
            parsed,
            src: filter.to_string(),
            #[cfg(unix)]
            stream: None,
        }
    }

    #[test]
    fn fast_csv_and_jsonl_are_the_field_by_field_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = super::super::tests::varied_capture(dir.path());
        for filter in ["", "evt.class=block", "evt.failed", "proc.name=worker-3"] {
            let input = input(&path, filter);
            let (mut csv, mut jsonl) = (Vec::new(), Vec::new());
            write_csv(&mut csv, &input).unwrap();
            write_jsonl(&mut jsonl, &input).unwrap();
            let slow = slow_csv(&input);
            assert!(slow.len() > 200, "{filter}: the capture matched");
            assert_eq!(
                String::from_utf8_lossy(&csv),
                String::from_utf8_lossy(&slow),
                "{filter}"
            );
            assert_eq!(
                String::from_utf8_lossy(&jsonl),
                String::from_utf8_lossy(&slow_jsonl(&input)),
                "{filter}"
            );
        }
    }
}
