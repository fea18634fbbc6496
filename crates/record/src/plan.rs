//! From what was asked (pids, a command, which classes, a latency floor, a filter) to what the
//! kernel is told ([`Config`]): the part of the filter the kernel can decide
//! ([`Filter::pushdown`]) joins the options, and a request that can record nothing is refused
//! before anything is loaded.

use iocap_filter::{class_noun, literal, Filter, Reach};
use iocap_format::Class;

use crate::config::Config;

/// What the user asked for, besides the filter.
#[derive(Clone, Debug)]
pub struct Request {
    /// `-p`: only these processes.
    pub pids: Vec<u32>,
    /// `-c`: a command is started and traced with its descendants (its pid is added later).
    pub command: bool,
    /// Record syscalls and io_uring requests (not `--no-syscalls`).
    pub syscalls: bool,
    /// Record block requests (not `--no-block`).
    pub block: bool,
    /// Time calls off the CPU, by why (`--no-anatomy` clears it).
    pub anatomy: bool,
    /// `--stacks`: the latency (ns) from which a call keeps its stacks; `None`: none.
    pub stacks_ns: Option<u64>,
    /// `--min-latency`, ns.
    pub min_latency_ns: u64,
    /// Ring buffer bytes.
    pub ring_bytes: u32,
    /// `--cgroup`: the processes of this cgroup, and of those below it, too.
    pub scope: Option<crate::config::CgroupScope>,
}

/// Why a request can record nothing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// The filter alone rules every event out (`latency>1ms and latency<1us`,
    /// `evt.class=block and evt.type=read`, `proc.name=fio and proc.name=dd`).
    #[error("the filter `{filter}` can match no event{}", why.as_ref().map_or(String::new(), |w| format!(": {w}")))]
    MatchesNothing {
        /// The filter, as it reads back.
        filter: String,
        /// Which conjuncts rule out which events, when that is what decided it.
        why: Option<String>,
    },
    /// The filter matches only events faster than `--min-latency` keeps (`--min-latency 1ms
    /// 'latency<1us'`).
    #[error("the filter `{filter}` can match no event as slow as --min-latency {min}: {why}")]
    MatchesNothingSlowEnough {
        /// The filter, as it reads back.
        filter: String,
        /// The option's value, as a literal: `1ms`.
        min: String,
        /// The bounds that do not meet.
        why: String,
    },
    /// What the filter can match is what the options leave out (`--no-block 'blk.dev=vda'`).
    #[error("the filter `{filter}` can match no event that is recorded: it matches only {matches}, which {option} leaves out")]
    MatchesNothingRecorded {
        /// The filter, as it reads back.
        filter: String,
        /// The events it can match: `block requests`.
        matches: String,
        /// The option that leaves them out: `--no-block`.
        option: &'static str,
    },
    /// The filter names a field of a capture read with others (`host`, `capture.id`), which
    /// says nothing of an event being recorded.
    #[error("the filter `{filter}` names {fields}: a field of a capture read with others (`iocap report a.cap b.cap 'host=db2'`), not of an event being recorded; leave it out of the recording's filter")]
    CaptureField {
        /// The filter, as it reads back.
        filter: String,
        /// The fields, quoted: `` `host` ``.
        fields: String,
    },
    /// A filter naming a field the recorder knows only once the call is written (`stack.*`).
    #[error("the filter `{filter}` names {fields}, which the recorder knows only after it has kept a call: record with --stacks, then filter on it with view, report or flame")]
    AfterRecordingField {
        /// The filter, as it reads back.
        filter: String,
        /// The fields, quoted: `` `stack.user` ``.
        fields: String,
    },
    /// `--no-syscalls --no-block`.
    #[error("--no-syscalls and --no-block together leave nothing to record")]
    NothingToRecord,
}

/// Whether a pushed-down set allows nothing (`None` allows anything).
fn none<T>(set: &Option<Vec<T>>) -> bool {
    set.as_ref().is_some_and(Vec::is_empty)
}

