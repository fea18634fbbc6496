//! Frames: the self-delimiting, checksummed records a capture file is made of.
//! Parsing here does no I/O; the reader and the writer move the bytes.
//!
//! ```text
//! frame   := "IOFR" kind:u16 reserved:u16 len:u32 crc:u32 payload[len]      (little-endian)
//! crc     := CRC-32 (IEEE) of kind, reserved, len and payload
//! ```

use crate::error::Error;

/// The 16 bytes that open every capture file: magic, then format major and minor version.
pub const FILE_MAGIC: &[u8; 8] = b"IOCAP\x00\r\n";
/// Format major version: a reader refuses a file with a newer major.
pub const FORMAT_MAJOR: u16 = 1;
/// Format minor version: additions a reader of the same major can skip.
pub const FORMAT_MINOR: u16 = 23;
pub const PREAMBLE_LEN: usize = 16;

pub const FRAME_MAGIC: &[u8; 4] = b"IOFR";
pub const FRAME_HEADER_LEN: usize = 16;
/// Largest payload a reader accepts, checked before anything is allocated.
pub const MAX_PAYLOAD: u32 = 64 << 20;

/// The 16 bytes that close a cleanly finished file: magic, then the index frame's offset.
pub const TRAILER_MAGIC: &[u8; 8] = b"IOCAPIDX";
pub const TRAILER_LEN: usize = 16;

/// Frame kinds. Readers skip kinds they do not know.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u16)]
pub enum Kind {
    Header = 1,
    Strings = 2,
    Procs = 3,
    Files = 4,
    Devices = 5,
    Chunk = 6,
    Stats = 7,
    Index = 8,
    /// Strings, each stored as the bytes it shares with the previous one and the rest (1.1).
    PrefixStrings = 9,
    /// File entries stored field by field, each delta-coded (1.1).
    ColumnFiles = 10,
    /// Who a process runs as and in which cgroup, for entries of earlier `Procs` frames (1.5).
    ProcOwners = 11,
    /// Block requests the recorder saw issued and never saw complete (1.9).
    Unseen = 12,
    /// A chunk's events by key and latency cell, right after the chunk (1.12; with each key's
    /// bytes since 1.13).
    Rollup = 13,
    /// The totals of each cell of the rollup before it (1.14).
    CellTotals = 14,
    /// The `Unseen` frame's count, disk by disk (1.15).
    UnseenDisks = 15,
    /// A chunk's rollup whose keys hold each event's file too, in place of its `Rollup`: the
    /// same entries, then each key's file (1.17).
    FileRollup = 16,
    /// Stacks of calls, each a kind and frames (1.21).
    Stacks = 17,
    /// The drops of the `Stats` frame before it placed by process: each process's growth since
    /// the previous reading (1.22).
    DropProcs = 18,
    /// Containers, each an id, a runtime and its names (1.23).
    Containers = 19,
    /// The container of each process entry of earlier `Procs` frames that ran in one (1.23).
    ProcContainers = 20,
}

impl Kind {
    pub fn from_code(code: u16) -> Option<Kind> {
        Some(match code {
            1 => Kind::Header,
            2 => Kind::Strings,
            3 => Kind::Procs,
            4 => Kind::Files,
            5 => Kind::Devices,
            6 => Kind::Chunk,
            7 => Kind::Stats,
            8 => Kind::Index,
            9 => Kind::PrefixStrings,
            10 => Kind::ColumnFiles,
            11 => Kind::ProcOwners,
            12 => Kind::Unseen,
            13 => Kind::Rollup,
            14 => Kind::CellTotals,
            15 => Kind::UnseenDisks,
            16 => Kind::FileRollup,
            17 => Kind::Stacks,
            18 => Kind::DropProcs,
            19 => Kind::Containers,
            20 => Kind::ProcContainers,
            _ => return None,
        })
    }
}

