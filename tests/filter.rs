//! The filter language end to end: `iocap fields`, `iocap help filter`, filters given as
//! trailing words, and bad filters as usage errors (exit 2) with the place marked.

use crate::util::{run, synthetic_capture};

#[test]
fn fields_lists_every_field_with_type_and_description() {
    let (code, out, err) = run(&["fields"]);
    assert_eq!(code, 0, "stderr: {err}");
    for f in iocap_filter::fields::all() {
        let line = out
            .lines()
            .find(|l| l.split_whitespace().next() == Some(f.name))
            .unwrap_or_else(|| panic!("{} missing from:\n{out}", f.name));
        assert!(line.contains(f.ty.name()) && line.contains(f.description), "{line}");
    }
    let (code, out, _) = run(&["fields", "--json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v.as_array().unwrap().len(), iocap_filter::fields::all().len());
    assert_eq!(v[0]["name"], "proc.name");
    assert_eq!(v[0]["type"], "string");
}

#[test]
fn help_filter_explains_the_syntax() {
    let (code, out, err) = run(&["help", "filter"]);
    assert_eq!(code, 0, "stderr: {err}");
    for needle in [
        "SYNTAX",
        "EXAMPLES",
        "icontains",
        "KiB",
        "exists",
        "proc.name=fio and fd.type=file and latency>1ms",
    ] {
        assert!(out.contains(needle), "{needle} missing");
    }
    assert!(out.contains("blk.total"), "the field table ends the guide");
    let (code, out, _) = run(&["help", "info"]);
    assert_eq!(code, 0);
    assert!(out.contains("Usage: iocap info"), "{out}");
    let (code, _, err) = run(&["help", "nosuch"]);
    assert_eq!(code, 2, "{err}");
}

/// Counts through `report --json` agree with the synthetic capture's known contents:
/// 500 pread64 by fio on /data/fio-r.dat, 400 futex by postgres, 100 block writes by fio.
#[test]
fn filters_count_what_the_capture_holds() {
    let dir = tempfile::tempdir().unwrap();
    let cap = synthetic_capture(dir.path(), 1000);
    let cap = cap.to_str().unwrap();
    let count = |words: &[&str]| {
        let mut args = vec!["report", "--json", cap];
        args.extend_from_slice(words);
        let (code, out, err) = run(&args);
        assert_eq!(code, 0, "{words:?}: {err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["total"], 1000);
        v["matched"].as_u64().unwrap()
    };
    assert_eq!(count(&[]), 1000);
    assert_eq!(count(&["proc.name=fio"]), 600);
    // The filter as several shell words, as sysdig and tcpdump take it.
    assert_eq!(count(&["proc.name=fio", "and", "evt.type=pread64"]), 500);
    assert_eq!(count(&["fd.name contains fio-r.dat"]), 500);
    assert_eq!(count(&["evt.class=block and blk.dev=vda and blk.op=write"]), 100);
    assert_eq!(count(&["not fd.name exists"]), 500);
    assert_eq!(count(&["fd.name!=/data/fio-r.dat"]), 0, "absent is not unequal");
    assert_eq!(count(&["latency>=200us"]), 100);
    assert_eq!(count(&["evt.time<100ms"]), 100);
    assert_eq!(count(&["proc.name=postgres or blk.latency>200us"]), 400 + 100);
    assert_eq!(
        count(&["blk.latency>200090ns"]),
        99,
        "the first block request took exactly 200090ns"
    );
}

#[test]
fn a_bad_filter_is_a_usage_error_with_the_place_marked() {
    let dir = tempfile::tempdir().unwrap();
    let cap = synthetic_capture(dir.path(), 100);
    let (code, out, err) = run(&["report", cap.to_str().unwrap(), "proc.nme=fio and latency>1ms"]);
    assert_eq!(code, 2, "stdout: {out}");
    assert!(err.contains("unknown field `proc.nme`"), "{err}");
    assert!(err.contains("\n  proc.nme=fio and latency>1ms\n  ^^^^^^^^\n"), "{err}");
    assert!(err.contains("did you mean `proc.name`?"), "{err}");
    let (code, _, err) = run(&["report", cap.to_str().unwrap(), "latency>fast"]);
    assert_eq!(code, 2);
    assert!(err.contains("expected a duration for `latency`, found `fast`"), "{err}");
}

/// The likely fix names what the user meant: seconds among the units of a bare number given
/// to a duration, the syscall a name cut short stands for (`pread` is `pread64` on x86_64),
/// and no negative example for a field that cannot be negative.
#[test]
fn suggestions_name_seconds_cut_short_syscalls_and_unsigned_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let cap = synthetic_capture(dir.path(), 10);
    for (filter, help) in [
        (
            "evt.time>30",
            "help: durations take a unit: `30s`, `30ms`, `30us` or `30ns`",
        ),
        ("evt.type=pread", "help: did you mean `pread64`, `preadv` or `preadv2`?"),
        ("proc.pid=abc", "help: write a whole number, like 42\n"),
        ("evt.res=abc", "help: write a whole number, like 42 or -2\n"),
    ] {
        let (code, _, err) = run(&["report", cap.to_str().unwrap(), filter]);
        assert_eq!(code, 2, "{filter}: {err}");
        assert!(err.contains(help), "{filter}: {err}");
    }
}
