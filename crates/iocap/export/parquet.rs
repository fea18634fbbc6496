//! `export --format parquet`: one row per matching event, every field of `iocap fields` a typed
//! column named as SQL takes it unquoted (`proc_name` for `proc.name`), then the event's
//! wall-clock start as a UTC timestamp and the capture's kernel and span. PARQUET.md has
//! the schema and the queries a fleet's dataset answers.
//!
//! Written with the `parquet` crate's column writers, without Arrow: each chunk's matching rows
//! go column by column ([`Cells`]) into one column writer per column, whose pages (zstd,
//! strings dictionary-encoded, numbers with statistics per page) are kept in memory until the row group is
//! full and then appended to the file in column order. Memory is one row group's compressed
//! pages, whatever the capture's size.

use std::collections::HashMap;
use std::io::Write;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use bytes::Bytes;
use iocap_analysis::scan;
use iocap_filter::fields::{FieldInfo, FieldType};
use iocap_format::{ColSet, Columns, Meta};
use parquet::basic::{Compression, Encoding, LogicalType, Repetition, TimeUnit, Type as PhysicalType, ZstdLevel};
use parquet::column::page::{CompressedPage, Page, PageWriter};
use parquet::column::writer::ColumnCloseResult;
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::file::properties::{WriterProperties, WriterPropertiesPtr};
use parquet::file::statistics::Statistics;
use parquet::file::writer::{SerializedFileWriter, SerializedPageWriter, TrackedWrite};
use parquet::schema::types::{ColumnDescPtr, SchemaDescriptor, Type, TypePtr};

use super::cells::{Cell, Cells, Flavor, Keyed};
use crate::input::Input;

mod encode;

/// Rows a row group holds at most: with iocap's events at 5–15 bytes a row in Parquet, tens
/// of MB, what engines read in parallel.
const ROW_GROUP_ROWS: usize = 1 << 22;

/// A field's column name: SQL takes it without quotes (`proc.name` → `proc_name`).
pub fn column_name(f: &FieldInfo) -> String {
    f.name.replace('.', "_")
}