/// A frame header as read from the file, its checksum not yet verified.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameHeader {
    pub kind: u16,
    pub len: u32,
    pub crc: u32,
    reserved: u16,
}

impl FrameHeader {
    /// Parse a frame header; `None` when the magic is wrong or the length is over the cap.
    pub fn parse(b: &[u8; FRAME_HEADER_LEN]) -> Option<FrameHeader> {
        if &b[0..4] != FRAME_MAGIC {
            return None;
        }
        let h = FrameHeader {
            kind: u16::from_le_bytes([b[4], b[5]]),
            reserved: u16::from_le_bytes([b[6], b[7]]),
            len: u32::from_le_bytes([b[8], b[9], b[10], b[11]]),
            crc: u32::from_le_bytes([b[12], b[13], b[14], b[15]]),
        };
        (h.len <= MAX_PAYLOAD).then_some(h)
    }

    /// Whether `payload` is the one this header describes.
    pub fn verify(&self, payload: &[u8]) -> bool {
        payload.len() == self.len as usize && checksum(self.kind, self.reserved, payload) == self.crc
    }

    /// The total size of the frame on disk.
    pub fn frame_len(&self) -> u64 {
        FRAME_HEADER_LEN as u64 + u64::from(self.len)
    }
}

fn checksum(kind: u16, reserved: u16, payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&kind.to_le_bytes());
    h.update(&reserved.to_le_bytes());
    h.update(&(payload.len() as u32).to_le_bytes());
    h.update(payload);
    h.finalize()
}

/// Append a whole frame to `out`.
pub fn encode(out: &mut Vec<u8>, kind: Kind, payload: &[u8]) -> Result<(), Error> {
    let len = u32::try_from(payload.len())
        .ok()
        .filter(|&l| l <= MAX_PAYLOAD)
        .ok_or(Error::TooLarge {
            what: "frame",
            len: payload.len() as u64,
            max: u64::from(MAX_PAYLOAD),
        })?;
    out.extend_from_slice(FRAME_MAGIC);
    out.extend_from_slice(&(kind as u16).to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&checksum(kind as u16, 0, payload).to_le_bytes());
    out.extend_from_slice(payload);
    Ok(())
}

/// The file preamble.
pub fn preamble() -> [u8; PREAMBLE_LEN] {
    let mut p = [0u8; PREAMBLE_LEN];
    p[0..8].copy_from_slice(FILE_MAGIC);
    p[8..10].copy_from_slice(&FORMAT_MAJOR.to_le_bytes());
    p[10..12].copy_from_slice(&FORMAT_MINOR.to_le_bytes());
    p
}

/// Check a preamble; returns the file's (major, minor) version.
pub fn parse_preamble(b: &[u8]) -> Result<(u16, u16), Error> {
    if b.len() < PREAMBLE_LEN {
        return Err(Error::NotACapture("shorter than the 16-byte preamble"));
    }
    if &b[0..8] != FILE_MAGIC {
        return Err(Error::NotACapture("no iocap magic at the start"));
    }
    let major = u16::from_le_bytes([b[8], b[9]]);
    let minor = u16::from_le_bytes([b[10], b[11]]);
    if major > FORMAT_MAJOR {
        return Err(Error::Version {
            major,
            minor,
            supported: FORMAT_MAJOR,
        });
    }
    Ok((major, minor))
}

