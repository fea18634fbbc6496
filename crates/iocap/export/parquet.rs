//! `export --format parquet`: one row per matching event, every field of `iocap fields` a typed
//! column named as SQL takes it unquoted (`proc_name` for `proc.name`), then the event's
//! wall-clock start as a UTC timestamp and the capture's host, kernel and id. PARQUET.md has
//! the schema and the queries a fleet's dataset answers.
//!
//! Written with the `parquet` crate's column writers, without Arrow: each chunk's matching rows
//! go column by column ([`Cells`]) into one column writer per column, whose pages (zstd,
//! strings dictionary-encoded, numbers with statistics per page) are kept in memory until the row group is
//! full and then appended to the file in column order. Memory is one row group's compressed
//! pages, whatever the capture's size.

use std::io::Write;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::Context;
use bytes::Bytes;
use iocap_analysis::scan;
use iocap_filter::fields::{FieldId, FieldInfo, FieldType};
use iocap_format::{ColSet, Columns, Meta};
use parquet::basic::{Compression, LogicalType, Repetition, TimeUnit, Type as PhysicalType, ZstdLevel};
use parquet::column::page::{CompressedPage, PageWriteSpec, PageWriter};
use parquet::column::writer::{get_column_writer, ColumnWriter};
use parquet::data_type::ByteArray;
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterPropertiesPtr};
use parquet::file::writer::{SerializedFileWriter, SerializedPageWriter, TrackedWrite};
use parquet::schema::types::{ColumnPath, SchemaDescriptor, Type, TypePtr};

use super::cells::{Cell, Cells, Flavor};
use crate::events::canonical_fields;
use crate::input::Input;

/// Rows a row group holds at most: with iocap's events at 5–15 bytes a row in Parquet, tens
/// of MB, what engines read in parallel.
const ROW_GROUP_ROWS: usize = 1 << 22;

/// A field's column name: SQL takes it without quotes (`proc.name` → `proc_name`).
pub fn column_name(f: &FieldInfo) -> String {
    f.name.replace('.', "_")
}

/// Whether a field has a value for every event (its column is `REQUIRED`).
fn always_present(id: FieldId) -> bool {
    use FieldId::*;
    matches!(
        id,
        ProcPid
            | ThreadTid
            | EvtType
            | EvtClass
            | EvtRes
            | EvtFailed
            | EvtTime
            | Latency
            | IoBytes
            | IoDir
            | IsIoRead
            | IsIoWrite
            | EvtCpu
    )
}

/// The columns after the fields': the start as a timestamp, then the capture's host, kernel
/// and id, then its span (ns from its start to its stop: what rates are over).
const EXTRA: [&str; 5] = ["ts", "host", "kernel", "capture_id", "capture_ns"];

