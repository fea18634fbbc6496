//! Every kind of bad filter, with its rendered message (insta snapshots): the message, the
//! place marked under the source, and the likely fix.

use iocap_filter::Filter;

fn render(src: &str) -> String {
    match Filter::parse(src) {
        Ok(f) => panic!("{src:?} parsed as {}", f.sexpr()),
        Err(e) => {
            assert!(
                e.span.start <= e.span.end && e.span.end <= src.len(),
                "span {:?} out of {src:?}",
                e.span
            );
            e.render(src)
        }
    }
}

macro_rules! bad {
    ($($name:ident: $src:expr;)*) => {$(
        #[test]
        fn $name() {
            insta::assert_snapshot!(stringify!($name), render($src), $src);
        }
    )*};
}

bad! {
    unknown_field: "proc.nme=fio and latency>1ms";
    unknown_field_far: "disk=vda";
    unknown_field_substring: "name=fio";
    unknown_unit: "latency>10 ms";
    unknown_unit_glued: "latency>10mz";
    size_unit: "io.bytes>4kib";
    type_mismatch: "latency>fast";
    duration_without_unit: "latency>100";
    time_without_unit: "evt.time>30";
    int_mismatch: "proc.pid=fio";
    signed_mismatch: "evt.res=abc";
    uint_negative: "proc.pid=-1";
    bool_mismatch: "evt.failed=maybe";
    ordering_on_string: "proc.name>fio";
    string_op_on_number: "latency contains 1ms";
    unclosed_paren: "(proc.name=fio or proc.name=dd and latency>1ms";
    unmatched_paren: "proc.name=fio)";
    empty_parens: "()";
    misspelled_and: "proc.name=fio an latency>1ms";
    misspelled_or: "proc.name=fio ro proc.name=dd";
    trailing_and: "proc.name=fio and";
    trailing_not: "evt.failed and not";
    missing_value: "latency>";
    missing_value_before_and: "latency> and evt.failed";
    misspelled_operator: "fd.name contain x.db";
    unknown_operator: "fd.name like x.db";
    string_field_alone: "proc.name and latency>1ms";
    unknown_fd_type: "fd.type=fiel";
    unknown_syscall: "evt.type=opnat";
    syscall_cut_short: "evt.type=pread";
    unknown_errno: "evt.errno=NOENT";
    in_without_list: "evt.type in read";
    unclosed_list: "evt.type in (read, write";
    list_without_commas: "evt.type in (read write)";
    unclosed_quote: "proc.name='my app";
    starts_with_operator: "= fio";
    quoted_field: "\"proc.name\"=fio";
    too_large: "latency>99999999999999999h";
    deep_nesting: &"(".repeat(500);
}

#[test]
fn errors_are_one_line_messages() {
    for src in ["proc.nme=x", "latency>fast", "(a", "x an y", "", "evt.type in ("] {
        if let Err(e) = Filter::parse(src) {
            assert!(!e.message.contains('\n'), "{src}: {}", e.message);
            assert!(!e.message.ends_with('.'), "{src}: {}", e.message);
        }
    }
}

/// The longest chain and the deepest nesting the parser accepts are checked, compiled,
/// printed and dropped on a spawned thread's default stack (2 MiB), in a debug build, whose
/// frames are the largest: hostile or generated filters get an error, never a stack overflow.
#[test]
fn long_filters_are_bounded_not_a_stack_overflow() {
    let nested = |n: usize| format!("{}evt.failed{}", "(evt.failed and not ".repeat(n), ")".repeat(n));
    let deepest = (1..300).rev().map(nested).find(|s| Filter::parse(s).is_ok()).unwrap();
    let too_deep = nested(300);
    assert_eq!(
        Filter::parse(&too_deep).unwrap_err().message,
        "filter nested too deeply"
    );
    let longest = vec!["evt.failed"; 501].join(" and ");
    let handle = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            for src in [deepest, longest] {
                let f = Filter::parse(&src).unwrap();
                let _ = f.compile(&Default::default(), &Default::default());
                assert_eq!(Filter::parse(&f.to_string()).unwrap().sexpr(), f.sexpr());
            }
        })
        .unwrap();
    handle.join().unwrap();
    let too_long = vec!["evt.failed"; 502].join(" or ");
    let e = Filter::parse(&too_long).unwrap_err();
    assert_eq!(e.message, "filter too long: more than 500 `and`/`or`");
}

/// A 20 KB filter with a typo at its end: the error shows a window around the typo, not the
/// whole filter back, and its caret is still under the typo.
#[test]
fn a_huge_filter_is_not_echoed_whole() {
    let names: Vec<String> = (0..2000).map(|i| format!("process{i:05}")).collect();
    let src = format!("proc.name in ({}) and proc.nme=dd", names.join(", "));
    assert!(src.len() > 20_000);
    let out = render(&src);
    assert!(out.len() < 600, "{} bytes: {out}", out.len());
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("unknown field `proc.nme`"), "{out}");
    let caret = lines[2].chars().position(|c| c == '^').unwrap();
    assert_eq!(
        lines[1].chars().skip(caret).take(8).collect::<String>(),
        "proc.nme",
        "{out}"
    );
    // A field name of 20 KB is quoted cut, too.
    let long = format!("{}=1", "x".repeat(20_000));
    let out = render(&long);
    assert!(out.len() < 600, "{} bytes", out.len());
    assert!(out.lines().all(|l| l.chars().count() < 250), "{out}");
}