/// How many bytes from its start a capture needs before a [`crate::Reader`] can open it: the
/// preamble and the whole header frame, read from its first [`OPENING_PEEK`] bytes. `Ok(None)`
/// while `start` is shorter than that (a stream still arriving); an error when the bytes are
/// not the start of a capture this iocap reads, so whoever waits for the rest knows not to.
///
/// ```
/// use iocap_format::{opening_len, Meta, Writer, WriterOptions, OPENING_PEEK};
/// let bytes = Writer::new(Vec::new(), &Meta::default(), WriterOptions::default())?.finish(0)?;
/// let need = opening_len(&bytes).unwrap().unwrap();
/// assert!(need > OPENING_PEEK as u64 && need < bytes.len() as u64);
/// assert_eq!(opening_len(&bytes[..20]).unwrap(), None);
/// assert!(opening_len(b"#!/bin/sh\necho not a capture at all\n").is_err());
/// # Ok::<(), iocap_format::Error>(())
/// ```
pub fn opening_len(start: &[u8]) -> Result<Option<u64>, Error> {
    if start.len() >= PREAMBLE_LEN {
        parse_preamble(start)?;
    } else if !FILE_MAGIC.starts_with(&start[..start.len().min(FILE_MAGIC.len())]) {
        return Err(Error::NotACapture("no iocap magic at the start"));
    }
    let Some(head) = start.get(PREAMBLE_LEN..OPENING_PEEK) else {
        return Ok(None);
    };
    let head: &[u8; FRAME_HEADER_LEN] = head.try_into().expect("16 bytes");
    match FrameHeader::parse(head) {
        Some(h) if h.kind == Kind::Header as u16 => Ok(Some(PREAMBLE_LEN as u64 + h.frame_len())),
        _ => Err(Error::corrupt(
            PREAMBLE_LEN as u64,
            "no header frame after the preamble",
        )),
    }
}

/// The bytes [`opening_len`] needs to tell: the preamble and a frame header.
pub const OPENING_PEEK: usize = PREAMBLE_LEN + FRAME_HEADER_LEN;

pub fn trailer(index_offset: u64) -> [u8; TRAILER_LEN] {
    let mut t = [0u8; TRAILER_LEN];
    t[0..8].copy_from_slice(TRAILER_MAGIC);
    t[8..16].copy_from_slice(&index_offset.to_le_bytes());
    t
}

/// The index frame's offset, if these are the last 16 bytes of a finished file.
pub fn parse_trailer(b: &[u8; TRAILER_LEN]) -> Option<u64> {
    (&b[0..8] == TRAILER_MAGIC).then(|| u64::from_le_bytes(b[8..16].try_into().expect("8 bytes")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_roundtrip_and_bit_flips_are_detected() {
        let mut out = Vec::new();
        encode(&mut out, Kind::Stats, b"hello").unwrap();
        let h = FrameHeader::parse(out[..16].try_into().unwrap()).unwrap();
        assert_eq!((h.kind, h.len), (Kind::Stats as u16, 5));
        assert!(h.verify(&out[16..]));
        for bit in 0..(out.len() - 16) * 8 {
            let mut bad = out.clone();
            bad[16 + bit / 8] ^= 1 << (bit % 8);
            assert!(!h.verify(&bad[16..]), "flip of payload bit {bit} not detected");
        }
    }

    #[test]
    fn newer_major_is_refused() {
        let mut p = preamble();
        p[8] = 2;
        assert!(matches!(parse_preamble(&p), Err(Error::Version { major: 2, .. })));
        assert!(parse_preamble(&preamble()).is_ok());
    }

    #[test]
    fn opening_len_waits_for_the_header_and_refuses_what_no_capture_starts_with() {
        let mut b = preamble().to_vec();
        encode(&mut b, Kind::Header, b"{}").unwrap();
        assert_eq!(opening_len(&b).unwrap(), Some(b.len() as u64));
        for cut in 0..OPENING_PEEK {
            assert_eq!(opening_len(&b[..cut]).unwrap(), None, "{cut} bytes");
        }
        assert!(opening_len(b"IOCAQ").is_err(), "a wrong magic is known early");
        let mut newer = b.clone();
        newer[8] = 2;
        assert!(matches!(opening_len(&newer[..16]), Err(Error::Version { .. })));
        let mut chunk_first = preamble().to_vec();
        encode(&mut chunk_first, Kind::Chunk, b"x").unwrap();
        assert!(opening_len(&chunk_first).is_err());
    }
}