/// The file's schema: the fields' columns, then [`EXTRA`].
fn schema(keys: &[&'static FieldInfo]) -> anyhow::Result<TypePtr> {
    let mut cols = Vec::new();
    for f in keys {
        let (physical, logical) = match f.ty {
            FieldType::Str => (PhysicalType::BYTE_ARRAY, Some(LogicalType::String)),
            FieldType::Bool => (PhysicalType::BOOLEAN, None),
            FieldType::Int | FieldType::UInt | FieldType::Duration | FieldType::Bytes => (PhysicalType::INT64, None),
        };
        let repetition = if always_present(f.id) {
            Repetition::REQUIRED
        } else {
            Repetition::OPTIONAL
        };
        let col = Type::primitive_type_builder(&column_name(f), physical)
            .with_repetition(repetition)
            .with_logical_type(logical)
            .build()?;
        cols.push(Arc::new(col));
    }
    let ts = Type::primitive_type_builder("ts", PhysicalType::INT64)
        .with_repetition(Repetition::REQUIRED)
        .with_logical_type(Some(LogicalType::timestamp(true, TimeUnit::NANOS)))
        .build()?;
    cols.push(Arc::new(ts));
    for name in &EXTRA[1..4] {
        let col = Type::primitive_type_builder(name, PhysicalType::BYTE_ARRAY)
            .with_repetition(Repetition::REQUIRED)
            .with_logical_type(Some(LogicalType::String))
            .build()?;
        cols.push(Arc::new(col));
    }
    let span = Type::primitive_type_builder("capture_ns", PhysicalType::INT64)
        .with_repetition(Repetition::REQUIRED)
        .build()?;
    cols.push(Arc::new(span));
    Ok(Arc::new(
        Type::group_type_builder("iocap_event").with_fields(cols).build()?,
    ))
}

/// zstd, dictionaries for the strings, delta encoding for the numbers, which have statistics
/// per page.
fn properties(keys: &[&'static FieldInfo]) -> anyhow::Result<WriterPropertiesPtr> {
    let mut b = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1)?))
        .set_dictionary_enabled(false)
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_created_by(format!("iocap {}", env!("CARGO_PKG_VERSION")));
    let strings = keys
        .iter()
        .filter(|f| f.ty == FieldType::Str)
        .map(|f| column_name(f))
        .chain(EXTRA[1..4].iter().map(|s| s.to_string()));
    for name in strings {
        b = b.set_column_dictionary_enabled(ColumnPath::from(name.clone()), true);
        // A string's min and max cost a comparison per value, more than the rest of its
        // column (measured: 1.5 s of 4.1 s for 2 M events); engines prune on the numbers
        // (times, latencies), and on the host by its partition.
        b = b.set_column_statistics_enabled(ColumnPath::from(name), EnabledStatistics::None);
    }
    // Times, latencies, ids: deltas bit-packed take a third of what plain values do after zstd
    // (2 M events: 11.3 MB against 19.5 MB), and cost less time than the bytes they save.
    {
        let ints = keys
            .iter()
            .filter(|f| !matches!(f.ty, FieldType::Str | FieldType::Bool))
            .map(|f| column_name(f))
            .chain(["ts".to_string(), "capture_ns".to_string()]);
        for n in ints {
            b = b.set_column_encoding(ColumnPath::from(n), parquet::basic::Encoding::DELTA_BINARY_PACKED);
        }
    }
    Ok(Arc::new(b.build()))
}

/// A column's pages, kept in memory until its row group is written: the column writer owns
/// its page writer, so the row group keeps a second handle on the bytes.
#[derive(Clone, Default)]
struct SharedBuf(Arc<Mutex<Vec<u8>>>);

