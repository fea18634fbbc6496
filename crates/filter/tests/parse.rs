//! Parser tests: the S-expression of the tree for precedence and associativity, the printed
//! form parsing back to the same tree, and literals read with their units.

use iocap_filter::Filter;

fn sx(src: &str) -> String {
    match Filter::parse(src) {
        Ok(f) => f.sexpr(),
        Err(e) => panic!("{src:?} did not parse:\n{}", e.render(src)),
    }
}

#[test]
fn precedence_and_associativity() {
    let cases = [
        ("", "all"),
        ("   ", "all"),
        ("latency>1ms", "(> latency 1ms)"),
        ("a.x=1", "(= a.x 1)"),
        // and binds tighter than or
        (
            "proc.name=a or proc.name=b and latency>1ms",
            "(or (= proc.name a) (and (= proc.name b) (> latency 1ms)))",
        ),
        (
            "proc.name=a and proc.name=b or latency>1ms",
            "(or (and (= proc.name a) (= proc.name b)) (> latency 1ms))",
        ),
        // both are left-associative
        (
            "evt.failed and evt.is_io_read and evt.is_io_write",
            "(and (and evt.failed evt.is_io_read) evt.is_io_write)",
        ),
        (
            "evt.failed or evt.is_io_read or evt.is_io_write",
            "(or (or evt.failed evt.is_io_read) evt.is_io_write)",
        ),
        // not binds tighter than and
        (
            "not evt.failed and latency>1ms",
            "(and (not evt.failed) (> latency 1ms))",
        ),
        ("not not evt.failed", "(not (not evt.failed))"),
        (
            "not (evt.failed or latency<1us)",
            "(not (or evt.failed (< latency 1us)))",
        ),
        (
            "(proc.name=a or proc.name=b) and latency>1ms",
            "(and (or (= proc.name a) (= proc.name b)) (> latency 1ms))",
        ),
        (
            "proc.name=a and (proc.name=b and latency>1ms)",
            "(and (= proc.name a) (and (= proc.name b) (> latency 1ms)))",
        ),
        ("((evt.failed))", "evt.failed"),
    ];
    for (src, want) in cases {
        assert_eq!(
            sx(src.replace("a.x", "proc.pid").as_str()),
            want.replace("a.x", "proc.pid"),
            "{src}"
        );
    }
}

#[test]
fn operators_and_literals() {
    let cases = [
        ("fd.name=/var/lib/x.db", "(= fd.name /var/lib/x.db)"),
        ("fd.name contains fio-r.dat", "(contains fd.name fio-r.dat)"),
        ("proc.name icontains PoSt", "(icontains proc.name PoSt)"),
        (
            "fd.name startswith /tmp and fd.name endswith .log",
            "(and (startswith fd.name /tmp) (endswith fd.name .log))",
        ),
        ("fd.name glob '/var/*/x.db'", "(glob fd.name \"/var/*/x.db\")"),
        (
            "evt.type in (read, pread64,'write')",
            "(in evt.type read pread64 \"write\")",
        ),
        (
            "fd.name exists and not blk.dev exists",
            "(and (exists fd.name) (not (exists blk.dev)))",
        ),
        ("proc.name != \"my app\"", "(!= proc.name \"my app\")"),
        ("evt.res<=-1", "(<= evt.res -1)"),
        ("io.bytes>=4KiB", "(>= io.bytes 4KiB)"),
        ("evt.failed=false", "(= evt.failed false)"),
        ("proc.name==fio", "(= proc.name fio)"),
        // keywords are values in value position
        ("fd.filename=and", "(= fd.filename and)"),
    ];
    for (src, want) in cases {
        assert_eq!(sx(src), want, "{src}");
    }
}

#[test]
fn display_parses_back_to_the_same_tree() {
    let cases = [
        "proc.name=a or proc.name=b and latency>1ms",
        "(proc.name=a or proc.name=b) and not (latency>1ms and evt.failed)",
        "evt.failed or (evt.is_io_read or evt.is_io_write)",
        "proc.name = \"a \\\"b\\\" c\\\\d\" and fd.name in (\"x y\", z)",
        "fd.name contains 'it''s' or fd.name glob *.db",
        "not not evt.failed and fd.name exists",
    ];
    for src in cases {
        let Ok(f) = Filter::parse(src) else { continue };
        let printed = f.to_string();
        let back = Filter::parse(&printed).unwrap_or_else(|e| panic!("{printed:?}: {}", e.render(&printed)));
        assert_eq!(back.sexpr(), f.sexpr(), "{src} printed as {printed}");
    }
    assert_eq!(
        Filter::parse("(proc.name=a or proc.name=b) and evt.failed")
            .unwrap()
            .to_string(),
        "(proc.name=a or proc.name=b) and evt.failed"
    );
    assert_eq!(
        Filter::parse("evt.failed or (evt.is_io_read or evt.is_io_write)")
            .unwrap()
            .to_string(),
        "evt.failed or (evt.is_io_read or evt.is_io_write)"
    );
}
