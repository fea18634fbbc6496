//! What a package installs beside the binary: the shell completions and man pages `iocap`
//! generates from its command line name every subcommand `--help` lists.

use crate::util::{iocap, run};

/// The subcommands `iocap --help` lists, in its order.
fn subcommands() -> Vec<String> {
    let (code, out, err) = run(&["--help"]);
    assert_eq!(code, 0, "{err}");
    let list: Vec<String> = out
        .lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect();
    for expected in ["record", "info", "view", "export", "help"] {
        assert!(list.iter().any(|s| s == expected), "{expected} in {list:?}");
    }
    list
}

fn output(args: &[&str]) -> String {
    let (code, out, err) = run(args);
    assert_eq!(code, 0, "iocap {args:?}: {err}");
    assert!(err.is_empty(), "iocap {args:?}: {err}");
    out
}

#[test]
fn completions_offer_every_subcommand() {
    let subs = subcommands();
    // What each shell's script says to offer a subcommand.
    let offers = |shell: &str, s: &str| match shell {
        "bash" => format!("iocap,{s})"),
        "zsh" => format!("\n'{s}:"),
        _ => format!("__fish_iocap_needs_command\" -f -a \"{s}\""),
    };
    for shell in ["bash", "zsh", "fish"] {
        let script = output(&["completions", shell]);
        for s in &subs {
            assert!(script.contains(&offers(shell, s)), "{shell} completion lacks {s}");
        }
    }
    let (code, _, err) = run(&["completions", "tcsh"]);
    assert_eq!(code, 2, "an unknown shell is a usage error: {err}");
}

#[test]
fn the_man_pages_name_every_subcommand() {
    let subs = subcommands();
    let page = output(&["man"]);
    assert!(page.contains(".TH iocap 1"), "{page}");
    for s in &subs {
        assert!(page.contains(&format!("\niocap\\-{s}(1)\n")), "iocap.1 lacks {s}");
    }
    let dir = tempfile::tempdir().unwrap();
    output(&["man", "--dir", dir.path().to_str().unwrap()]);
    let mut pages: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    pages.sort();
    let mut expected: Vec<String> = subs.iter().map(|s| format!("iocap-{s}.1")).collect();
    expected.push("iocap.1".into());
    expected.sort();
    assert_eq!(pages, expected);
    let record = std::fs::read_to_string(dir.path().join("iocap-record.1")).unwrap();
    assert!(record.contains(".TH iocap-record 1"), "{record}");
    // The page is the subcommand's own: its options.
    if cfg!(all(target_os = "linux", target_arch = "x86_64", feature = "record")) {
        assert!(record.contains("\\-\\-no\\-block"), "{record}");
    }
}

#[test]
fn the_packaging_subcommands_stay_out_of_help() {
    let subs = subcommands();
    assert!(!subs.iter().any(|s| s == "completions" || s == "man"), "{subs:?}");
    // But `iocap completions` and `iocap man` are found, and say what they take.
    let out = iocap().args(["completions", "--help"]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("bash"));
}

/// `iocap man --dir DIR` writes each page as a new file through the one safe output path: a
/// symlink planted at a page's name (to a file root must not overwrite), a FIFO there (which
/// would block an open for ever) and `/dev` as the directory are refused, before any page is
/// written, and what they point at is left untouched.
#[test]
fn man_pages_never_go_through_a_symlink_a_fifo_or_into_dev() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious\n").unwrap();
    let page = dir.path().join("pages");
    std::fs::create_dir(&page).unwrap();
    let target = page.join("iocap-record.1");
    std::os::unix::fs::symlink(&victim, &target).unwrap();
    let (code, _, err) = crate::util::run(&["man", "--dir", page.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("iocap-record.1 is a symbolic link: refusing to write through it"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    assert_eq!(
        std::fs::read_dir(&page).unwrap().count(),
        1,
        "no page written beside it"
    );

    std::fs::remove_file(&target).unwrap();
    crate::util::mkfifo(&page.join("iocap-view.1"));
    let (code, _, err) = crate::util::run(&["man", "--dir", page.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("iocap-view.1 is a FIFO"), "{err}");

    let (code, _, err) = crate::util::run(&["man", "--dir", "/dev"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("refusing to create a regular file under /dev"), "{err}");
    let after: Vec<_> = std::fs::read_dir("/dev")
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.file_name()))
        .collect();
    assert!(
        !after.iter().any(|n| n.to_string_lossy().starts_with("iocap")),
        "nothing written into /dev: {after:?}"
    );

    // With the FIFO gone, every page is a new regular file, readable by everyone.
    std::fs::remove_file(page.join("iocap-view.1")).unwrap();
    let (code, _, err) = crate::util::run(&["man", "--dir", page.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let m = std::fs::symlink_metadata(&target).unwrap();
    assert!(m.file_type().is_file(), "{m:?}");
    assert_eq!(std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o777, 0o644);
}
