//! What this machine allows and has: privileges, the kernel's preemption model (which decides
//! whether per-CPU call slots are safe), and the kernel's BTF, which says which tracepoints it
//! has (what the recorder makes of them is `kernel.rs`'s).

use crate::error::Error;

/// Whether this process may load BPF programs and read tracepoints.
pub fn check_privileges() -> Result<(), Error> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return Ok(());
    }
    const CAP_PERFMON: u32 = 38;
    const CAP_BPF: u32 = 39;
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0);
    if eff & (1 << CAP_BPF) != 0 && eff & (1 << CAP_PERFMON) != 0 {
        Ok(())
    } else {
        Err(Error::Privileges)
    }
}

/// The kernel's preemption model (`none`, `voluntary`, `full`, `lazy`, `rt`), from the
/// first place that tells: debugfs (the live setting), `preempt=` on the command line, the
/// kernel's build config. `None` when nothing does.
pub(crate) fn preemption_model() -> Option<String> {
    if let Ok(s) = std::fs::read_to_string("/sys/kernel/debug/sched/preempt") {
        // "none (voluntary) full lazy": the current one is in parentheses.
        if let Some(m) = s
            .split_whitespace()
            .find_map(|w| w.strip_prefix('(')?.strip_suffix(')'))
        {
            return Some(m.to_owned());
        }
    }
    let cmdline = std::fs::read_to_string("/proc/cmdline").unwrap_or_default();
    if let Some(m) = cmdline.split_whitespace().find_map(|w| w.strip_prefix("preempt=")) {
        return Some(m.to_owned());
    }
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let config = std::fs::read(format!("/boot/config-{}", release.trim()))
        .ok()
        .or_else(|| {
            // gzip is everywhere; a decompressor linked in for this one file is not worth it.
            let out = std::process::Command::new("gzip")
                .args(["-dc", "/proc/config.gz"])
                .stderr(std::process::Stdio::null())
                .output()
                .ok()?;
            out.status.success().then_some(out.stdout)
        })?;
    model_from_config(&String::from_utf8_lossy(&config))
}

/// The default preemption model a kernel config builds.
fn model_from_config(config: &str) -> Option<String> {
    let set = |opt: &str| config.lines().any(|l| l.trim() == format!("CONFIG_{opt}=y"));
    let model = if set("PREEMPT_RT") {
        "rt"
    } else if set("PREEMPT_NONE") {
        "none"
    } else if set("PREEMPT_VOLUNTARY") {
        "voluntary"
    } else if set("PREEMPT_LAZY") {
        "lazy"
    } else if set("PREEMPT") {
        "full"
    } else {
        return None;
    };
    Some(model.to_owned())
}

/// Whether per-CPU state is safe for the syscall programs: with `none` and `voluntary`
/// preemption, kernel code (and so a BPF program) is never preempted half-way.
pub(crate) fn cpu_slot_safe(model: Option<&str>) -> bool {
    matches!(model, Some("none" | "voluntary"))
}

