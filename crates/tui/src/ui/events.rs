//! Drawing the event list (columns as biosnoop/sysdig print them) and the detail popup of the
//! selected event. A row not decoded yet ([`crate::panes::events::List::rows`]) shows as `…`.

use iocap_analysis::units::{self, Style::Terminal as TERM};
use iocap_filter::fields;
use iocap_format::{BlockOp, Cause, Class, Event, Reason, WAIT_COLS};
use ratatui::layout::{Constraint, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Cell, Clear, Paragraph, Row, Table};
use ratatui::Frame;

use crate::app::App;
use crate::layout::Pane;
use crate::panes::events::Sort;
use super::{block, counted};
use crate::panes::{cut, fit_title, width};
use crate::worker::links::{self, Links, AFTER, MAX_CHUNKS};

/// Draw the event list pane in `area`.
pub fn render(app: &App, f: &mut Frame, area: Rect) {
    let focused = app.focus == Pane::Events;
    let n = app.list.len(app.answer.as_ref());
    let order = match (app.list.sort, &app.answer) {
        (Sort::Time, _) => "by time".to_string(),
        // Only the slowest K are kept: say of how many.
        (Sort::Latency, Some(a)) if (a.slowest.len() as u64) < a.matched => {
            format!("slowest of {}", units::count(a.matched))
        }
        (Sort::Latency, _) => "slowest first".to_string(),
    };
    let title = match (n, &app.answer) {
        (0, _) => format!(" Events, none, {order} "),
        // Sorted by latency, the list holds the slowest, which its order says of how many.
        (_, Some(a)) if app.list.sort == Sort::Time => {
            let [long, short] = counted(app, a.matched);
            let at = units::count(app.list.sel as u64 + 1);
            fit_title(
                area.width,
                [
                    format!(" Events {at}/{long}, {order} (s) "),
                    format!(" Events {at}/{short}, {order} (s) "),
                ],
            )
        }
        _ => format!(
            " Events {}/{}, {order} (s) ",
            units::count(app.list.sel as u64 + 1),
            units::count(n as u64)
        ),
    };
    let block = block(app, title, focused);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let shown: Vec<(usize, Option<&Event>)> = (app.list.top..(app.list.top + app.layout.list_rows).min(n))
        .map(|i| (i, app.list.row(i)))
        .collect();
    let widths = column_widths(inner.width, shown.iter().filter_map(|(_, e)| e.map(|e| type_name(app, e))));
    let [time_w, proc_w, pid_w, type_w, bytes_w, lat_w, res_w] = widths;
    let file_w = usize::from(inner.width.saturating_sub(widths.iter().sum::<u16>() + 7)).max(10);
    let arch = &app.cap.reader.meta().arch;
    let rows = shown.into_iter().map(|(i, e)| {
        let row = match e {
            Some(e) => {
                let mut c = columns(app, e);
                c[1] = cut(&c[1], usize::from(proc_w));
                c[3] = cut(&c[3], usize::from(type_w));
                c[4] = match e.class {
                    Class::Block => disk_and_file(&c[4], &field_text(app, "fd.name", e), file_w),
                    Class::Syscall | Class::IoUring | Class::Journal => cut(&c[4], file_w),
                };
                c[7] = res_cell(e, arch, usize::from(res_w));
                Row::new(c.into_iter().map(Cell::from))
            }
            None => Row::new([Cell::from("…")]).style(app.theme.dim()),
        };
        if focused && i == app.list.sel {
            row.style(app.theme.cursor())
        } else {
            row
        }
    });
    let widths = [
        Constraint::Length(time_w),
        Constraint::Length(proc_w),
        Constraint::Length(pid_w),
        Constraint::Length(type_w),
        Constraint::Min(10),
        Constraint::Length(bytes_w),
        Constraint::Length(lat_w),
        Constraint::Length(res_w),
    ];
    let header = Row::new(["END", "PROC", "PID", "TYPE", "FILE/DISK", "BYTES", "LAT", "RES"]).style(app.theme.dim());
    f.render_widget(Table::new(rows, widths).header(header).column_spacing(1), inner);
}

/// The list's fixed columns (TIME, PROC, PID, TYPE, BYTES, LAT, RES) below 100 cells: 80×24
/// leaves 76, of which FILE/DISK keeps what these and the 7 gaps leave (15). LAT holds any
/// [`units::duration`] (`20.0ms`), RES an errno name as long as `ENOENT`.
const NARROW: [u16; 7] = [8, 12, 7, 9, 5, 6, 7];
/// The same from 100 cells.
const WIDE: [u16; 7] = [10, 15, 7, 10, 6, 8, 9];
/// The RES cell of an event still in flight when the recording stopped.
const UNFINISHED: &str = "unfin";
/// The widest TYPE column (`io_uring_register` and `uring provide_buffers` are cut).
const TYPE_MAX: u16 = 20;
/// What FILE/DISK keeps when TYPE widens.
const FILE_MIN: u16 = 24;

