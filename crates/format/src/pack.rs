//! Compression of table frame payloads (`codec:u8 raw_len:varint data`) and of the
//! columns of a chunk (each with its own codec and sizes in the column directory).

use crate::varint;

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
        let mut cctx = zstd::bulk::Compressor::new(level)?;
        // Columns are mostly short varints. zstd raises the minimum match to 5 bytes for
        // inputs under 256 KiB (a chunk of one second's events), which loses the 4-byte repeats
        // these have: measured on a real fio capture in 16 Ki-event chunks, 6.25 → 5.90
        // bytes/event.
        cctx.set_parameter(zstd::zstd_safe::CParameter::MinMatch(4))?;
        Ok(Packer { cctx })
    }

    /// Append `codec raw_len data` for `raw` to `out`.
    pub fn pack(&mut self, raw: &[u8], out: &mut Vec<u8>) -> std::io::Result<()> {
        out.push(ZSTD);
        varint::put(out, raw.len() as u64);
        self.compress(raw, out)
    }

    /// Append one zstd frame holding `raw` to `out`.
    pub fn compress(&mut self, raw: &[u8], out: &mut Vec<u8>) -> std::io::Result<()> {
        let bound = zstd::zstd_safe::compress_bound(raw.len());
        let start = out.len();
        out.resize(start + bound, 0);
        let n = self.cctx.compress_to_buffer(raw, &mut out[start..])?;
        out.truncate(start + n);
        Ok(())
    }
}

/// Append `codec raw_len data` for `raw` stored as it is (codec [`RAW`]) to `out`.
pub fn store(raw: &[u8], out: &mut Vec<u8>) {
    out.push(RAW);
    varint::put(out, raw.len() as u64);
    out.extend_from_slice(raw);
}

/// Check that `data` is exactly one zstd frame whose window is within [`MAX_WINDOW_LOG`] and
/// whose stated content size, if any, is `raw_len`. zstd's one-shot decompression does not
/// enforce a window limit itself (it needs no window buffer), so the cap is applied here, for
/// every frame, before any work.
fn check_zstd_frame(data: &[u8], raw_len: u64) -> Result<(), &'static str> {
    const MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];
    if data.get(..4) != Some(&MAGIC[..]) {
        return Err("not a zstd frame");
    }
    let fhd = *data.get(4).ok_or("zstd frame header cut short")?;
    let single_segment = fhd & 0x20 != 0;
    let window = if single_segment {
        // The window is the whole content, which `raw_len` bounds (checked just below).
        raw_len
    } else {
        let wd = *data.get(5).ok_or("zstd frame header cut short")?;
        let log = 10 + u32::from(wd >> 3);
        if log > MAX_WINDOW_LOG {
            return Err("zstd window over the 128 MiB limit");
        }
        (1u64 << log) + (1u64 << log) / 8 * u64::from(wd & 7)
    };
    if window > 1 << MAX_WINDOW_LOG {
        return Err("zstd window over the 128 MiB limit");
    }
    match zstd::zstd_safe::get_frame_content_size(data) {
        Ok(Some(size)) if size != raw_len => return Err("decompressed size does not match"),
        Ok(_) => {}
        Err(_) => return Err("zstd frame header does not decode"),
    }
    // One frame exactly: a second, concatenated frame would escape the checks above.
    match zstd::zstd_safe::find_frame_compressed_size(data) {
        Ok(n) if n == data.len() => Ok(()),
        _ => Err("zstd data is not exactly one frame"),
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

    /// Decode `data`, stored with `codec`, into `out` (cleared first); it must come to
    /// exactly `raw_len` bytes.
    pub fn unpack_parts(
        &mut self,
        codec: u8,
        raw_len: u64,
        data: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), &'static str> {
        if raw_len > MAX_RAW {
            return Err("decompressed size over the 256 MiB limit");
        }
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
                check_zstd_frame(data, raw_len)?;
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
