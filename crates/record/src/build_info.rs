//! What the recorder was built with, for `iocap --version`.

use std::ffi::CStr;

/// One line naming the libraries the recorder uses and how each is linked: libbpf (always
/// linked in, its version from libbpf itself), libelf and zlib (linked in with the `static`
/// feature, shared libraries otherwise; their versions are those pkg-config found at build time).
pub fn built_with() -> String {
    // SAFETY: libbpf_version_string returns a pointer to a static, NUL-terminated string.
    let libbpf = unsafe { CStr::from_ptr(libbpf_rs::libbpf_sys::libbpf_version_string()) };
    let libbpf = libbpf.to_string_lossy();
    let linkage = if cfg!(feature = "static") { "static" } else { "shared" };
    format!(
        "libbpf {} static, libelf {} {linkage}, zlib {} {linkage}",
        libbpf.trim_start_matches('v'),
        env!("IOCAP_LIBELF_VERSION"),
        env!("IOCAP_ZLIB_VERSION"),
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_each_library_and_its_linkage() {
        let s = super::built_with();
        let linkage = if cfg!(feature = "static") { "static" } else { "shared" };
        assert!(s.starts_with("libbpf 1."), "{s}");
        assert!(s.contains("zlib 1.") && s.ends_with(&format!(" {linkage}")), "{s}");
        assert!(s.contains("libelf 0."), "{s}");
    }
}