/// The fixed columns' widths in a pane `inner` cells wide whose rows on screen have the event
/// types `types`: TYPE as wide as the widest of them (so `rt_sigprocmask` reads whole), up to
/// [`TYPE_MAX`] while FILE/DISK keeps [`FILE_MIN`], and never narrower than its heading.
fn column_widths(inner: u16, types: impl Iterator<Item = String>) -> [u16; 7] {
    let mut w = if inner < 100 { NARROW } else { WIDE };
    let Some(widest) = types.map(|t| width(&t)).max() else {
        return w;
    };
    let spare = inner.saturating_sub(w.iter().sum::<u16>() + 7 + FILE_MIN);
    let most = TYPE_MAX.min(w[3] + spare).max(w[3]);
    w[3] = u16::try_from(widest).unwrap_or(u16::MAX).clamp(4, most);
    w
}

/// A return value in `w` columns: an error as its errno's name (`ENOENT`, cut in the middle when
/// longer), an address returned by `mmap`, `mremap`, `brk` or `shmat` in hex (`0x7f3a…`, its
/// start: which mapping it is), anything else as [`number_cell`] writes it. The detail popup
/// shows the number whole. An operation still in flight at the recording's end has none:
/// `unfin` (the popup says `evt.unfinished`).
fn res_cell(e: &Event, arch: &str, w: usize) -> String {
    if e.unfinished() {
        return cut(UNFINISHED, w);
    }
    if e.ret < 0 {
        return cut(&fields::errno_name(e.ret.unsigned_abs()), w);
    }
    if fields::returns_address(arch, e.class, e.nr) {
        let hex = format!("{:#x}", e.ret);
        return match hex.len() <= w {
            true => hex,
            false => format!("{}…", &hex[..w.saturating_sub(1)]),
        };
    }
    number_cell(e.ret, w)
}

/// A number in `w` columns: as is when it fits, else (a 1 MiB read's 1048576) in three
/// significant digits with k, M, G, T, P or E (powers of 1000), never cut to a different number.
fn number_cell(ret: i64, w: usize) -> String {
    let plain = ret.to_string();
    if plain.len() <= w {
        return plain;
    }
    let mut v = ret.unsigned_abs() as f64;
    let mut unit = "";
    for u in ["k", "M", "G", "T", "P", "E"] {
        if v < 999.5 {
            break;
        }
        v /= 1000.0;
        unit = u;
    }
    let sign = if ret < 0 { "-" } else { "" };
    let digits = if v < 9.995 { 2 } else if v < 99.95 { 1 } else { 0 };
    // Fewer decimals when the sign leaves no room for them (five columns hold "-141T").
    (0..=digits)
        .rev()
        .map(|d| format!("{sign}{v:.d$}{unit}"))
        .find(|t| t.len() <= w)
        .unwrap_or_else(|| format!("{sign}{v:.0}{unit}"))
}

/// A block request's FILE/DISK cell of `w` columns: its disk, then the file it moved data of
/// when known (`vda /var/lib/x.db`), the path cut in the middle so that the disk stays.
fn disk_and_file(disk: &str, file: &str, w: usize) -> String {
    let dw = width(disk);
    if file.is_empty() || dw + 2 > w {
        return cut(disk, w);
    }
    format!("{disk} {}", cut(file, w - dw - 1))
}

/// The list's cells for one event (a block request's: its disk in the FILE/DISK cell, which
/// [`disk_and_file`] completes).
fn columns(app: &App, e: &Event) -> [String; 8] {
    let (meta, tables) = (app.cap.reader.meta(), app.cap.reader.tables());
    let get = |name: &str| fields::lookup(name).map(|fi| fields::value(fi, e, meta, tables).to_string());
    let target = match e.class {
        Class::Syscall | Class::IoUring => get("fd.name").unwrap_or_default(),
        Class::Block => get("blk.dev").unwrap_or_default(),
        Class::Journal => format!("transaction {}", e.offset),
    };
    [
        // When it completed: the order of the list by time (the file's).
        units::offset(e.end().saturating_sub(app.cap.start)),
        get("proc.name").unwrap_or_default(),
        e.pid.to_string(),
        type_name(app, e),
        target,
        if e.bytes > 0 {
            units::bytes(e.bytes, TERM)
        } else {
            String::new()
        },
        units::duration(e.latency, TERM),
        e.ret.to_string(),
    ]
}

