//! The tables events refer to (strings, processes, files, devices) and their frames.
//!
//! Table frames are appended as entries appear, always before the first chunk that refers to
//! them. A reader merges every table frame into one [`Tables`]. Strings are escaped here, once,
//! as they are decoded (see [`crate::escape`]), so nothing downstream sees raw host bytes.

use std::collections::HashMap;

use crate::escape::escape;
use crate::model::{Device, FdType, FileEntry, ProcEntry, StrId};
use crate::varint::{self, Cursor};

/// All table entries of a capture, by id.
#[derive(Clone, Debug, Default)]
pub struct Tables {
    strings: HashMap<StrId, String>,
    procs: Vec<ProcEntry>,
    proc_index: HashMap<u32, usize>,
    files: Vec<FileEntry>,
    file_index: HashMap<u32, usize>,
    devices: Vec<Device>,
}

impl Tables {
    /// The (escaped) string with this id; `""` for 0 or an id the file never defined.
    pub fn string(&self, id: StrId) -> &str {
        self.strings.get(&id).map_or("", String::as_str)
    }

    pub fn proc(&self, id: u32) -> Option<&ProcEntry> {
        self.proc_index.get(&id).map(|&i| &self.procs[i])
    }

    pub fn file(&self, id: u32) -> Option<&FileEntry> {
        self.file_index.get(&id).map(|&i| &self.files[i])
    }

    /// Every process entry, in the order the file defined them.
    pub fn procs(&self) -> &[ProcEntry] {
        &self.procs
    }

    /// Every file entry, in the order the file defined them.
    pub fn files(&self) -> &[FileEntry] {
        &self.files
    }

    pub fn devices(&self) -> &[Device] {
        &self.devices
    }

    /// The name of block device `dev` (`vda`), if the capture knows it.
    pub fn device_name(&self, dev: u32) -> Option<&str> {
        self.devices.iter().find(|d| d.dev == dev).map(|d| d.name.as_str())
    }

    /// Number of strings.
    pub fn string_count(&self) -> usize {
        self.strings.len()
    }

    pub(crate) fn add_device(&mut self, d: Device) {
        match self.devices.iter_mut().find(|x| x.dev == d.dev) {
            Some(x) => *x = d,
            None => self.devices.push(d),
        }
    }

    pub(crate) fn add_string(&mut self, id: StrId, bytes: &[u8]) {
        self.strings.insert(id, escape(bytes));
    }

    pub(crate) fn add_proc(&mut self, p: ProcEntry) {
        match self.proc_index.get(&p.id) {
            Some(&i) => self.procs[i] = p,
            None => {
                self.proc_index.insert(p.id, self.procs.len());
                self.procs.push(p);
            }
        }
    }

    pub(crate) fn add_file(&mut self, f: FileEntry) {
        match self.file_index.get(&f.id) {
            Some(&i) => self.files[i] = f,
            None => {
                self.file_index.insert(f.id, self.files.len());
                self.files.push(f);
            }
        }
    }

    /// Merge the entries of one table frame's (decompressed) payload.
    pub(crate) fn apply(&mut self, kind: crate::frame::Kind, data: &[u8]) -> Option<()> {
        use crate::frame::Kind;
        let mut cur = Cursor::new(data);
        let count = cur.varint()?;
        // Every entry takes at least one byte: a count past the bytes left is corrupt.
        if count > cur.remaining() as u64 {
            return None;
        }
        for _ in 0..count {
            match kind {
                Kind::Strings => {
                    let id = u32::try_from(cur.varint()?).ok()?;
                    let bytes = cur.len_bytes()?;
                    self.add_string(id, bytes);
                }
                Kind::Procs => {
                    let p = ProcEntry {
                        id: u32::try_from(cur.varint()?).ok()?,
                        pid: u32::try_from(cur.varint()?).ok()?,
                        ppid: u32::try_from(cur.varint()?).ok()?,
                        name: u32::try_from(cur.varint()?).ok()?,
                        exe: u32::try_from(cur.varint()?).ok()?,
                        cmdline: u32::try_from(cur.varint()?).ok()?,
                        start_ts: cur.varint()?,
                    };
                    self.add_proc(p);
                }
                Kind::Files => {
                    let f = FileEntry {
                        id: u32::try_from(cur.varint()?).ok()?,
                        pid: u32::try_from(cur.varint()?).ok()?,
                        fd: i32::try_from(cur.signed()?).ok()?,
                        kind: FdType::from_code(cur.u8()?),
                        name: u32::try_from(cur.varint()?).ok()?,
                        dev: u32::try_from(cur.varint()?).ok()?,
                        open_ts: cur.varint()?,
                    };
                    self.add_file(f);
                }
                Kind::Devices => {
                    let dev = u32::try_from(cur.varint()?).ok()?;
                    let name = escape(cur.len_bytes()?);
                    self.add_device(Device { dev, name });
                }
                _ => return None,
            }
        }
        cur.is_empty().then_some(())
    }
}

/// Entries waiting to be written as table frames, already encoded.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    pub count: u64,
    pub bytes: Vec<u8>,
}

impl Pending {
    pub fn take_payload(&mut self) -> Option<Vec<u8>> {
        if self.count == 0 {
            return None;
        }
        let mut out = Vec::with_capacity(self.bytes.len() + 10);
        varint::put(&mut out, self.count);
        out.extend_from_slice(&self.bytes);
        self.count = 0;
        self.bytes.clear();
        Some(out)
    }
}

pub(crate) fn encode_string(p: &mut Pending, id: StrId, bytes: &[u8]) {
    p.count += 1;
    varint::put(&mut p.bytes, u64::from(id));
    varint::put(&mut p.bytes, bytes.len() as u64);
    p.bytes.extend_from_slice(bytes);
}

pub(crate) fn encode_proc(p: &mut Pending, e: &ProcEntry) {
    p.count += 1;
    for v in [e.id, e.pid, e.ppid, e.name, e.exe, e.cmdline] {
        varint::put(&mut p.bytes, u64::from(v));
    }
    varint::put(&mut p.bytes, e.start_ts);
}

pub(crate) fn encode_file(p: &mut Pending, e: &FileEntry) {
    p.count += 1;
    varint::put(&mut p.bytes, u64::from(e.id));
    varint::put(&mut p.bytes, u64::from(e.pid));
    varint::put(&mut p.bytes, varint::zigzag(i64::from(e.fd)));
    p.bytes.push(e.kind as u8);
    varint::put(&mut p.bytes, u64::from(e.name));
    varint::put(&mut p.bytes, u64::from(e.dev));
    varint::put(&mut p.bytes, e.open_ts);
}

pub(crate) fn encode_device(p: &mut Pending, d: &Device) {
    p.count += 1;
    varint::put(&mut p.bytes, u64::from(d.dev));
    varint::put(&mut p.bytes, d.name.len() as u64);
    p.bytes.extend_from_slice(d.name.as_bytes());
}
