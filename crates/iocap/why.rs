//! `iocap report --why`: where the matching calls' latency went. Their summed latency split
//! into time on a CPU, in the run queue and blocked by reason (`cpu.time`, `runq.time`,
//! `wait.disk` ...), the threads that woke them, and the chains (call type, reason, waker).
//! Time-weighted: a part's share is its time over the calls' summed latency.

use std::collections::HashMap;

use iocap_analysis::units::fmt_ns;
use iocap_analysis::Scan;
use iocap_filter::fields;
use iocap_format::{Class, Col, ColSet, Event, Reason, WAIT_COLS};
use serde_json::json;

use crate::input;

/// The matching calls' time, part by part, and by waker and chain.
#[derive(Default)]
pub struct Why {
    calls: u64,
    latency: u64,
    runq: u64,
    /// By reason, in [`Reason`] code order from `disk`.
    wait: [u64; iocap_format::WAIT_COLS.len()],
    /// Calls that left the CPU (the others have only `cpu.time`).
    timed: u64,
    /// Calls and their wait, by the name of the thread that woke their longest sleep.
    wakers: HashMap<String, (u64, u64)>,
    /// Calls and their wait, by (call type, main reason, waker).
    chains: HashMap<(String, &'static str, String), (u64, u64)>,
}

/// A waker's name: its process's (as `waker.proc.name`), with the tid; the idle task's is
/// `interrupt (idle CPU)`.
fn waker_name(tid: u32, proc: u32, meta: &iocap_format::Meta, tables: &iocap_format::Tables) -> String {
    if tid == 0 {
        return "interrupt (idle CPU)".to_owned();
    }
    let e = Event {
        class: Class::Syscall,
        waker_proc: proc,
        ..Event::default()
    };
    match fields::lookup("waker.proc.name").map(|f| fields::value(f, &e, meta, tables)) {
        Some(fields::Value::Str(n)) => format!("{n} [{tid}]"),
        _ => format!("[{tid}]"),
    }
}

impl Why {
    /// Scan `input`'s matching calls (block requests have no anatomy).
    pub fn scan(input: &input::Input) -> anyhow::Result<Why> {
        let r = &input.reader;
        let (meta, tables) = (r.meta(), r.tables());
        let want = WAIT_COLS.iter().fold(
            ColSet::NONE
                .with(Col::Class)
                .with(Col::Latency)
                .with(Col::Runq)
                .with(Col::Wait)
                .with(Col::Waker)
                .with(Col::WakerProc)
                .with(Col::Nr)
                .with(Col::Reason),
            |s, &c| s.with(c),
        );
        // Per thread of the scan: the sums, and the calls that slept by (waker and its
        // process, call type, main reason).
        type Acc = (Why, HashMap<(u32, u32, u32, u8), (u64, u64)>);
        let (acc, _) = Scan::new(r, Some(&input.filter))
            .columns(want)
            .threads(input::threads(r))
            .run(
                || -> Acc { Default::default() },
                |(why, woken): &mut Acc, _, cols, bits| {
                    for i in bits.iter_ones() {
                        // Calls only: block requests and journal commits have no anatomy.
                        if cols.class[i] == Class::Block as u8 || cols.class[i] == Class::Journal as u8 {
                            continue;
                        }
                        let e = cols.event(i);
                        why.calls += 1;
                        why.latency = why.latency.saturating_add(e.latency);
                        why.runq = why.runq.saturating_add(e.runq);
                        for (sum, part) in why.wait.iter_mut().zip(e.wait_by()) {
                            *sum = sum.saturating_add(part);
                        }
                        if e.runq > 0 || e.wait > 0 {
                            why.timed += 1;
                        }
                        if e.wait > 0 {
                            let typed = e.nr | (e.class as u32) << 24;
                            add(woken, (e.waker, e.waker_proc, typed, e.reason), (1, e.wait));
                        }
                    }
                },
                |(a, wa): &mut Acc, (b, wb): Acc| {
                    a.merge(b);
                    for (k, v) in wb {
                        add(wa, k, v);
                    }
                },
            )?
            .ok_or_else(|| anyhow::anyhow!("the scan was cancelled"))?;
        let (mut why, woken) = acc;
        for ((waker, proc, typed, reason), (n, wait)) in woken {
            let name = waker_name(waker, proc, meta, tables);
            let class = if typed >> 24 == Class::IoUring as u32 {
                Class::IoUring
            } else {
                Class::Syscall
            };
            let kind = fields::evt_type(&meta.arch, class, typed & 0xff_ffff).into_owned();
            add(&mut why.wakers, name.clone(), (n, wait));
            add(
                &mut why.chains,
                (kind, Reason::from_code(reason).name(), name),
                (n, wait),
            );
        }
        Ok(why)
    }