/// Width of the field-name column of the detail popup (the longest name, `evt.is_io_write`).
const KEY: usize = 15;

/// The selected event, every field that applies to it, in a popup that fits the terminal
/// (down to 80×24): one column of `name  value` when it fits, else short values in two columns
/// and long ones (paths, the wall time) across, wrapped; what still does not fit is counted on
/// the last line rather than cut off silently. A block request says what issued it (its
/// syscall, with its time, latency and file, or the writeback of its file); a call that issued
/// block requests lists them under the fields.
pub fn render_detail(app: &App, f: &mut Frame) {
    let Some(e) = app.list.selected() else {
        return;
    };
    let (meta, tables) = (app.cap.reader.meta(), app.cap.reader.tables());
    let mut entries = vec![(
        "time",
        format!(
            "{} UTC ({})",
            units::wall(e.ts, meta.boot_to_wall_ns),
            units::offset(e.ts.saturating_sub(app.cap.start))
        ),
    )];
    entries.push(("end", units::offset(e.end().saturating_sub(app.cap.start))));
    for fi in fields::canonical() {
        // The header's fields (`host`, `capture.id`) are the capture's, the same for every
        // event of the one viewed.
        if fi.id.is_per_capture() {
            continue;
        }
        let v = fields::value(fi, e, meta, tables);
        // Absent fields, empty strings and false flags say nothing; a call that issued no block
        // request says so once (`disk.requests 0`), not with its zero bytes and time.
        let no_disk = e.disk_reqs == 0 && matches!(fi.id, fields::FieldId::DiskBytes | fields::FieldId::DiskTime);
        // Nor does the anatomy of a call that never left the CPU (or was not timed).
        let no_anatomy = e.runq == 0
            && e.wait == 0
            && matches!(
                fi.id,
                fields::FieldId::CpuTime
                    | fields::FieldId::RunqTime
                    | fields::FieldId::WaitTime
                    | fields::FieldId::WaitCount
                    | fields::FieldId::WakerTid
                    | fields::FieldId::WaitReason
            );
        // Of the wait's parts by reason, those it had (the anatomy line sums them up).
        let no_part = matches!(fi.read, fields::Read::Column { col, .. } if WAIT_COLS.contains(&col))
            && v == fields::Value::Duration(0);
        // An operation still in flight at the recording's end has no result yet.
        let no_res = e.unfinished() && fi.id == fields::FieldId::EvtRes;
        // When the waker woke it: only when a thread did, and the recorder said when.
        let no_woken = e.woken == 0 && fi.id == fields::FieldId::WakerAfter;
        // Stacks are listed a frame a line, below.
        let stack = matches!(
            fi.id,
            fields::FieldId::StackUser | fields::FieldId::StackKernel | fields::FieldId::StackTop
        );
        if no_disk
            || stack
            || no_anatomy
            || no_part
            || no_res
            || no_woken
            || v.is_absent()
            || v == fields::Value::Bool(false)
            || v == fields::Value::Str("".into())
        {
            continue;
        }
        let text = match v {
            fields::Value::Duration(ns) => units::duration(ns, TERM),
            fields::Value::UInt(0) if fi.id == fields::FieldId::DiskRequests => "0: issued no block I/O".into(),
            other => other.to_string(),
        };
        entries.push((fi.name, text));
    }
    if let Some(line) = anatomy(e) {
        entries.push(("anatomy", line));
    }
    if e.class == Class::Journal {
        entries.push(("transaction", e.offset.to_string()));
    }
    let found = app.list.links_of(e);
    entries.extend(issued_by(app, e, found));
    entries.extend(woken_by(app, e, found));
    let outer = app.layout.area;
    let width = outer.width.min(78);
    let (w, h) = (
        usize::from(width.saturating_sub(2)),
        usize::from(outer.height.saturating_sub(2)),
    );
    // The fields take what they need, but for room for a few requests (a heading, the column
    // names, five rows and the count of the rest); the requests the rest.
    let fields_need = detail_lines(&entries, w, h).len();
    let requests = requests_lines(app, e, found, w, h.saturating_sub(fields_need).max(8.min(h / 2)));
    let bar = anatomy_bar(app, e, w);
    let bar_h = usize::from(bar.is_some());
    let stacks = stack_lines(app, e, found, w);
    let mut lines = detail_lines(&entries, w, h.saturating_sub(requests.len() + bar_h + stacks.len()));
    if let Some(bar) = bar {
        // Under the anatomy's figures (and their wrapped rest), else last.
        let key = format!("{:>KEY$}  ", "anatomy");
        let blank = " ".repeat(KEY + 2);
        let text = |l: &Line| l.spans.iter().map(|s| s.content.as_ref()).collect::<String>();
        let at = lines.iter().position(|l| text(l).starts_with(&key)).map_or(lines.len(), |i| {
            i + 1 + lines[i + 1..].iter().take_while(|l| text(l).starts_with(&blank)).count()
        });
        lines.insert(at, bar);
    }
    lines.extend(stacks);
    lines.extend(requests);
    let area = crate::layout::popup(outer, width, lines.len() as u16 + 2);
    f.render_widget(Clear, area);
    f.render_widget(
        Paragraph::new(lines).block(block(app, " Event (Esc closes) ".into(), true)),
        area,
    );
}


