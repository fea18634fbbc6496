//! What the viewer's benchmarks share.

/// A `/proc/self/status` figure in kB (`VmHWM:` the peak resident memory, `VmRSS:` now); 0
/// when it cannot be read.
pub fn rss_kb(key: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}