    /// Add another capture's.
    pub fn merge(&mut self, o: Why) {
        self.calls += o.calls;
        self.latency = self.latency.saturating_add(o.latency);
        self.runq = self.runq.saturating_add(o.runq);
        for (x, y) in self.wait.iter_mut().zip(o.wait) {
            *x = x.saturating_add(y);
        }
        self.timed += o.timed;
        for (k, v) in o.wakers {
            add(&mut self.wakers, k, v);
        }
        for (k, v) in o.chains {
            add(&mut self.chains, k, v);
        }
    }

    /// The parts, largest first (those of no time left out): name and ns.
    fn parts(&self) -> Vec<(&'static str, u64)> {
        let wait: u64 = self.wait.iter().sum();
        let cpu = self.latency.saturating_sub(self.runq).saturating_sub(wait);
        let mut parts = vec![("cpu", cpu), ("runq", self.runq)];
        parts.extend(Reason::ALL[1..].iter().map(|r| r.name()).zip(self.wait));
        parts.retain(|&(_, t)| t > 0);
        parts.sort_by_key(|&(name, t)| (std::cmp::Reverse(t), name));
        parts
    }

    /// The top `n` of `m` by time, then by name.
    fn top<K: Clone + Ord>(m: &HashMap<K, (u64, u64)>, n: usize) -> Vec<(K, u64, u64)> {
        let mut v: Vec<(K, u64, u64)> = m.iter().map(|(k, &(c, t))| (k.clone(), c, t)).collect();
        v.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
        v.truncate(n);
        v
    }

    fn share(&self, t: u64) -> f64 {
        if self.latency == 0 {
            0.0
        } else {
            t as f64 * 100.0 / self.latency as f64
        }
    }

    pub fn to_json(&self, top: usize) -> serde_json::Value {
        json!({
            "calls": self.calls,
            "timed_calls": self.timed,
            "latency": self.latency,
            "parts": self.parts().iter().map(|&(n, t)| json!({"part": n, "time": t})).collect::<Vec<_>>(),
            "wakers": Self::top(&self.wakers, top).iter()
                .map(|(k, c, t)| json!({"waker": k, "calls": c, "wait": t})).collect::<Vec<_>>(),
            "chains": Self::top(&self.chains, top).iter()
                .map(|((kind, reason, waker), c, t)| json!({"call": kind, "reason": reason, "waker": waker, "calls": c, "wait": t}))
                .collect::<Vec<_>>(),
        })
    }

    /// Names are the traced host's: escaped.
    pub fn write_text(&self, out: &mut impl std::io::Write, top: usize) -> std::io::Result<()> {
        let esc = |s: &str| iocap_format::escape::escape(s.as_bytes());
        writeln!(out)?;
        if self.calls == 0 {
            return writeln!(out, "why      no call matched (block requests have no anatomy)");
        }
        writeln!(
            out,
            "why      {} calls, {} of latency ({} left the CPU); time in each part:",
            self.calls,
            fmt_ns(self.latency),
            self.timed
        )?;
        for (name, t) in self.parts() {
            writeln!(out, "  {name:<12} {:>10} {:>6.1}%", fmt_ns(t), self.share(t))?;
        }
        let wakers = Self::top(&self.wakers, top);
        if !wakers.is_empty() {
            writeln!(
                out,
                "woken by (the waker of each call's longest sleep; the wait of those calls)"
            )?;
            for (name, c, t) in wakers {
                writeln!(
                    out,
                    "  {:<40} {c:>8} calls {:>10} {:>6.1}%",
                    esc(&name),
                    fmt_ns(t),
                    self.share(t)
                )?;
            }
            writeln!(out, "chains (call, why it waited most, its waker)")?;
            for ((kind, reason, waker), c, t) in Self::top(&self.chains, top) {
                let chain = format!("{} <- {reason} <- {}", esc(&kind), esc(&waker));
                writeln!(
                    out,
                    "  {chain:<52} {c:>8} calls {:>10} {:>6.1}%",
                    fmt_ns(t),
                    self.share(t)
                )?;
            }
        }
        Ok(())
    }
}

/// Add `(calls, time)` to `key`'s in `map` (the time saturating).
fn add<K: std::hash::Hash + Eq>(map: &mut HashMap<K, (u64, u64)>, key: K, (n, t): (u64, u64)) {
    let v = map.entry(key).or_default();
    v.0 += n;
    v.1 = v.1.saturating_add(t);
}