/// The most frames of a stack the detail lists; a count of the rest follows.
const STACK_FRAMES: usize = 8;

/// A call's stacks for its detail (`record --stacks`), a frame a line, innermost first as a
/// debugger's backtrace: the user stack it returned to, the kernel stack where it slept. A
/// block request shows those of the call that issued it, once `found` by the lookup.
fn stack_lines(app: &App, e: &Event, found: Option<&Links>, w: usize) -> Vec<Line<'static>> {
    let tables = app.cap.reader.tables();
    let (of, keys) = match e.class {
        Class::Block => match found.and_then(|l| l.issuer.as_ref()) {
            Some(issuer) => (&issuer.event, ["issuer's stack", "issuer slept in"]),
            None => return Vec::new(),
        },
        _ => (e, ["user stack", "kernel stack"]),
    };
    let mut lines = Vec::new();
    for (name, id) in keys.into_iter().zip([of.stack_user, of.stack_kernel]) {
        let Some(mut frames) = tables.stack_names(id) else {
            continue;
        };
        frames.reverse();
        let more = frames.len().saturating_sub(STACK_FRAMES);
        for (i, f) in frames.iter().take(STACK_FRAMES).enumerate() {
            let key = if i == 0 { name } else { "" };
            let text = format!("{key:>KEY$}  {f}");
            lines.push(Line::from(head(&text, w)));
        }
        if more > 0 {
            lines.push(Line::from(format!("{:>KEY$}  … {more} outer frames", "")));
        }
    }
    lines
}

/// Who woke a call's longest sleep and what it was doing then, for its detail: the waker's
/// process and thread, and its event during the call once `found` by the lookup (`g` goes
/// there). Nothing for a block request, or a call no thread woke.
fn woken_by(app: &App, e: &Event, found: Option<&Links>) -> Vec<(&'static str, String)> {
    const BY: &str = "woken by";
    if e.class == Class::Block || e.waker == 0 {
        return Vec::new();
    }
    let who = format!("{} (thread {})", field_text(app, "waker.proc.name", e), e.waker);
    let Some(found) = found else {
        return vec![(BY, format!("{who}, searching…"))];
    };
    let Some(w) = &found.waker else {
        let why = match &found.error {
            Some(err) => format!("not found ({err})"),
            None => "no event of its during the call".into(),
        };
        return vec![(BY, format!("{who}: {why}"))];
    };
    let w = &w.event;
    let mut what = type_name(app, w);
    match Cause::from_code(w.cause) {
        _ if w.class == Class::Journal => what += &format!(" of transaction {}", w.offset),
        _ if w.class != Class::Block => {}
        Cause::Journal => what += &format!(" of the journal's commit of transaction {}", w.offset),
        Cause::Writeback => what += &format!(" writing back {}", field_text(app, "fd.name", w)),
        _ => {}
    }
    let (w_end, end) = (w.end(), e.end());
    let woke = e.ts.saturating_add(e.woken);
    let at = units::duration(e.woken, TERM);
    let text = match e.woken {
        // When the waking came is known (since 1.20): during the event, or after it ended.
        1.. if w.ts <= woke && woke <= w_end => format!("{who}: during its {what}, at +{at} into the call"),
        1.. if w_end <= woke => format!(
            "{who}: {what}, which ended {} before it woke the call at +{at}",
            units::duration(woke - w_end, TERM)
        ),
        _ if w_end <= end => format!(
            "{who}: {what}, ended {} before the call did",
            units::duration(end - w_end, TERM)
        ),
        _ => format!(
            "{who}: {what}, ended {} after the call did",
            units::duration(w_end - end, TERM)
        ),
    };
    vec![(BY, text)]
}

/// A call's latency as its parts that are not 0 (`cpu`, `runq`, each wait's reason), largest
/// first; empty for a call that never left the CPU (or untimed), and for a block request.
fn parts(e: &Event) -> Vec<(&'static str, u64)> {
    if e.class == Class::Block || (e.runq == 0 && e.wait == 0) {
        return Vec::new();
    }
    let cpu = e.latency.saturating_sub(e.runq).saturating_sub(e.wait);
    let mut parts = vec![("cpu", cpu), ("runq", e.runq)];
    parts.extend(Reason::ALL[1..].iter().map(|r| r.name()).zip(e.wait_by()));
    parts.retain(|&(_, ns)| ns > 0);
    parts.sort_by_key(|&(_, ns)| std::cmp::Reverse(ns));
    parts
}

