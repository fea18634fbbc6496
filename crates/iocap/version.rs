//! `iocap --version`: the version, the commit it was built from (`build.rs`) and what the
//! recorder was built with, so a bug report says which binary it came from.

use std::sync::OnceLock;

/// One line, without the leading `iocap `: `0.1.0 (commit 2678ed81e0a5; recorder: libbpf 1.7
/// static, libelf 0.188 static, zlib 1.2.13 static)`, or `no recorder` in a build without it.
pub(crate) fn text() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| {
        format!(
            "{} (commit {}; {})",
            env!("CARGO_PKG_VERSION"),
            env!("IOCAP_COMMIT"),
            recorder()
        )
    })
}

#[cfg(all(target_os = "linux", target_arch = "x86_64", feature = "record"))]
fn recorder() -> String {
    format!("recorder: {}", iocap_record::built_with())
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64", feature = "record")))]
fn recorder() -> String {
    "no recorder".to_owned()
}