/// The file's schema: the fields' columns (which hold the capture's host and id), then the
/// event's start as a timestamp (`ts`), the capture's kernel and its span (`capture_ns`: ns from
/// its start to its stop, what rates are over).
fn schema(keys: &[&'static FieldInfo]) -> anyhow::Result<TypePtr> {
    let mut cols = Vec::new();
    for f in keys {
        let (physical, logical) = match f.ty {
            FieldType::Str => (PhysicalType::BYTE_ARRAY, Some(LogicalType::String)),
            FieldType::Bool => (PhysicalType::BOOLEAN, None),
            FieldType::Int | FieldType::UInt | FieldType::Duration | FieldType::Bytes => (PhysicalType::INT64, None),
        };
        let repetition = if f.read.always() {
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
    let kernel = Type::primitive_type_builder("kernel", PhysicalType::BYTE_ARRAY)
        .with_repetition(Repetition::REQUIRED)
        .with_logical_type(Some(LogicalType::String))
        .build()?;
    cols.push(Arc::new(kernel));
    let span = Type::primitive_type_builder("capture_ns", PhysicalType::INT64)
        .with_repetition(Repetition::REQUIRED)
        .build()?;
    cols.push(Arc::new(span));
    Ok(Arc::new(
        Type::group_type_builder("iocap_event").with_fields(cols).build()?,
    ))
}

/// The file's properties: who wrote it. The pages are iocap's ([`Column`]).
fn properties() -> WriterPropertiesPtr {
    Arc::new(
        WriterProperties::builder()
            .set_created_by(format!("iocap {}", env!("CARGO_PKG_VERSION")))
            .build(),
    )
}

/// Rows a data page holds at most.
const PAGE_ROWS: usize = 1 << 16;

/// A string column's dictionary for the row group being filled: each distinct string once,
/// found from the [`Cells`] entry that holds it, so a row costs an index lookup, not a hash
/// of its bytes.
#[derive(Default)]
struct Dict {
    /// Entry → index (`None`: the entry has no value), for the entries of `generation`
    /// seen so far.
    by_entry: Vec<Option<u32>>,
    generation: u64,
    /// The strings, to find one that two entries share.
    by_text: HashMap<Vec<u8>, u32>,
    /// The strings `PLAIN`-encoded: the dictionary page.
    plain: Vec<u8>,
}

impl Dict {
    fn len(&self) -> usize {
        self.by_text.len()
    }

    /// The index of `text`, added if new.
    fn index(&mut self, text: &[u8]) -> u32 {
        if let Some(&i) = self.by_text.get(text) {
            return i;
        }
        let i = self.by_text.len() as u32;
        self.plain.extend_from_slice(&(text.len() as u32).to_le_bytes());
        self.plain.extend_from_slice(text);
        self.by_text.insert(text.to_vec(), i);
        i
    }

    fn clear(&mut self) {
        self.by_entry.clear();
        self.by_text.clear();
        self.plain.clear();
    }
}

/// The values of rows whose entries are `rows`, from each entry's (`None`: absent): with
/// `defs` (an optional column), each row's definition level and the present values; without,
/// a value for every row (a required field has one for every entry).
#[inline(always)]
fn from_entries<T: Copy + Default>(
    rows: &[u32],
    by_entry: &[Option<T>],
    defs: Option<&mut Vec<u8>>,
    values: &mut Vec<T>,
) {
    let Some(defs) = defs else {
        return values.extend(rows.iter().map(|&e| by_entry[e as usize].unwrap_or_default()));
    };
    defs.extend(rows.iter().map(|&e| u8::from(by_entry[e as usize].is_some())));
    values.extend(rows.iter().filter_map(|&e| by_entry[e as usize]));
}

/// A number's (or boolean's) value in an `INT64` column; `None` when absent.
fn number(cell: Cell) -> Option<i64> {
    match cell {
        Cell::Absent => None,
        Cell::Int(v) => Some(v),
        // Engines have no unsigned 64-bit integer in common: a value past i64's (a hostile
        // capture's) is cut to its maximum.
        Cell::UInt(v) => Some(i64::try_from(v).unwrap_or(i64::MAX)),
        Cell::Bool(b) => Some(i64::from(b)),
        Cell::Str(..) => unreachable!("strings are taken by index"),
    }
}

/// One column's values as Parquet stores them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `INT64`, `DELTA_BINARY_PACKED`, with minimum and maximum.
    Int,
    /// `BOOLEAN`, `PLAIN`.
    Bool,
    /// `BYTE_ARRAY`, dictionary-encoded.
    Str,
}

/// A column of the row group being filled: the values of its page being filled, its pages
/// done (compressed), its dictionary.
struct Column {
    descr: ColumnDescPtr,
    kind: Kind,
    optional: bool,
    /// The page being filled: definition levels (optional columns), and values.
    defs: Vec<u8>,
    /// Numbers, and booleans as 0 or 1.
    ints: Vec<i64>,
    indices: Vec<u32>,
    rows: usize,
    /// This row group's data pages.
    pages: Vec<CompressedPage>,
    dict: Dict,
    /// A keyed number's value per entry (`None`: absent), for the entries of `generation`.
    by_entry: Vec<Option<i64>>,
    generation: u64,
    /// The row group's minimum and maximum (integers) and absent values.
    range: Option<(i64, i64)>,
    nulls: u64,
}

impl Column {
    fn new(descr: ColumnDescPtr, kind: Kind, optional: bool) -> Column {
        Column {
            descr,
            kind,
            optional,
            defs: Vec::new(),
            ints: Vec::new(),
            indices: Vec::new(),
            rows: 0,
            pages: Vec::new(),
            dict: Dict::default(),
            by_entry: Vec::new(),
            generation: 0,
            range: None,
            nulls: 0,
        }
    }

    /// Take a row's value (a string's already a dictionary index: [`Column::gather`]).
    fn take(&mut self, cell: Cell) {
        match number(cell) {
            None => self.defs.push(0),
            Some(v) => {
                self.ints.push(v);
                if self.optional {
                    self.defs.push(1);
                }
            }
        }
    }

    /// Take field `k`'s values for the loaded rows of chunk `c`.
    fn gather(&mut self, cells: &Cells, c: &Columns, k: usize) {
        self.rows += cells.len();
        if let Some(keyed) = cells.keyed(k) {
            if self.kind == Kind::Str {
                return self.gather_strings(cells, &keyed);
            }
            return self.gather_keyed_numbers(cells, &keyed);
        }
        let defs = self.optional.then_some(&mut self.defs);
        if cells.fill_numbers(c, k, &mut self.ints, defs) {
            return;
        }
        // A string field read per event (none is, today).
        for row in 0..cells.len() {
            match cells.cell(c, k, row) {
                s @ Cell::Str(..) => {
                    let i = self.dict.index(cells.text(s));
                    self.indices.push(i);
                    self.defs.push(1);
                }
                cell => self.take(cell),
            }
        }
    }

    /// A keyed string field's values: each entry's dictionary index found once, then the
    /// rows' indices copied from the entries'.
    fn gather_strings(&mut self, cells: &Cells, keyed: &Keyed) {
        let dict = &mut self.dict;
        if dict.generation != cells.generation() {
            dict.by_entry.clear();
            dict.generation = cells.generation();
        }
        // Entries are numbered as they come: only the new ones need a look.
        for entry in dict.by_entry.len()..keyed.entries {
            let i = match keyed.cell(entry as u32) {
                s @ Cell::Str(..) => Some(dict.index(cells.text(s))),
                _ => None,
            };
            dict.by_entry.push(i);
        }
        let defs = self.optional.then_some(&mut self.defs);
        from_entries(keyed.rows, &dict.by_entry, defs, &mut self.indices);
    }

    /// A keyed number's values: each entry's value found once, then the rows' values copied
    /// from the entries'.
    fn gather_keyed_numbers(&mut self, cells: &Cells, keyed: &Keyed) {
        if self.generation != cells.generation() {
            self.by_entry.clear();
            self.generation = cells.generation();
        }
        for entry in self.by_entry.len()..keyed.entries {
            self.by_entry.push(number(keyed.cell(entry as u32)));
        }
        let defs = self.optional.then_some(&mut self.defs);
        from_entries(keyed.rows, &self.by_entry, defs, &mut self.ints);
    }

    /// Take the same value for `n` rows.
    fn repeat(&mut self, n: usize, v: Repeat) {
        match v {
            Repeat::Int(v) => self.ints.resize(self.ints.len() + n, v),
            Repeat::Str(text) => {
                let i = self.dict.index(text);
                self.indices.resize(self.indices.len() + n, i);
            }
        }
        self.rows += n;
    }

    /// End the page being filled (if it holds a row): encoded, compressed, kept.
    fn end_page(&mut self, zstd: &mut zstd::bulk::Compressor<'_>) -> anyhow::Result<()> {
        if self.rows == 0 {
            return Ok(());
        }
        let mut buf = Vec::new();
        if self.optional {
            encode::def_levels(&self.defs, &mut buf);
        }
        let present = self.ints.len() + self.indices.len();
        let absent = (self.rows - present) as u64;
        self.nulls += absent;
        let mut statistics = None;
        let encoding = match self.kind {
            Kind::Int => {
                encode::delta_binary_packed(&self.ints, &mut buf);
                let range = self.ints.iter().fold(None, |r: Option<(i64, i64)>, &v| {
                    Some(r.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v))))
                });
                if let Some((lo, hi)) = range {
                    let (a, b) = self.range.unwrap_or((lo, hi));
                    self.range = Some((a.min(lo), b.max(hi)));
                }
                let (min, max) = (range.map(|r| r.0), range.map(|r| r.1));
                statistics = Some(Statistics::new(min, max, None, Some(absent), false));
                Encoding::DELTA_BINARY_PACKED
            }
            Kind::Bool => {
                encode::plain_bools(&self.ints, &mut buf);
                Encoding::PLAIN
            }
            Kind::Str => {
                // Indices below the dictionary's size so far: the page's width.
                let width = encode::bit_width(self.dict.len().saturating_sub(1) as u64).max(1);
                buf.push(width);
                encode::rle_hybrid(&self.indices, width, &mut buf);
                Encoding::RLE_DICTIONARY
            }
        };
        let page = Page::DataPage {
            buf: compress(zstd, &buf)?,
            num_values: self.rows as u32,
            encoding,
            def_level_encoding: Encoding::RLE,
            rep_level_encoding: Encoding::RLE,
            statistics,
        };
        self.pages.push(CompressedPage::new(page, buf.len()));
        // A chunk's page (up to 2^18 rows) may have grown them past a page's room: every
        // column keeping that much would be ~13 bytes a row times each column.
        self.defs.clear();
        self.defs.shrink_to(PAGE_ROWS);
        self.indices.clear();
        self.indices.shrink_to(PAGE_ROWS);
        self.ints.clear();
        self.ints.shrink_to(PAGE_ROWS);
        self.rows = 0;
        Ok(())
    }

    /// The row group's column chunk: its dictionary page, its data pages, and its metadata;
    /// the column left empty for the next row group.
    fn finish(&mut self, zstd: &mut zstd::bulk::Compressor<'_>) -> anyhow::Result<(Vec<u8>, ColumnCloseResult)> {
        self.end_page(zstd)?;
        let mut sink = TrackedWrite::new(Vec::new());
        let mut pages = SerializedPageWriter::new(&mut sink);
        let mut dictionary_offset = None;
        let mut uncompressed = 0;
        let mut values = 0;
        if self.kind == Kind::Str {
            let page = Page::DictionaryPage {
                buf: compress(zstd, &self.dict.plain)?,
                num_values: self.dict.len() as u32,
                encoding: Encoding::PLAIN,
                is_sorted: false,
            };
            let spec = pages.write_page(CompressedPage::new(page, self.dict.plain.len()))?;
            dictionary_offset = Some(spec.offset as i64);
            uncompressed += spec.uncompressed_size;
        }
        let mut data_offset = None;
        for page in self.pages.drain(..) {
            let spec = pages.write_page(page)?;
            data_offset.get_or_insert(spec.offset as i64);
            uncompressed += spec.uncompressed_size;
            values += spec.num_values;
        }
        let bytes = sink.into_inner()?;
        let encodings = match (self.kind, self.optional) {
            (Kind::Int, false) => vec![Encoding::DELTA_BINARY_PACKED],
            (Kind::Int, true) => vec![Encoding::RLE, Encoding::DELTA_BINARY_PACKED],
            (Kind::Bool, _) => vec![Encoding::PLAIN, Encoding::RLE],
            (Kind::Str, _) => vec![Encoding::PLAIN, Encoding::RLE, Encoding::RLE_DICTIONARY],
        };
        let mut metadata = ColumnChunkMetaData::builder(self.descr.clone())
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(ZSTD_LEVEL)?))
            .set_encodings(encodings)
            .set_num_values(i64::from(values))
            .set_total_compressed_size(bytes.len() as i64)
            .set_total_uncompressed_size(uncompressed as i64)
            .set_data_page_offset(data_offset.unwrap_or(0))
            .set_dictionary_page_offset(dictionary_offset);
        match (self.kind, self.range) {
            (Kind::Int, Some((lo, hi))) => {
                metadata = metadata.set_statistics(Statistics::new(Some(lo), Some(hi), None, Some(self.nulls), false));
            }
            _ => {
                metadata = metadata.set_statistics(Statistics::new::<i64>(None, None, None, Some(self.nulls), false));
            }
        }
        let close = ColumnCloseResult {
            bytes_written: bytes.len() as u64,
            rows_written: u64::from(values),
            metadata: metadata.build()?,
            bloom_filter: None,
            column_index: None,
            offset_index: None,
        };
        self.dict.clear();
        self.range = None;
        self.nulls = 0;
        Ok((bytes, close))
    }
}