/// A call's anatomy as one bar `w` cells wide under its figures: each part a run of cells as
/// long as its share of the latency (by largest remainder, so the runs fill the bar), named
/// inside as far as it fits, in the theme's colours (alternately reversed without colour). A
/// part too small for a cell is only in the figures. `None` without an anatomy.
fn anatomy_bar(app: &App, e: &Event, w: usize) -> Option<Line<'static>> {
    let parts = parts(e);
    let bar_w = w.saturating_sub(KEY + 2);
    if parts.is_empty() || bar_w == 0 {
        return None;
    }
    let cells = bar_cells(&parts, bar_w);
    let mut spans = vec![ratatui::text::Span::raw(format!("{:>KEY$}  ", ""))];
    for (i, (&(name, _), &n)) in parts.iter().zip(&cells).enumerate().filter(|(_, (_, &n))| n > 0) {
        let label: String = name.chars().take(n).collect();
        let text = format!("{label:<n$}");
        spans.push(ratatui::text::Span::styled(text, app.theme.part(i)));
    }
    Some(Line::from(spans))
}

/// How many of `w` cells each of `parts` (name, ns) takes: its share, rounded by largest
/// remainder (the first of equal remainders first), so that they sum to `w`.
fn bar_cells(parts: &[(&str, u64)], w: usize) -> Vec<usize> {
    let total: u128 = parts.iter().map(|&(_, ns)| u128::from(ns)).sum::<u128>().max(1);
    let exact: Vec<u128> = parts.iter().map(|&(_, ns)| u128::from(ns) * w as u128).collect();
    let mut cells: Vec<usize> = exact.iter().map(|x| (x / total) as usize).collect();
    let mut order: Vec<usize> = (0..parts.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(exact[i] % total));
    let short = w.saturating_sub(cells.iter().sum());
    for &i in order.iter().take(short) {
        cells[i] += 1;
    }
    cells
}

/// A call's latency as its parts, largest first, each with its share: `throttle 34.8ms 99%,
/// runq 140us 0%, cpu 120us 0%`; `None` for a call that never left the CPU (or untimed).
fn anatomy(e: &Event) -> Option<String> {
    let parts = parts(e);
    if parts.is_empty() {
        return None;
    }
    let total = e.latency.max(1);
    let text: Vec<String> = parts
        .iter()
        .map(|&(name, ns)| format!("{name} {} {}%", units::duration(ns, TERM), ns * 100 / total))
        .collect();
    Some(text.join(", "))
}

/// A call's or block request's type as the list shows it (`pread64`, `uring read`, `blk write`).
fn type_name(app: &App, e: &Event) -> String {
    let arch = &app.cap.reader.meta().arch;
    match e.class {
        Class::Syscall => fields::evt_type(arch, e.class, e.nr).into_owned(),
        Class::IoUring => format!("uring {}", fields::evt_type(arch, e.class, e.nr)),
        Class::Block => format!("blk {}", BlockOp::from_code(e.op).name()),
        Class::Journal => "journal commit".into(),
    }
}

/// The value of field `name` of `e`, as the filter prints it (escaped: it comes from the
/// tables); empty when absent.
fn field_text(app: &App, name: &str, e: &Event) -> String {
    let (meta, tables) = (app.cap.reader.meta(), app.cap.reader.tables());
    fields::lookup(name).map_or_else(String::new, |fi| fields::value(fi, e, meta, tables).to_string())
}

