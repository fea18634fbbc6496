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
