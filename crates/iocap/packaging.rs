//! What a package installs beside the binary, generated from the command line's own
//! definitions so it never drifts from them: shell completions (`iocap completions bash`) and
//! man pages (`iocap man`, `iocap man --dir DIR`). Both subcommands are hidden from `--help`;
//! README's *Install* says how to use them.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;

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
        Some(dir) => {
            clap_mangen::generate_to(cmd, &dir).with_context(|| format!("writing man pages into {}", dir.display()))
        }
        None => {
            let mut out = Vec::new();
            clap_mangen::Man::new(cmd).render(&mut out)?;
            std::io::stdout().lock().write_all(&out)?;
            Ok(())
        }
    }
}