/// What issued block request `e`, for its detail: the linked call once `found` by the lookup
/// (its type and time, how long before the request it began, its latency, its fd and file), the
/// writeback of its file, or the journal commit. Nothing for other events and for a request of cause none
/// (`blk.cause` says so already).
fn issued_by(app: &App, e: &Event, found: Option<&Links>) -> Vec<(&'static str, String)> {
    const BY: &str = "issued by";
    if e.class != Class::Block {
        return Vec::new();
    }
    let cause = Cause::from_code(e.cause);
    if cause == Cause::Writeback {
        let file = field_text(app, "fd.name", e);
        return vec![(
            BY,
            if file.is_empty() {
                "writeback by a flusher thread (file unknown)".into()
            } else {
                format!("writeback of {file}")
            },
        )];
    }
    if cause == Cause::Journal {
        return vec![(
            BY,
            format!(
                "the journal's commit of transaction {}, begun {} before",
                e.offset,
                units::duration(e.link, TERM)
            ),
        )];
    }
    if links::issuer_class(cause).is_none() {
        return Vec::new();
    }
    if e.link > e.ts {
        let why = format!("a call {} before boot: the link is damaged", units::duration(e.link, TERM));
        return vec![(BY, why)];
    }
    let Some(found) = found else {
        return vec![(BY, "searching…".into())];
    };
    let Some(call) = &found.issuer else {
        let why = match &found.error {
            Some(err) => format!("not found ({err})"),
            None if !found.complete => format!("not found in the {MAX_CHUNKS} chunks searched"),
            None => format!(
                "thread {} at {}: not in the capture (dropped, or before it began)",
                e.tid,
                units::offset(e.ts.saturating_sub(e.link).saturating_sub(app.cap.start))
            ),
        };
        return vec![(BY, why)];
    };
    let c = &call.event;
    let mut out = vec![
        (
            BY,
            format!(
                "{} at {}",
                type_name(app, c),
                units::offset(c.ts.saturating_sub(app.cap.start))
            ),
        ),
        ("issuer began", format!("{} before", units::duration(e.link, TERM))),
        ("issuer latency", units::duration(c.latency, TERM)),
    ];
    let file = field_text(app, "fd.name", c);
    let fd = (c.fd >= 0).then(|| format!("fd {}", c.fd));
    let file = match (fd, file.is_empty()) {
        (Some(fd), true) => fd,
        (Some(fd), false) => format!("{fd} {file}"),
        (None, _) => file,
    };
    if !file.is_empty() {
        out.push(("issuer file", file));
    }
    out
}

/// The block requests call `e` issued, for its detail, in at most `max` lines of `w` columns:
/// a heading, then one line each (issue time after the call's start, disk, sector, bytes,
/// queue time, device time), the last saying how many more were cut. Nothing for an event that
/// issued none.
fn requests_lines(app: &App, e: &Event, found: Option<&Links>, w: usize, max: usize) -> Vec<Line<'static>> {
    if e.class == Class::Block || e.disk_reqs == 0 || max == 0 {
        return Vec::new();
    }
    let heading = |text: String| Line::from(format!("{:>KEY$}  {text}", "block requests"));
    let Some(found) = found else {
        return vec![heading("searching…".into())];
    };
    let counted = u64::from(e.disk_reqs);
    let mut what = match found.found as u64 {
        0 => "none found".to_string(),
        n if n == counted => format!("{n}"),
        n => format!("{n} found of {counted} counted"),
    };
    if let Some(err) = &found.error {
        what.push_str(&format!(" ({err})"));
    } else if !found.complete {
        what.push_str(&format!(" (search cut at {MAX_CHUNKS} chunks)"));
    } else if (found.found as u64) < counted {
        what.push_str(&format!(" by {} after it ended", units::duration(AFTER, TERM)));
    }
    let mut lines = vec![heading(what)];
    if found.requests.is_empty() || max < 3 {
        return lines;
    }
    let row = |after: &str, disk: &str, sector: &str, bytes: &str, queue: &str, device: &str| {
        let s = format!("{after:>KEY$}  {disk:<10} {sector:>12} {bytes:>6} {queue:>7} {device:>7}");
        Line::from(head(&s, w))
    };
    lines.push(row("after start", "disk", "sector", "bytes", "queue", "device").style(app.theme.dim()));
    let room = max - lines.len();
    let listed = found.requests.len();
    let shown = if listed <= room { listed } else { room.saturating_sub(1) };
    for r in &found.requests[..shown] {
        let b = &r.event;
        lines.push(row(
            &format!("+{}", units::duration(b.ts.saturating_sub(e.ts), TERM)),
            &cut(&field_text(app, "blk.dev", b), 10),
            // A flush has no sector: the kernel gives all ones.
            &if b.sector == u64::MAX { "-".into() } else { b.sector.to_string() },
            &units::bytes(b.bytes, TERM),
            &units::duration(b.queue, TERM),
            &units::duration(b.latency, TERM),
        ));
    }
    let more = found.found - shown;
    if more > 0 {
        lines.push(Line::from(format!(
            "{:>KEY$}  … {more} more{}",
            "",
            if shown < listed {
                ": a taller terminal shows more"
            } else {
                ""
            }
        )));
    }
    lines
}

/// The first `w` columns of `s`.
fn head(s: &str, w: usize) -> String {
    let mut out = String::new();
    let mut used = 0;
    let mut buf = [0u8; 4];
    for c in s.chars() {
        let cw = width(c.encode_utf8(&mut buf));
        if used + cw > w {
            break;
        }
        used += cw;
        out.push(c);
    }
    out
}