/// The kernel's settings for `req` and `filter` (whose whole is still applied to every event
/// by the writer thread).
pub fn plan(req: &Request, filter: &Filter) -> Result<Config, PlanError> {
    let src = filter.to_string();
    // Fields quoted and joined for a message: `` `host` and `capture.id` ``.
    let quoted = |fields: Vec<&str>| {
        fields
            .iter()
            .map(|f| format!("`{f}`"))
            .collect::<Vec<_>>()
            .join(" and ")
    };
    let per_capture = filter.per_capture_fields();
    if !per_capture.is_empty() {
        return Err(PlanError::CaptureField {
            filter: src,
            fields: quoted(per_capture),
        });
    }
    let after = filter.after_recording_fields();
    if !after.is_empty() {
        return Err(PlanError::AfterRecordingField {
            filter: src,
            fields: quoted(after),
        });
    }
    let push = filter.pushdown(std::env::consts::ARCH);
    let reach = filter.reach(std::env::consts::ARCH);
    if reach.none() {
        return Err(PlanError::MatchesNothing {
            filter: src,
            why: Some(reach.to_string()),
        });
    }
    // (Reach reads the class and syscall tests as the pushdown does, so what it allows the
    // pushdown allows; the pid and name sets are the pushdown's alone.)
    if none(&push.pids) || none(&push.names) {
        return Err(PlanError::MatchesNothing { filter: src, why: None });
    }
    if req.min_latency_ns > 0 {
        // The kernel keeps only events at least this slow (their `latency`, in every class).
        let min = literal::duration(req.min_latency_ns);
        let floor = format!("latency>={min}");
        let both = if filter.is_all() {
            floor.clone()
        } else {
            format!("{floor} and ({src})")
        };
        let reach = Filter::parse(&both).map(|f| f.reach(std::env::consts::ARCH));
        if let Some(r) = reach.ok().filter(Reach::none) {
            return Err(PlanError::MatchesNothingSlowEnough {
                filter: src,
                min,
                why: r.to_string(),
            });
        }
    }
    if !req.syscalls && !req.block {
        return Err(PlanError::NothingToRecord);
    }
    let recorded = |class: Class| match class {
        Class::Block | Class::Journal => req.block,
        Class::Syscall | Class::IoUring => req.syscalls,
    };
    if !reach.classes().into_iter().any(recorded) {
        let nouns: Vec<&str> = reach.classes().into_iter().map(class_noun).collect();
        return Err(PlanError::MatchesNothingRecorded {
            filter: src,
            matches: nouns.join(" and "),
            option: if req.block { "--no-syscalls" } else { "--no-block" },
        });
    }
    let mut cfg = Config {
        pids: req.pids.clone(),
        follow_forks: req.command,
        syscalls: req.syscalls && push.syscalls,
        // Journal commits are timed by the block programs.
        block: req.block && (push.block || push.journal),
        io_uring: req.syscalls && push.io_uring,
        min_latency_ns: req.min_latency_ns.max(push.min_latency),
        ring_bytes: req.ring_bytes,
        filter: req.command,
        syscall_nrs: push.syscall_nrs.clone(),
        names: push.names.clone(),
        anatomy: req.anatomy,
        stacks_ns: req.stacks_ns,
        scope: req.scope.clone(),
    };
    // The filter's pids, in the kernel: alone, or as the part of -p they allow. Not with -c,
    // whose pids are not known yet (the writer thread still applies the whole filter).
    if let (Some(fp), false) = (&push.pids, req.command) {
        cfg.pids = if cfg.pids.is_empty() {
            fp.clone()
        } else {
            cfg.pids.iter().copied().filter(|p| fp.contains(p)).collect()
        };
        cfg.filter = true;
    }
    // A cgroup's processes are traced as -p's are: those there now from the start, those that
    // fork, exec or are moved there as they do.
    if let Some(scope) = &req.scope {
        cfg.pids.extend(scope.pids.iter().filter(|p| !req.pids.contains(p)));
        cfg.filter = true;
    }
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req() -> Request {
        Request {
            pids: Vec::new(),
            command: false,
            syscalls: true,
            block: true,
            anatomy: true,
            stacks_ns: None,
            min_latency_ns: 0,
            ring_bytes: 1 << 20,
            scope: None,
        }
    }

    fn f(src: &str) -> Filter {
        Filter::parse(src).unwrap()
    }

    #[test]
    fn the_kernel_gets_what_it_can_decide() {
        let c = plan(&req(), &f("proc.pid in (7, 9) and latency>1ms and evt.type=read")).unwrap();
        assert_eq!(c.pids, [7, 9]);
        assert!(c.filter && c.syscalls && !c.block);
        assert_eq!(c.min_latency_ns, 1_000_001);
        assert_eq!(c.syscall_nrs.as_deref(), Some(&[0][..]), "read is 0 on x86_64");
        let c = plan(
            &Request {
                pids: vec![9, 11],
                ..req()
            },
            &f("proc.pid in (7, 9)"),
        )
        .unwrap();
        assert_eq!(c.pids, [9], "-p narrowed by the filter");
        let c = plan(&Request { command: true, ..req() }, &f("proc.pid=7")).unwrap();
        assert!(c.pids.is_empty() && c.follow_forks && c.filter, "-c: pids come later");
        let c = plan(&req(), &f("evt.class=io_uring")).unwrap();
        assert!(c.io_uring && !c.syscalls && !c.block);
        let c = plan(&req(), &f("evt.type=pread64")).unwrap();
        assert!(!c.io_uring && c.syscalls);
        let c = plan(
            &Request {
                syscalls: false,
                ..req()
            },
            &f(""),
        )
        .unwrap();
        assert!(!c.io_uring && c.block, "io_uring requests go with the syscalls");
    }

    #[test]
    fn fields_of_a_capture_read_with_others_are_refused() {
        let err = |src: &str| plan(&req(), &f(src)).unwrap_err().to_string();
        assert!(
            err("host=db2 and latency>1ms")
                .starts_with("the filter `host=db2 and latency>1ms` names `host`: a field of a capture"),
            "{}",
            err("host=db2")
        );
        assert!(err("not (capture.id=abc or host=x)").contains("names `capture.id` and `host`:"));
        assert!(plan(&req(), &f("proc.name=host")).is_ok(), "a value is no field");
    }

    /// A stack's frames are named after the writer thread's filter has judged its call: a
    /// record-time filter on them would keep nothing, so it is refused.
    #[test]
    fn stack_fields_are_refused_at_record_time() {
        let err = plan(
            &req(),
            &f("latency>1ms and (stack.user contains pg_fsync or stack.top=fsync)"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("names `stack.user` and `stack.top`, which the recorder knows only after"),
            "{err}"
        );
    }

    #[test]
    fn requests_that_record_nothing_are_refused() {
        let nothing = |r: Request, src: &str| plan(&r, &f(src)).unwrap_err().to_string();
        assert!(nothing(req(), "evt.class=block and evt.type=read").contains("can match no event"));
        assert_eq!(
            nothing(req(), "latency>1ms and latency<1us"),
            "the filter `latency>1ms and latency<1us` can match no event: `latency>1ms` and `latency<1us` cannot both hold"
        );
        assert_eq!(
            nothing(req(), "blk.dev=loop2 and fd.num=3"),
            "the filter `blk.dev=loop2 and fd.num=3` can match no event: `blk.dev=loop2` rules out syscalls, \
             io_uring requests and journal commits; `fd.num=3` rules out block requests"
        );
        assert_eq!(
            nothing(req(), "proc.name=fio and proc.name=dd"),
            "the filter `proc.name=fio and proc.name=dd` can match no event"
        );
        let no_block = Request { block: false, ..req() };
        assert!(nothing(no_block.clone(), "evt.class=block").contains("no event that is recorded"));
        assert_eq!(
            nothing(no_block, "blk.dev=vda"),
            "the filter `blk.dev=vda` can match no event that is recorded: it matches only block requests, \
             which --no-block leaves out"
        );
        let no_sys = Request {
            syscalls: false,
            ..req()
        };
        assert!(nothing(no_sys.clone(), "evt.class=io_uring").contains("no event that is recorded"));
        assert_eq!(
            nothing(no_sys.clone(), "evt.type=pread64 or evt.class=io_uring"),
            "the filter `evt.type=pread64 or evt.class=io_uring` can match no event that is recorded: it \
             matches only syscalls and io_uring requests, which --no-syscalls leaves out"
        );
        // Journal commits have disk figures too, and are recorded with the block requests.
        assert!(plan(&no_sys, &f("disk.time>1ms")).is_ok_and(|c| c.block));
        let slow = Request {
            min_latency_ns: 1_000_000,
            ..req()
        };
        assert_eq!(
            nothing(slow.clone(), "proc.name=fio and latency<1us"),
            "the filter `proc.name=fio and latency<1us` can match no event as slow as --min-latency 1ms: \
             `latency>=1ms` and `latency<1us` cannot both hold"
        );
        assert!(plan(&slow, &f("latency<2ms")).is_ok());
        let neither = Request {
            block: false,
            syscalls: false,
            ..req()
        };
        assert!(nothing(neither, "").contains("leave nothing"));
    }
}
