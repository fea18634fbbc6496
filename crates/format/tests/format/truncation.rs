//! A capture cut at every byte offset reads back as exactly its whole chunks before the cut.

use iocap_format::{Error, Reader, FORMAT_MAJOR};

use crate::util::{read_chunks, small_capture};

/// Offset where the frame after the header starts: cuts before it may fail to open.
fn header_end(bytes: &[u8]) -> usize {
    let len = u32::from_le_bytes(bytes[16 + 8..16 + 12].try_into().unwrap()) as usize;
    16 + 16 + len
}

#[test]
fn every_cut_gives_the_whole_chunks_before_it() {
    let (bytes, x) = small_capture();
    assert!(x.chunks.len() >= 5, "the sample must span several chunks");
    let full = Reader::from_bytes(bytes.clone()).unwrap();
    // The chunk frames' ends, from the full file: a cut at or after an end keeps that chunk.
    let ends: Vec<u64> = full
        .chunks()
        .iter()
        .map(|c| {
            let len = u32::from_le_bytes(bytes[c.offset as usize + 8..c.offset as usize + 12].try_into().unwrap());
            c.offset + 16 + u64::from(len)
        })
        .collect();
    let hdr = header_end(&bytes);
    for cut in 0..=bytes.len() {
        let r = match Reader::from_bytes(bytes[..cut].to_vec()) {
            Ok(r) => r,
            Err(e) => {
                assert!(cut < hdr, "cut at {cut} (after the header) must open, got: {e}");
                assert!(
                    matches!(e, Error::NotACapture(_) | Error::Corrupt { .. }),
                    "cut at {cut}: unexpected error {e:?}"
                );
                continue;
            }
        };
        assert!(cut >= hdr, "cut at {cut} inside the header opened");
        let whole = ends.iter().filter(|&&end| end <= cut as u64).count();
        let chunks = read_chunks(&r).unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
        assert_eq!(chunks, x.chunks[..whole], "cut at {cut}");
        assert_eq!(r.is_clean(), cut == bytes.len(), "cut at {cut}: {:?}", r.recovery());
        assert_eq!(r.version().0, FORMAT_MAJOR);
        assert_eq!(r.meta(), &x.meta);
    }
}

#[test]
fn tiny_files_are_clear_errors() {
    for bytes in [&b""[..], b"IOCA", b"garbage that is not a capture at all"] {
        let e = Reader::from_bytes(bytes.to_vec()).err().expect("must not open");
        assert!(matches!(e, Error::NotACapture(_)), "{e:?}");
        assert!(!e.to_string().contains('\n'));
    }
}
