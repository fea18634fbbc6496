//! Compiles bpf/iocap.bpf.c into a libbpf skeleton (Linux only: the viewer builds without clang).
//! `CLANG` and `BPF_CFLAGS` override the compiler and add flags.

fn main() {
    #[cfg(target_os = "linux")]
    skeleton();
}

#[cfg(target_os = "linux")]
fn skeleton() {
    use std::path::PathBuf;

    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../bpf");
    let src = root.join("iocap.bpf.c");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("iocap.skel.rs");
    let arch = match std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() {
        Ok("x86_64") => "x86",
        Ok("aarch64") => "arm64",
        Ok(other) => panic!("iocap-record: no BPF target for architecture {other}"),
        Err(_) => "x86",
    };
    let mut args = vec![format!("-D__TARGET_ARCH_{arch}"), format!("-I{}", root.display())];
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
