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
    int_mismatch: "proc.pid=fio";
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