/// `data` compressed, in a buffer of its own size: the pages of a row group are kept until it
/// is written, and zstd's output buffer is as big as the input could grow to.
fn compress(zstd: &mut zstd::bulk::Compressor<'_>, data: &[u8]) -> anyhow::Result<Bytes> {
    let mut z = zstd.compress(data)?;
    z.shrink_to_fit();
    Ok(Bytes::from(z))
}

/// A value every row of a chunk has in a column.
enum Repeat<'a> {
    Int(i64),
    Str(&'a [u8]),
}

/// zstd's level for the pages: the fastest, as the capture's own.
const ZSTD_LEVEL: i32 = 1;

/// How many rows a data page and a row group hold at most.
#[derive(Clone, Copy)]
struct Limits {
    page: usize,
    group: usize,
}

/// Write the matching events of `input` to `out` as a Parquet file; returns `out`.
pub fn write<W: Write + Send>(out: W, input: &Input) -> anyhow::Result<W> {
    let limits = Limits {
        page: PAGE_ROWS,
        group: ROW_GROUP_ROWS,
    };
    write_with(out, input, limits)
}

fn write_with<W: Write + Send>(out: W, input: &Input, limits: Limits) -> anyhow::Result<W> {
    let r = &input.reader;
    let meta = r.meta();
    let keys = iocap_filter::fields::canonical().collect::<Vec<_>>();
    let schema = schema(&keys)?;
    let descr = SchemaDescriptor::new(schema.clone());
    let mut file = SerializedFileWriter::new(out, schema, properties())?;
    let mut columns: Vec<Column> = (0..descr.num_columns())
        .map(|i| {
            let col = descr.column(i);
            let kind = match col.physical_type() {
                PhysicalType::BYTE_ARRAY => Kind::Str,
                PhysicalType::BOOLEAN => Kind::Bool,
                _ => Kind::Int,
            };
            let optional = col.self_type().get_basic_info().repetition() == Repetition::OPTIONAL;
            Column::new(col, kind, optional)
        })
        .collect();
    let mut zstd = zstd::bulk::Compressor::new(ZSTD_LEVEL)?;
    // The reader escaped the header's strings.
    let kernel = meta.kernel.as_bytes();
    let (start, stop) = scan::capture_span(r);
    let span = i64::try_from(stop - start).unwrap_or(i64::MAX);
    let mut cells = Cells::new(&keys, Flavor::Raw, meta, r.tables());
    let mut rows = 0;
    let mut err = None;
    let all = 0..r.chunks().len();
    scan::for_each_matching_chunk_in(r, &input.filter, ColSet::ALL, all, |c, bits| {
        let n = cells.load(c, bits);
        if n == 0 {
            return ControlFlow::Continue(());
        }
        let mut wrote = || -> anyhow::Result<()> {
            // A column's page ends as soon as it is full, before the next column is gathered:
            // a chunk (up to 2^18 rows) is then one column's values in memory at a time, not
            // every column's.
            let mut page_full = |col: &mut Column| -> anyhow::Result<()> {
                if col.rows >= limits.page {
                    col.end_page(&mut zstd)?;
                }
                Ok(())
            };
            let (fields, extra) = columns.split_at_mut(keys.len());
            for (k, col) in fields.iter_mut().enumerate() {
                col.gather(&cells, c, k);
                page_full(col)?;
            }
            extra[0].ints.extend((0..n).map(|row| {
                let ts = c.ts.get(cells.row(row)).copied().unwrap_or(0);
                let wall = i128::from(ts) + i128::from(meta.boot_to_wall_ns);
                i64::try_from(wall).unwrap_or(i64::MAX)
            }));
            extra[0].rows += n;
            page_full(&mut extra[0])?;
            extra[1].repeat(n, Repeat::Str(kernel));
            page_full(&mut extra[1])?;
            extra[2].repeat(n, Repeat::Int(span));
            page_full(&mut extra[2])?;
            rows += n;
            if rows >= limits.group {
                flush(&mut file, &mut columns, &mut zstd)?;
                rows = 0;
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
    if rows > 0 {
        flush(&mut file, &mut columns, &mut zstd)?;
    }
    // The footer, then the writer's buffer flushed.
    Ok(file.into_inner()?)
}

/// Append the row group's columns to the file.
fn flush<W: Write + Send>(
    file: &mut SerializedFileWriter<W>,
    columns: &mut [Column],
    zstd: &mut zstd::bulk::Compressor<'_>,
) -> anyhow::Result<()> {
    let mut rg = file.next_row_group()?;
    for col in columns {
        let (bytes, close) = col.finish(zstd)?;
        rg.append_column(&Bytes::from(bytes), close)?;
    }
    rg.close()?;
    Ok(())
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
        let schema = schema(&iocap_filter::fields::canonical().collect::<Vec<_>>()).unwrap();
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

    /// Each row read back (the parquet crate's own reader) is the event's fields as
    /// [`fields::value`] gives them, with its wall-clock start, the kernel and the span: on a
    /// capture with every class, hostile strings, extreme numbers and absent table entries,
    /// under filters, with pages and row groups small enough that there are many (a string
    /// column's dictionary is the row group's).
    #[test]
    fn every_value_reads_back_as_the_field_gives_it() {
        use iocap_filter::fields::{self, Value};
        use parquet::file::reader::{FileReader, SerializedFileReader};
        use parquet::record::Field;

        let dir = tempfile::tempdir().unwrap();
        let path = crate::export::tests::varied_capture(dir.path());
        let keys = iocap_filter::fields::canonical().collect::<Vec<_>>();
        for (filter, limits) in [
            ("", Limits { page: 100, group: 1000 }),
            ("", Limits { page: 7, group: 64 }),
            ("evt.class=block", Limits { page: 50, group: 333 }),
            (
                "proc.name=worker-3",
                Limits {
                    page: PAGE_ROWS,
                    group: ROW_GROUP_ROWS,
                },
            ),
        ] {
            let input = crate::export::text::tests::input(&path, filter);
            let r = &input.reader;
            let file = write_with(Vec::new(), &input, limits).unwrap();
            let file = SerializedFileReader::new(Bytes::from(file)).unwrap();
            let groups = file.metadata().num_row_groups();
            let mut rows = file.get_row_iter(None).unwrap();
            let (start, stop) = scan::capture_span(r);
            let mut n = 0;
            scan::for_each_match(r, &input.filter, ColSet::ALL, |cols, i| {
                let e = cols.event(i);
                let row = rows.next().expect("a row per event").unwrap();
                let got: Vec<&Field> = row.get_column_iter().map(|(_, f)| f).collect();
                for (k, f) in keys.iter().enumerate() {
                    let want = match fields::value(f, &e, r.meta(), r.tables()) {
                        Value::Str(s) => Field::Str(s.to_string()),
                        Value::Int(v) => Field::Long(v),
                        Value::UInt(v) | Value::Duration(v) | Value::Bytes(v) => {
                            Field::Long(i64::try_from(v).unwrap_or(i64::MAX))
                        }
                        Value::Bool(b) => Field::Bool(b),
                        Value::Absent => Field::Null,
                    };
                    assert_eq!(got[k], &want, "{filter}: event {n}, {}", f.name);
                }
                let wall = e.ts as i64 + r.meta().boot_to_wall_ns;
                // The row reader gives a nanosecond timestamp as its number.
                assert_eq!(got[keys.len()], &Field::Long(wall), "ts");
                assert_eq!(got[keys.len() + 1], &Field::Str(r.meta().kernel.clone()));
                assert_eq!(got[keys.len() + 2], &Field::Long((stop - start) as i64));
                n += 1;
                ControlFlow::Continue(())
            })
            .unwrap();
            assert!(rows.next().is_none(), "{filter}: no more rows than events");
            assert!(n > 100, "{filter}: {n} events matched");
            // A row group ends at the first chunk (500 events here) that fills it.
            assert_eq!(groups > 1, n > limits.group, "{filter}: {groups} row groups");
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