/// The running kernel's BTF, loaded once (through libbpf, ~4 ms here) for the questions asked
/// of it before the programs load: which tracepoints exist, and what they pass.
pub struct KernelBtf(Option<libbpf_rs::btf::Btf<'static>>);

impl KernelBtf {
    /// Load it; an unreadable BTF answers "none" to every question (and the program load then
    /// fails with its own error).
    pub fn load() -> KernelBtf {
        KernelBtf(libbpf_rs::btf::Btf::from_vmlinux().ok())
    }

    /// No BTF: what a kernel without it answers (`IOCAP_HIDE=btf`).
    pub fn none() -> KernelBtf {
        KernelBtf(None)
    }

    /// Whether the kernel's BTF was read.
    pub fn is_loaded(&self) -> bool {
        self.0.is_some()
    }

    /// The prototype of tracepoint `name`: a tp_btf program needs the kernel's BTF to hold the
    /// typedef `btf_trace_<name>` (a pointer to it), or loading fails.
    fn proto(&self, name: &str) -> Option<libbpf_rs::btf::types::FuncProto<'_>> {
        use libbpf_rs::btf::{types, ReferencesType};

        let td = self
            .0
            .as_ref()?
            .type_by_name::<types::Typedef>(&format!("btf_trace_{name}"))?;
        let ptr = types::Ptr::try_from(td.referenced_type()).ok()?;
        types::FuncProto::try_from(ptr.referenced_type()).ok()
    }

    /// Whether the kernel has tracepoint `name` (by event name, whole).
    pub fn has_tracepoint(&self, name: &str) -> bool {
        self.proto(name).is_some()
    }

    /// Whether the kernel has BPF helper `name` (`map_lookup_percpu_elem`): its
    /// `BPF_FUNC_<name>` in the kernel's `enum bpf_func_id`.
    pub fn has_helper(&self, name: &str) -> bool {
        use libbpf_rs::btf::types;

        let Some(ids) = self
            .0
            .as_ref()
            .and_then(|b| b.type_by_name::<types::Enum>("bpf_func_id"))
        else {
            return false;
        };
        let want = format!("BPF_FUNC_{name}");
        let found = ids.iter().any(|m| m.name.is_some_and(|n| n == want.as_str()));
        found
    }

    /// How many arguments tracepoint `name` passes (its prototype's, less the leading `void *`
    /// every one has), or `None` when the kernel has no such tracepoint.
    pub fn tracepoint_arity(&self, name: &str) -> Option<usize> {
        self.proto(name)?.len().checked_sub(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracepoints_are_found_by_whole_name_only() {
        if !std::path::Path::new("/sys/kernel/btf/vmlinux").exists() {
            eprintln!("no kernel BTF here: skipped");
            return;
        }
        let btf = KernelBtf::load();
        let found = ["sys_enter", "sys_ente", "ys_enter", "no_such_tracepoint"].map(|n| btf.has_tracepoint(n));
        assert_eq!(found, [true, false, false, false]);
        // sys_enter(struct pt_regs *regs, long id), sched_switch(bool, prev, next, prev_state)
        // since 5.18.
        assert_eq!(btf.tracepoint_arity("sys_enter"), Some(2));
        assert_eq!(btf.tracepoint_arity("sched_switch"), Some(4));
        assert_eq!(btf.tracepoint_arity("no_such_tracepoint"), None);
        let helpers = ["map_lookup_percpu_elem", "map_lookup_percpu", "no_such_helper"].map(|n| btf.has_helper(n));
        assert_eq!(helpers, [true, false, false]);
    }

    #[test]
    fn preemption_model_from_a_kernel_config() {
        let config = |opts: &[&str]| {
            let mut c =
                String::from("# Linux kernel config\nCONFIG_PREEMPT_BUILD=y\n# CONFIG_PREEMPT_VOLUNTARY is not set\n");
            for o in opts {
                c += &format!("CONFIG_{o}=y\n");
            }
            model_from_config(&c)
        };
        assert_eq!(config(&["PREEMPT_NONE", "PREEMPT_DYNAMIC"]).as_deref(), Some("none"));
        assert_eq!(config(&["PREEMPT_VOLUNTARY"]).as_deref(), Some("voluntary"));
        assert_eq!(config(&["PREEMPT", "PREEMPT_DYNAMIC"]).as_deref(), Some("full"));
        assert_eq!(config(&["PREEMPT_LAZY"]).as_deref(), Some("lazy"));
        assert_eq!(config(&["PREEMPT", "PREEMPT_RT"]).as_deref(), Some("rt"));
        assert_eq!(config(&[]), None, "\"is not set\" lines set nothing");
    }

    #[test]
    fn per_cpu_state_only_where_programs_are_not_preempted() {
        assert!(cpu_slot_safe(Some("none")) && cpu_slot_safe(Some("voluntary")));
        for m in [Some("full"), Some("lazy"), Some("rt"), Some("other"), None] {
            assert!(!cpu_slot_safe(m), "{m:?}");
        }
    }
}