impl SharedBuf {
    /// The bytes written, leaving the buffer empty.
    fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl Write for SharedBuf {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The page writer of one column of a row group: onto a [`SharedBuf`].
struct MemPages {
    sink: TrackedWrite<SharedBuf>,
}

impl PageWriter for MemPages {
    fn write_page(&mut self, page: CompressedPage) -> parquet::errors::Result<PageWriteSpec> {
        SerializedPageWriter::new(&mut self.sink).write_page(page)
    }

    fn close(&mut self) -> parquet::errors::Result<()> {
        Ok(())
    }
}

/// What one column's values for a chunk are gathered into before its writer takes them.
#[derive(Default)]
struct Batch {
    ints: Vec<i64>,
    bools: Vec<bool>,
    strings: Vec<ByteArray>,
    /// The strings' bytes, one buffer the values slice.
    text: Vec<u8>,
    spans: Vec<(usize, usize)>,
    defs: Vec<i16>,
}

/// The column writers of the row group being filled.
struct RowGroup {
    writers: Vec<ColumnWriter<'static>>,
    /// Each column's pages.
    pages: Vec<SharedBuf>,
    rows: usize,
}

/// Write the matching events of `input` to `out` as a Parquet file; returns `out`.
pub fn write<W: Write + Send>(out: W, input: &Input) -> anyhow::Result<W> {
    let r = &input.reader;
    let meta = r.meta();
    let keys = canonical_fields();
    let schema = schema(&keys)?;
    let props = properties(&keys)?;
    let descr = SchemaDescriptor::new(schema.clone());
    let mut file = SerializedFileWriter::new(out, schema, props.clone())?;
    let new_group = || {
        let pages: Vec<SharedBuf> = (0..descr.num_columns()).map(|_| SharedBuf::default()).collect();
        let writers = pages
            .iter()
            .enumerate()
            .map(|(i, buf)| {
                let sink = TrackedWrite::new(buf.clone());
                get_column_writer(descr.column(i), props.clone(), Box::new(MemPages { sink }))
            })
            .collect();
        RowGroup {
            writers,
            pages,
            rows: 0,
        }
    };
    // The reader escaped the header's strings.
    let capture = [meta.host.clone(), meta.kernel.clone(), meta.capture_id()]
        .map(|s| ByteArray::from(Bytes::from(s.into_bytes())));
    let (start, stop) = scan::capture_span(r);
    let span = i64::try_from(stop - start).unwrap_or(i64::MAX);
    let mut cells = Cells::new(&keys, Flavor::Raw, meta, r.tables());
    let mut group = new_group();
    let mut batch = Batch::default();
    let mut err = None;
    let all = 0..r.chunks().len();
    scan::for_each_matching_chunk_in(r, &input.filter, ColSet::ALL, all, |c, bits| {
        let n = cells.load(c, bits);
        if n == 0 {
            return ControlFlow::Continue(());
        }
        let mut wrote = || -> anyhow::Result<()> {
            for (k, f) in keys.iter().enumerate() {
                batch.gather(&cells, c, k, f)?;
                batch.write(&mut group.writers[k], !always_present(f.id))?;
            }
            let extra = &mut group.writers[keys.len()..];
            batch.timestamps(&cells, c, meta.boot_to_wall_ns);
            batch.write(&mut extra[0], false)?;
            for (w, value) in extra[1..4].iter_mut().zip(&capture) {
                batch.strings.clear();
                batch.strings.resize(n, value.clone());
                batch.write(w, false)?;
            }
            batch.ints.clear();
            batch.ints.resize(n, span);
            batch.write(&mut extra[4], false)?;
            group.rows += n;
            if group.rows >= ROW_GROUP_ROWS {
                flush(&mut file, std::mem::replace(&mut group, new_group()))?;
            }
            Ok(())
        };
        match wrote() {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                err = Some(e);
                ControlFlow::Break(())
            }
        }
    })?;
    if let Some(e) = err {
        return Err(e);
    }
    if group.rows > 0 {
        flush(&mut file, group)?;
    }
    // The footer, then the writer's buffer flushed.
    Ok(file.into_inner()?)
}

/// Append a full row group's columns to the file.
fn flush<W: Write + Send>(file: &mut SerializedFileWriter<W>, group: RowGroup) -> anyhow::Result<()> {
    let mut rg = file.next_row_group()?;
    for (w, pages) in group.writers.into_iter().zip(&group.pages) {
        // Closing writes the last pages (and a dictionary page first): then they are all there.
        let closed = w.close()?;
        rg.append_column(&Bytes::from(pages.take()), closed)?;
    }
    rg.close()?;
    Ok(())
}

impl Batch {
    /// Field `k`'s values for the loaded rows of chunk `c`, with definition levels (1: a
    /// value, 0: null) for an optional column.
    fn gather(&mut self, cells: &Cells, c: &Columns, k: usize, f: &FieldInfo) -> anyhow::Result<()> {
        self.ints.clear();
        self.bools.clear();
        self.strings.clear();
        self.text.clear();
        self.spans.clear();
        self.defs.clear();
        for row in 0..cells.len() {
            let cell = cells.cell(c, k, row);
            self.defs.push(i16::from(cell != Cell::Absent));
            match cell {
                Cell::Absent => {}
                Cell::Int(v) => self.ints.push(v),
                // Engines have no unsigned 64-bit integer in common: a value past i64's (a
                // hostile capture's) is cut to its maximum.
                Cell::UInt(v) => self.ints.push(i64::try_from(v).unwrap_or(i64::MAX)),
                Cell::Bool(b) => self.bools.push(b),
                s @ Cell::Str(..) => {
                    let start = self.text.len();
                    self.text.extend_from_slice(cells.text(s));
                    self.spans.push((start, self.text.len()));
                }
            }
        }
        if f.ty == FieldType::Str {
            // One buffer for the chunk's strings, which the values share.
            let text = Bytes::from(std::mem::take(&mut self.text));
            self.strings
                .extend(self.spans.iter().map(|&(a, b)| ByteArray::from(text.slice(a..b))));
        }
        Ok(())
    }

    /// The wall-clock start of each loaded row, ns since the Unix epoch.
    fn timestamps(&mut self, cells: &Cells, c: &Columns, boot_to_wall: i64) {
        self.ints.clear();
        self.defs.clear();
        self.ints.extend((0..cells.len()).map(|row| {
            let ts = c.ts.get(cells.row(row)).copied().unwrap_or(0);
            let wall = i128::from(ts) + i128::from(boot_to_wall);
            i64::try_from(wall).unwrap_or(i64::MAX)
        }));
    }

