//! Tells `iocap --version` the commit it was built from: `IOCAP_COMMIT`, the short hash of
//! `git rev-parse HEAD`, or "unknown" outside a git checkout (a source tarball, a registry).

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    let s = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !s.trim().is_empty()).then(|| s.trim().to_owned())
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=IOCAP_COMMIT={commit}");
    // Run again when HEAD moves: HEAD itself (a checkout), the branch it names (a commit) and
    // packed-refs (a gc). Only files that exist: cargo reruns a script on every build while one
    // it watches is missing. (A worktree's HEAD and its branches live in different directories.)
    let mut watch = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watch.push(branch);
    }
    for name in watch {
        if let Some(path) = git(&["rev-parse", "--path-format=absolute", "--git-path", &name]) {
            if Path::new(&path).exists() {
                println!("cargo:rerun-if-changed={path}");
            }
        }
    }
    println!("cargo:rerun-if-changed=crates/iocap/build.rs");
}
