//! `iocap --version` names the version, the commit and what the recorder was built with.

use crate::util::run;

#[test]
fn version_names_the_commit_and_the_recorder() {
    let (code, out, err) = run(&["--version"]);
    assert_eq!(code, 0, "{err}");
    let line = out.trim();
    assert!(
        line.starts_with(&format!("iocap {} (commit ", env!("CARGO_PKG_VERSION"))),
        "{line}"
    );
    // The commit the binary was built from: this checkout's HEAD, as `cargo test` built it.
    let head = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    let commit = head.unwrap_or_else(|| "unknown".to_owned());
    assert!(line.contains(&format!("(commit {commit}; ")), "{line}");
    if cfg!(all(target_os = "linux", target_arch = "x86_64", feature = "record")) {
        let linkage = if cfg!(feature = "static") { "static" } else { "shared" };
        assert!(line.contains("; recorder: libbpf 1."), "{line}");
        assert!(line.contains(&format!(" {linkage}, zlib 1.")), "{line}");
        assert!(line.ends_with(&format!(" {linkage})")), "{line}");
    } else {
        assert!(line.ends_with("; no recorder)"), "{line}");
    }
    // -V and a subcommand's --version (clap names it `iocap-info`) say the same.
    assert_eq!(run(&["-V"]).1.trim(), line);
    let sub = run(&["info", "--version"]).1;
    assert_eq!(sub.trim().strip_prefix("iocap-info"), line.strip_prefix("iocap"));
}

/// No crate's modules use one another in a cycle: each crate's module graph points one way
/// (the viewer's panes know nothing of the app that holds them and draws them).
#[test]
fn no_crate_has_a_module_cycle() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for src in [
        "crates/iocap",
        "crates/tui/src",
        "crates/format/src",
        "crates/filter/src",
        "crates/analysis/src",
        "crates/record/src",
    ] {
        let cycles = iocap_testkit::module_cycles(&root.join(src));
        assert!(cycles.is_empty(), "{src}: modules in a cycle: {cycles:?}");
    }
}
