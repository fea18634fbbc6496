//! Text output shared by the commands that print tables: bars and cut cells, and what a
//! capture lacks.

/// A bar of `width` characters for `count` out of `max`, as biolatency's stars.
pub fn bar(count: u64, max: u64, width: usize) -> String {
    let n = if max == 0 {
        0
    } else {
        ((count as u128 * width as u128).div_ceil(max as u128)) as usize
    };
    format!("{:<width$}", "*".repeat(n.min(width)))
}

/// At most `n` characters, cut in the middle as the viewer cuts (`/var/…base/16384`): names
/// differ at their end, which a cut end would hide.
pub fn truncate(s: &str, n: usize) -> String {
    iocap_analysis::units::cut_middle(s, n, |_| 1)
}

/// What follows a capture's drops when block requests were issued whose completion never
/// reached the recorder (`Reader::unseen`): they are not in the capture either, but
/// the recorder did not fall behind. Nothing when there were none.
pub fn unseen(n: u64) -> String {
    if n == 0 {
        return String::new();
    }
    format!(", {n} block requests issued whose completion never reached the recorder")
}

/// Each disk's share of a capture's unseen requests ([`Reader::unseen_by_disk`]): its name from
/// the capture's tables (escaped by the reader: the traced host named it), else its
/// `major:minor`.
///
/// [`Reader::unseen_by_disk`]: iocap_format::Reader::unseen_by_disk
pub fn unseen_disks<S: iocap_format::Source>(r: &iocap_format::Reader<S>) -> Vec<(String, u64)> {
    (r.unseen_by_disk().iter())
        .map(|(&dev, &n)| (iocap_filter::fields::device_name(dev, r.tables()).into_owned(), n))
        .collect()
}

/// Several captures' [`unseen_disks`] as one: counts of a disk of the same name added.
pub fn merge_disks<'a>(all: impl IntoIterator<Item = &'a [(String, u64)]>) -> Vec<(String, u64)> {
    let mut merged: Vec<(String, u64)> = Vec::new();
    for (name, n) in all.into_iter().flatten() {
        match merged.iter_mut().find(|(m, _)| m == name) {
            Some((_, sum)) => *sum = sum.saturating_add(*n),
            None => merged.push((name.clone(), *n)),
        }
    }
    merged
}

/// [`unseen_disks`] as a JSON object: disk name to count.
pub fn disks_json(disks: &[(String, u64)]) -> serde_json::Value {
    serde_json::Value::Object(disks.iter().map(|(d, n)| (d.clone(), serde_json::json!(n))).collect())
}

/// A count's share of each disk, as `" (loop0 2, vda 4)"`, from each disk's name (as a
/// terminal may show it) and count; nothing when there are none.
pub fn by_disk<'a>(disks: impl IntoIterator<Item = (&'a str, u64)>) -> String {
    let parts: Vec<String> = disks.into_iter().map(|(name, n)| format!("{name} {n}")).collect();
    if parts.is_empty() {
        return String::new();
    }
    format!(" ({})", parts.join(", "))
}

/// One process's share of a capture's drops, as `info` lists them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dropped {
    pub pid: u32,
    /// Its name from the process table (escaped by the reader), `None` when the table has no
    /// entry of it.
    pub name: Option<String>,
    pub count: u64,
}

impl Dropped {
    /// `postgres (pid 123)`, or `pid 123` for a process the tables do not know.
    pub fn shown(&self) -> String {
        match &self.name {
            Some(name) => format!("{name} (pid {})", self.pid),
            None => format!("pid {}", self.pid),
        }
    }
}

/// Whose events a capture's recorder dropped, most first ([`Reader::drops_by_process`]), and
/// how many drops it could not place (no known process); `None` when the capture does not say.
///
/// [`Reader::drops_by_process`]: iocap_format::Reader::drops_by_process
pub fn drops_by_process<S: iocap_format::Source>(r: &iocap_format::Reader<S>) -> Option<(Vec<Dropped>, u64)> {
    let by = r.drops_by_process(0, u64::MAX)?;
    let t = r.tables();
    let placed = by.iter().fold(0u64, |a, d| a.saturating_add(d.count));
    let procs = by
        .into_iter()
        .map(|d| Dropped {
            pid: d.pid,
            name: t.proc(d.proc).map(|p| t.string(p.name).to_owned()),
            count: d.count,
        })
        .collect();
    Some((procs, r.drops().saturating_sub(placed)))
}

/// [`drops_by_process`]'s text, at most `top` processes: `dd (pid 7) 445185, sshd (pid 9) 2,
/// 3 more processes 4, no known process 100`.
pub fn dropped_text(procs: &[Dropped], unplaced: u64, top: usize) -> String {
    let mut parts: Vec<String> = procs
        .iter()
        .take(top)
        .map(|d| format!("{} {}", d.shown(), d.count))
        .collect();
    if procs.len() > top {
        let rest = procs[top..].iter().fold(0u64, |a, d| a.saturating_add(d.count));
        parts.push(format!("{} more processes {rest}", procs.len() - top));
    }
    if unplaced > 0 {
        parts.push(format!("no known process {unplaced}"));
    }
    parts.join(", ")
}

/// [`drops_by_process`] as JSON: `[{"pid": 7, "name": "dd", "drops": 445185}, ...]`.
pub fn dropped_json(procs: &[Dropped]) -> serde_json::Value {
    procs
        .iter()
        .map(|d| serde_json::json!({ "pid": d.pid, "name": d.name, "drops": d.count }))
        .collect()
}