/// `s` cut into pieces of at most `w` columns (at least one piece).
fn wrap(s: &str, w: usize) -> Vec<String> {
    let w = w.max(1);
    let mut out = vec![String::new()];
    let mut used = 0;
    let mut buf = [0u8; 4];
    for c in s.chars() {
        let cw = width(c.encode_utf8(&mut buf));
        if used + cw > w && used > 0 {
            out.push(String::new());
            used = 0;
        }
        if let Some(last) = out.last_mut() {
            last.push(c);
        }
        used += cw;
    }
    out
}

/// Lay `entries` (field name, value) out in at most `h` lines of `w` columns.
pub fn detail_lines(entries: &[(&str, String)], w: usize, h: usize) -> Vec<Line<'static>> {
    let key = |k: &str| format!("{k:>KEY$}  ");
    let val_w = w.saturating_sub(KEY + 2).max(1);
    let one_col: usize = entries.iter().map(|(_, v)| width(v).div_ceil(val_w).max(1)).sum();
    let mut lines: Vec<Line<'static>> = Vec::new();
    let full = |lines: &mut Vec<Line<'static>>, k: &str, v: &str| {
        for (i, piece) in wrap(v, val_w).into_iter().enumerate() {
            let k = if i == 0 { key(k) } else { " ".repeat(KEY + 2) };
            lines.push(Line::from(format!("{k}{piece}")));
        }
    };
    if one_col <= h {
        for (k, v) in entries {
            full(&mut lines, k, v);
        }
        return lines;
    }
    // Two columns of short values, then the long ones across.
    let half = w.saturating_sub(1) / 2;
    let short_w = half.saturating_sub(KEY + 2);
    let (short, long): (Vec<_>, Vec<_>) = entries.iter().partition(|(_, v)| width(v) <= short_w);
    for pair in short.chunks(2) {
        let cell = |(k, v): &(&str, String)| {
            let text = format!("{}{v}", key(k));
            let pad = half.saturating_sub(width(&text));
            format!("{text}{}", " ".repeat(pad))
        };
        let right = pair.get(1).map(|e| cell(e)).unwrap_or_default();
        lines.push(Line::from(
            format!("{} {}", cell(pair[0]), right).trim_end().to_string(),
        ));
    }
    for (k, v) in long {
        full(&mut lines, k, v);
    }
    if lines.len() > h {
        // Say how much is hidden rather than cut it off unannounced.
        let keep = h.saturating_sub(1);
        let hidden = lines.len() - keep;
        lines.truncate(keep);
        lines.push(Line::from(format!(
            "… {hidden} more lines: a taller terminal shows them"
        )));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn return_values_are_shortened_never_cut() {
        assert_eq!(number_cell(4096, 6), "4096");
        assert_eq!(number_cell(-11, 5), "-11");
        assert_eq!(number_cell(1_048_576, 6), "1.05M");
        assert_eq!(number_cell(1_048_576, 5), "1.05M");
        assert_eq!(number_cell(999_999, 5), "1.00M");
        assert_eq!(number_cell(123_456, 5), "123k");
        assert_eq!(number_cell(140_737_488_355_328, 6), "141T");
        assert_eq!(number_cell(i64::MIN, 6), "-9.22E");
        assert_eq!(number_cell(i64::MIN, 5), "-9.2E");
        assert_eq!(number_cell(i64::MAX, 5), "9.22E");
        assert_eq!(number_cell(-140_737_488_355_328, 5), "-141T");
        for w in [5, 6, 7, 9] {
            for r in [-4095, -100_000, 99_999, 100_000, 999_949, 12_345_678, i64::MIN, i64::MAX] {
                let c = number_cell(r, w);
                assert!(c.len() <= w, "{r} in {w}: {c}");
            }
        }
    }

    /// Errors read as their errno's name, addresses from mmap and brk in hex, whatever the
    /// column's width; other calls' results as numbers.
    #[test]
    fn errors_read_as_names_and_addresses_as_hex() {
        let call = |name: &str, ret: i64| Event {
            ret,
            ..Event::syscall(0, 0, 1, 1, iocap_format::syscalls::number("x86_64", name).unwrap(), 0)
        };
        let res = |name: &str, ret: i64, w: usize| res_cell(&call(name, ret), "x86_64", w);
        assert_eq!(res("openat", -2, 7), "ENOENT");
        assert_eq!(res("read", -11, 7), "EAGAIN");
        assert_eq!(res("connect", -111, 7), "EC…USED");
        assert_eq!(res("connect", -111, 12), "ECONNREFUSED");
        assert_eq!(res("read", -600, 9), "errno_600");
        assert_eq!(res("mmap", 0x7f3a_1234_5000, 7), "0x7f3a…");
        assert_eq!(res("mmap", 0x7f3a_1234_5000, 16), "0x7f3a12345000");
        assert_eq!(res("brk", 0x5555_5600_0000, 9), "0x555556…");
        assert_eq!(res("mmap", -12, 7), "ENOMEM");
        assert_eq!(res("read", 0x7f3a_1234_5000, 7), "140T");
        assert_eq!(res("read", 4096, 7), "4096");
        // A block request's error too.
        let blk = Event {
            class: Class::Block,
            ret: -5,
            ..Event::default()
        };
        assert_eq!(res_cell(&blk, "x86_64", 7), "EIO");
        // Still in flight at the stop: no result, whatever the column holds.
        let open = Event {
            flags: iocap_format::blk_flags::UNFINISHED,
            ..call("read", 0)
        };
        assert_eq!(res_cell(&open, "x86_64", 7), "unfin");
        assert_eq!(res_cell(&open, "x86_64", 4), "u…in");
    }

    fn text(lines: &[Line]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn detail_switches_to_two_columns_and_counts_what_does_not_fit() {
        // 26 fields (more than 22 lines hold at 80×24), one a 300-byte path.
        let mut entries: Vec<(&str, String)> = (0..25).map(|i| ("evt.errno", format!("v{i}"))).collect();
        entries.push(("fd.name", format!("/{}", "x".repeat(299))));
        let lines = text(&detail_lines(&entries, 78, 22));
        assert!(lines.len() <= 22, "{lines:#?}");
        assert!(lines.iter().all(|l| width(l) <= 78), "{lines:#?}");
        for i in 0..25 {
            let v = format!("v{i}");
            let n = lines
                .iter()
                .flat_map(|l| l.split_whitespace())
                .filter(|t| *t == v)
                .count();
            assert_eq!(n, 1, "{v}: {lines:#?}");
        }
        // The path, wrapped under its name: every byte shown.
        assert_eq!(lines.iter().map(|l| l.matches('x').count()).sum::<usize>(), 299);
        assert!(!lines.iter().any(|l| l.contains("more lines")));
        // Too small for even that: the last line says how much is hidden.
        let lines = text(&detail_lines(&entries, 78, 8));
        assert_eq!(lines.len(), 8);
        assert!(
            lines[7].starts_with("… ") && lines[7].contains("more lines"),
            "{lines:#?}"
        );
        // A block request: the disk stays, the path is cut in the middle; no file, the disk.
        assert_eq!(disk_and_file("vda", "/var/lib/x.db", 20), "vda /var/lib/x.db");
        assert_eq!(disk_and_file("vda", "/var/lib/pg/base/16384", 16), "vda /va…se/16384");
        assert_eq!(disk_and_file("nvme0n1p1", "", 20), "nvme0n1p1");
        assert_eq!(disk_and_file("nvme0n1p1", "/x", 10), "nvme0n1p1");
        assert_eq!(disk_and_file("nvme0n1p1", "/x", 8), "nv…0n1p1");
        // Room enough: one field per line.
        let lines = text(&detail_lines(&entries[..5], 78, 22));
        assert_eq!(lines.len(), 5);
        assert!(lines[0].starts_with("      evt.errno  v0"), "{lines:#?}");
    }

    /// The prototype's throttled write: its parts, largest first, with their shares of the
    /// latency; none for a call that never left the CPU, nor for a block request.
    #[test]
    fn a_bar_gives_each_part_its_share_of_the_cells() {
        assert_eq!(bar_cells(&[("journal", 92), ("cpu", 4), ("disk", 3), ("runq", 1)], 50), [46, 2, 2, 0]);
        assert_eq!(bar_cells(&[("a", 1), ("b", 1), ("c", 1)], 10), [4, 3, 3]);
        assert_eq!(bar_cells(&[("a", u64::MAX), ("b", u64::MAX)], 61).iter().sum::<usize>(), 61);
    }

    #[test]
    fn anatomy_lists_a_calls_parts_largest_first() {
        let mut e = Event::syscall(0, 35_100_000, 1, 1, 1, 1024);
        e.runq = 140_000;
        e.wait = 34_840_000;
        e.wait_throttle = 34_800_000;
        e.wait_other = 40_000;
        assert_eq!(
            anatomy(&e).unwrap(),
            "throttle 34.8ms 99%, runq 140µs 0%, cpu 120µs 0%, other 40.0µs 0%"
        );
        e.runq = 0;
        e.wait = 0;
        assert_eq!(anatomy(&e), None);
        e.class = Class::Block;
        e.runq = 1;
        assert_eq!(anatomy(&e), None);
    }
}
