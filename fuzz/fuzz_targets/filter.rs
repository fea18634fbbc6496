//! Fuzz the filter language: any input either parses or gives an error whose span lies in the
//! input and renders; a filter that parses prints back to text that parses to the same tree,
//! and compiles and evaluates over a small capture without panicking.
#![no_main]

use std::sync::OnceLock;

use iocap_filter::{Bitmap, Filter};
use iocap_format::{
    mkdev, ColSet, Columns, Device, Event, FdType, FileEntry, Meta, ProcEntry, Reader, Writer, WriterOptions,
};
use libfuzzer_sys::fuzz_target;

fn capture() -> &'static (Reader<Vec<u8>>, Columns) {
    static CAP: OnceLock<(Reader<Vec<u8>>, Columns)> = OnceLock::new();
    CAP.get_or_init(|| {
        let meta = Meta {
            arch: "x86_64".into(),
            start_ts: 1000,
            ..Meta::default()
        };
        let mut w = Writer::new(Vec::new(), &meta, WriterOptions::default()).unwrap();
        w.add_device(&Device {
            dev: mkdev(253, 0),
            name: "vda".into(),
        });
        let name = w.intern(b"fio");
        let proc = w.add_proc(ProcEntry {
            pid: 5,
            name,
            ..Default::default()
        });
        let path = w.intern(b"/tmp/fio-r.dat");
        let file = w.add_file(FileEntry {
            pid: 5,
            fd: 3,
            kind: FdType::File,
            name: path,
            ..Default::default()
        });
        for i in 0..300u64 {
            let mut e = Event::syscall(1000 + i * 10, i * 997, 5, 5, (i % 7) as u32 * 97, i as i64 - 150);
            e.proc = proc;
            if i % 3 == 0 {
                e.fd = 3;
                e.file = file;
            }
            if i % 5 == 0 {
                e.class = iocap_format::Class::Block;
                e.dev = mkdev(253, (i % 2) as u32);
                e.op = (i % 6) as u8;
                e.flags = i as u32;
            }
            w.push(&e).unwrap();
        }
        let r = Reader::from_bytes(w.finish(100_000).unwrap()).unwrap();
        let mut cols = Columns::default();
        r.read_chunk(0, ColSet::ALL, &mut Default::default(), &mut cols)
            .unwrap();
        (r, cols)
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else { return };
    match Filter::parse(src) {
        Err(e) => {
            assert!(
                e.span.start <= e.span.end && e.span.end <= src.len(),
                "span {:?} of {src:?}",
                e.span
            );
            let _ = e.render(src);
        }
        Ok(f) => {
            let printed = f.to_string();
            let back = Filter::parse(&printed).unwrap_or_else(|e| panic!("{printed:?} from {src:?}: {}", e.message));
            assert_eq!(back.sexpr(), f.sexpr(), "{src:?} printed as {printed:?}");
            let (r, cols) = capture();
            let c = f.compile(r.meta(), r.tables());
            let mut bits = Bitmap::default();
            c.eval(cols, &mut bits);
            assert_eq!(bits.len(), cols.len());
            if bits.count_ones() > 0 {
                assert!(
                    c.may_match(&r.chunks()[0].summary),
                    "{src:?} matched in a chunk it would skip"
                );
            }
            if c.all_match(&r.chunks()[0].summary) {
                assert_eq!(bits.count_ones(), cols.len(), "{src:?}: all_match but not all matched");
            }
        }
    }
});
