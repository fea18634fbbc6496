//! Compiles bpf/iocap.bpf.c into a libbpf skeleton (Linux on x86_64 only: the viewer builds
//! without clang, anywhere).
//! `CLANG` and `BPF_CFLAGS` override the compiler and add flags.
//! Also tells `iocap --version` which libelf and zlib the recorder was built against.

fn main() {
    #[cfg(target_os = "linux")]
    skeleton();
}

#[cfg(target_os = "linux")]
fn skeleton() {
    // Build scripts run on the host: the target decides, below.
    use std::path::PathBuf;

    // The BPF sources live at the top of the repository (`bpf/`), as the design card lays it out.
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../bpf");
    let src = root.join("iocap.bpf.c");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("iocap.skel.rs");
    // The programs read syscall arguments from x86_64 registers, switch on x86_64 syscall
    // numbers and include one x86_64 vmlinux.h: another architecture would build and then
    // record nonsense. The root package depends on this crate only on x86_64.
    // Elsewhere the crate is empty (lib.rs is cfg'd the same way) and `iocap record` says why.
    let target = (
        std::env::var("CARGO_CFG_TARGET_OS"),
        std::env::var("CARGO_CFG_TARGET_ARCH"),
    );
    match target {
        (Ok(os), Ok(arch)) if os == "linux" && arch == "x86_64" => {}
        (Ok(os), Ok(arch)) => {
            println!(
                "cargo:warning=iocap-record records on Linux x86_64 only (its BPF programs use \
                 x86_64 syscall numbers and registers): this {os}/{arch} build has no recorder"
            );
            return;
        }
        _ => {}
    }
    library_versions();
    let mut args = vec!["-D__TARGET_ARCH_x86".to_owned(), format!("-I{}", root.display())];
    if let Ok(extra) = std::env::var("BPF_CFLAGS") {
        args.extend(extra.split_whitespace().map(str::to_owned));
    }
    let mut b = libbpf_cargo::SkeletonBuilder::new();
    b.source(&src).clang_args(args);
    if let Some(clang) = std::env::var_os("CLANG") {
        b.clang(clang);
    }
    b.build_and_generate(&out)
        .expect("building bpf/iocap.bpf.c (needs clang and libelf headers)");
    for f in ["iocap.bpf.c", "iocap.h", "vmlinux.h"] {
        println!("cargo:rerun-if-changed={}", root.join(f).display());
    }
    println!("cargo:rerun-if-env-changed=CLANG");
    println!("cargo:rerun-if-env-changed=BPF_CFLAGS");
}

/// The versions of libelf and zlib that pkg-config finds, as `IOCAP_LIBELF_VERSION` and
/// `IOCAP_ZLIB_VERSION` ("unknown" without pkg-config): what `--static` links in, and what a
/// shared build was built against.
#[cfg(target_os = "linux")]
fn library_versions() {
    for (lib, var) in [("libelf", "IOCAP_LIBELF_VERSION"), ("zlib", "IOCAP_ZLIB_VERSION")] {
        let version = std::process::Command::new(std::env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".into()))
            .args(["--modversion", lib])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty() && !v.contains(char::is_whitespace))
            .unwrap_or_else(|| "unknown".to_owned());
        println!("cargo:rustc-env={var}={version}");
    }
    for var in ["PKG_CONFIG", "PKG_CONFIG_PATH", "PKG_CONFIG_LIBDIR"] {
        println!("cargo:rerun-if-env-changed={var}");
    }
}
