//! What a package installs beside the binary, generated from the command line's own
//! definitions so it never drifts from them: shell completions (`iocap completions bash`) and
//! man pages (`iocap man`, `iocap man --dir DIR`). Both subcommands are hidden from `--help`;
//! README's *Install* says how to use them.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::output;

#[derive(clap::Args, Debug)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

#[derive(clap::Args, Debug)]
pub struct ManArgs {
    /// Write `iocap.1` and a page per subcommand (`iocap-record.1`, ...) into this directory
    /// instead of `iocap.1` on standard output.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// Print the completion script for `args.shell` of `cmd` (the whole command line).
pub fn completions(args: CompletionsArgs, mut cmd: clap::Command) -> anyhow::Result<()> {
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "iocap", &mut out);
    std::io::stdout().lock().write_all(&out)?;
    Ok(())
}

/// Print the man page of `cmd`, or write every page into `args.dir`.
pub fn man(args: ManArgs, cmd: clap::Command) -> anyhow::Result<()> {
    match args.dir {
        Some(dir) => write_pages(&dir, pages(cmd)?),
        None => {
            let mut out = Vec::new();
            clap_mangen::Man::new(cmd).render(&mut out)?;
            std::io::stdout().lock().write_all(&out)?;
            Ok(())
        }
    }
}

/// Every man page of `cmd` and its visible subcommands, as `(file name, roff)`: what
/// `clap_mangen::generate_to` writes, rendered in memory so that each is written through the
/// one safe output path.
fn pages(cmd: clap::Command) -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    fn add(cmd: clap::Command, out: &mut Vec<(String, Vec<u8>)>) -> anyhow::Result<()> {
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned() {
            add(sub, out)?;
        }
        let man = clap_mangen::Man::new(cmd);
        let mut roff = Vec::new();
        man.render(&mut roff)?;
        out.push((man.get_filename(), roff));
        Ok(())
    }
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    let mut out = Vec::new();
    add(cmd, &mut out)?;
    Ok(out)
}

/// Write `pages` into `dir`, each a new file (0644, as man pages are read by everyone) put in
/// place by a rename: never through a symlink, never into a device or FIFO, never under /dev.
/// Every target is checked before any is written, so a refused one leaves the others as they
/// were.
fn write_pages(dir: &Path, pages: Vec<(String, Vec<u8>)>) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;

    let meta = std::fs::metadata(dir).with_context(|| format!("writing man pages into {}", dir.display()))?;
    if !meta.is_dir() {
        anyhow::bail!("writing man pages into {}: not a directory", dir.display());
    }
    let targets: Vec<PathBuf> = pages.iter().map(|(name, _)| dir.join(name)).collect();
    for t in &targets {
        output::check_new_file_target(t, "a man page")?;
    }
    for (path, (_, roff)) in targets.iter().zip(pages) {
        let (mut file, mut new) = output::create(path)?;
        file.write_all(&roff)
            .and_then(|()| file.set_permissions(std::fs::Permissions::from_mode(0o644)))
            .and_then(|()| file.sync_all())
            .with_context(|| format!("{}", path.display()))?;
        new.publish()?;
    }
    Ok(())
}