    /// Hand the gathered values to column writer `w`.
    fn write(&self, w: &mut ColumnWriter<'static>, optional: bool) -> anyhow::Result<()> {
        let defs = optional.then_some(self.defs.as_slice());
        match w {
            ColumnWriter::BoolColumnWriter(w) => w.write_batch(&self.bools, defs, None)?,
            ColumnWriter::Int64ColumnWriter(w) => w.write_batch(&self.ints, defs, None)?,
            ColumnWriter::ByteArrayColumnWriter(w) => w.write_batch(&self.strings, defs, None)?,
            _ => anyhow::bail!("parquet: a column of a type iocap does not write"),
        };
        Ok(())
    }
}

/// Where a capture's file goes in the dataset at `dir`, its directories made (0700):
/// `dir/host=<host>/date=<YYYY-MM-DD>/part-<capture id>.parquet`, the date the capture's start
/// (UTC). Exporting several captures into one directory makes a fleet's dataset that engines
/// read with Hive partitioning; exporting a capture again replaces its file.
pub fn partition(dir: &Path, meta: &Meta) -> anyhow::Result<PathBuf> {
    let start = i128::from(meta.start_ts) + i128::from(meta.boot_to_wall_ns);
    let date = &crate::info::rfc3339(start)[..10];
    let parent = dir
        .join(format!("host={}", path_part(&meta.host)))
        .join(format!("date={date}"));
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(&parent)
        .with_context(|| format!("{}", parent.display()))?;
    Ok(parent.join(format!("part-{}.parquet", meta.capture_id())))
}

/// A host name (as the reader escaped it: no control bytes) as one path component that an
/// engine reading the dataset with Hive partitioning decodes to the `host` column's value:
/// letters, digits, `-`, `_` and `.` as they are and every other byte (a `/`, `=`, `%`, a
/// backslash) as `%XX`, which the engines decode; at most 200 bytes (a hostile header's name
/// could be longer than a file name may be: the column keeps it whole), a name of dots only
/// (`..`) escaped whole, and an empty one (a synthetic capture's) `unknown`.
fn path_part(host: &str) -> String {
    let dots = host.bytes().all(|b| b == b'.');
    let mut out = String::new();
    for b in host.bytes() {
        let part = if (b.is_ascii_alphanumeric() || b"-_.".contains(&b)) && !dots {
            char::from(b).to_string()
        } else {
            format!("%{b:02X}")
        };
        if out.len() + part.len() > 200 {
            break;
        }
        out.push_str(&part);
    }
    if out.is_empty() {
        out.push_str("unknown");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PARQUET.md's schema table is the schema: each column in order, its type and whether it
    /// can be null.
    #[test]
    fn the_documented_schema_is_the_schema() {
        let doc = include_str!("../../../PARQUET.md");
        let rows: Vec<Vec<&str>> = doc
            .lines()
            .filter(|l| l.starts_with("| `"))
            .map(|l| l.split(" | ").collect())
            .collect();
        let schema = schema(&canonical_fields()).unwrap();
        let cols = schema.get_fields();
        assert_eq!(rows.len(), cols.len());
        for (row, col) in rows.iter().zip(cols) {
            assert_eq!(row[0], format!("| `{}`", col.name()));
            let ty = match (col.get_physical_type(), col.get_basic_info().logical_type_ref()) {
                (PhysicalType::BYTE_ARRAY, _) => "STRING",
                (PhysicalType::BOOLEAN, _) => "BOOLEAN",
                (PhysicalType::INT64, Some(LogicalType::Timestamp { .. })) => "TIMESTAMP",
                (PhysicalType::INT64, _) => "INT64",
                (t, _) => panic!("{t}"),
            };
            assert!(row[2].starts_with(ty), "{row:?}");
            let required = col.get_basic_info().repetition() == Repetition::REQUIRED;
            assert_eq!(row[3] == "required", required, "{row:?}");
        }
    }

    #[test]
    fn hostile_host_names_make_one_plain_path_component() {
        assert_eq!(path_part("db-1.example.com"), "db-1.example.com");
        assert_eq!(path_part("../etc"), "..%2Fetc");
        assert_eq!(path_part(".."), "%2E%2E");
        assert_eq!(path_part(""), "unknown");
        // The reader shows a line break as `\n`: its backslash is a byte like another.
        assert_eq!(path_part("a=b\\n\u{e9}"), "a%3Db%5Cn%C3%A9");
        assert_eq!(path_part("%"), "%25");
        assert_eq!(path_part(&"x".repeat(300)).len(), 200);
        assert_eq!(path_part(&"/".repeat(100)).len(), 198);
    }
}
