//! Compression of frame payloads: `codec:u8 raw_len:varint data`.

use crate::varint::{self, Cursor};

pub const RAW: u8 = 0;
pub const ZSTD: u8 = 1;
/// Largest decompressed payload a reader accepts, checked before allocating.
pub const MAX_RAW: u64 = 256 << 20;
/// Largest zstd window a reader accepts (log2): 2^27 = 128 MiB, the zstd default maximum.
pub const MAX_WINDOW_LOG: u32 = 27;
/// The most a zstd frame can expand: every block of at most 128 KiB output takes at least
/// 4 input bytes (an RLE block). A `raw_len` beyond `data_len * MAX_RATIO` is a lie, and
/// refusing it keeps a 20-byte hostile frame from making the reader allocate 256 MiB.
pub const MAX_RATIO: u64 = (128 << 10) / 4;

/// Reusable compression state.
pub(crate) struct Packer {
    cctx: zstd::bulk::Compressor<'static>,
}

impl Packer {
    pub fn new(level: i32) -> std::io::Result<Packer> {
        Ok(Packer {
            cctx: zstd::bulk::Compressor::new(level)?,
        })
    }

    /// Append `codec raw_len data` for `raw` to `out`.
    pub fn pack(&mut self, raw: &[u8], out: &mut Vec<u8>) -> std::io::Result<()> {
        out.push(ZSTD);
        varint::put(out, raw.len() as u64);
        let bound = zstd::zstd_safe::compress_bound(raw.len());
        let start = out.len();
        out.resize(start + bound, 0);
        let n = self.cctx.compress_to_buffer(raw, &mut out[start..])?;
        out.truncate(start + n);
        Ok(())
    }
}

/// Reusable decompression state.
pub struct Unpacker {
    dctx: zstd::bulk::Decompressor<'static>,
}

impl std::fmt::Debug for Unpacker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Unpacker")
    }
}

impl Unpacker {
    pub fn new() -> std::io::Result<Unpacker> {
        let mut dctx = zstd::bulk::Decompressor::new()?;
        dctx.window_log_max(MAX_WINDOW_LOG)?;
        Ok(Unpacker { dctx })
    }

    /// Decode `codec raw_len data` from `cur` into `out` (cleared first).
    pub fn unpack(&mut self, cur: &mut Cursor<'_>, out: &mut Vec<u8>) -> Result<(), &'static str> {
        let codec = cur.u8().ok_or("payload cut short")?;
        let raw_len = cur.varint().ok_or("payload cut short")?;
        if raw_len > MAX_RAW {
            return Err("decompressed size over the 256 MiB limit");
        }
        let data = cur.rest();
        out.clear();
        if codec == ZSTD && raw_len > (data.len() as u64).saturating_mul(MAX_RATIO) {
            return Err("decompressed size larger than the data can hold");
        }
        match codec {
            RAW => {
                if data.len() as u64 != raw_len {
                    return Err("stored size does not match");
                }
                out.extend_from_slice(data);
            }
            ZSTD => {
                // A frame that states its content size must agree with `raw_len`: a cheap
                // refusal before any work.
                if let Ok(Some(size)) = zstd::zstd_safe::get_frame_content_size(data) {
                    if size != raw_len {
                        return Err("decompressed size does not match");
                    }
                }
                // Decompress into spare capacity: no time spent zeroing what zstd overwrites.
                out.reserve(raw_len as usize);
                let n = self
                    .dctx
                    .decompress_to_buffer(data, out)
                    .map_err(|_| "zstd data does not decompress")?;
                if n as u64 != raw_len {
                    return Err("decompressed size does not match");
                }
            }
            _ => return Err("unknown compression codec"),
        }
        Ok(())
    }
}
