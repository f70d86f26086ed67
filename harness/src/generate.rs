//! `slowlab generate`: what is written from the command line's own
//! definitions, so that it cannot disagree with `--help`: man pages
//! (`clap_mangen`), shell completions (`clap_complete`), and the book's
//! command reference (Markdown).
//!
//! The repository keeps one copy of each (`docs/man/`, `docs/completions/`,
//! `book/src/reference/commands.md`); a test fails when a copy is not what
//! this verb writes today, and says the command that renews it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::Cli;

/// `slowlab generate` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct GenerateArgs {
    #[command(subcommand)]
    pub what: What,
}

/// What to generate.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum What {
    /// Man pages, one per verb (slowlab.1, slowlab-check.1, ...), into a
    /// directory: `slowlab generate man --out /usr/local/share/man/man1`.
    Man {
        /// Directory the pages are written to (created if missing).
        #[arg(long)]
        out: PathBuf,
    },
    /// The completion script of a shell, on stdout: `slowlab generate
    /// completions --shell bash > /etc/bash_completion.d/slowlab`.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        #[arg(long, value_enum)]
        shell: Shell,
    },
    /// The book's command reference (Markdown), on stdout.
    Reference,
}

/// Runs `slowlab generate`.
pub fn run(args: GenerateArgs) -> Result<()> {
    match args.what {
        What::Man { out } => {
            for (name, page) in man_pages()? {
                std::fs::create_dir_all(&out)
                    .with_context(|| format!("creating {}", out.display()))?;
                let path = out.join(name);
                std::fs::write(&path, page)
                    .with_context(|| format!("writing {}", path.display()))?;
            }
            Ok(())
        }
        What::Completions { shell } => {
            print!("{}", completions(shell));
            Ok(())
        }
        What::Reference => {
            print!("{}", reference());
            Ok(())
        }
    }
}

/// Every visible verb of the command, in the order `--help` lists them.
fn verbs(cmd: &clap::Command) -> impl Iterator<Item = &clap::Command> {
    cmd.get_subcommands()
        .filter(|c| !c.is_hide_set() && c.get_name() != "help")
}

/// The man pages: `slowlab.1` and one per visible verb, by file name.
pub fn man_pages() -> Result<Vec<(String, Vec<u8>)>> {
    let mut cmd = Cli::command();
    cmd.build();
    let mut pages = Vec::new();
    let mut top = Vec::new();
    clap_mangen::Man::new(cmd.clone()).render(&mut top)?;
    pages.push(("slowlab.1".to_string(), top));
    for verb in verbs(&cmd) {
        let name = format!("slowlab-{}", verb.get_name());
        let mut page = Vec::new();
        clap_mangen::Man::new(verb.clone().name(name.clone())).render(&mut page)?;
        pages.push((format!("{name}.1"), page));
    }
    Ok(pages)
}

/// The completion script for `shell`.
pub fn completions(shell: Shell) -> String {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "slowlab", &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// The book's command reference: each verb's whole `--help`.
pub fn reference() -> String {
    let mut cmd = Cli::command().term_width(100);
    cmd.build();
    let mut s = String::from(
        "# Commands\n\n\
         <!-- Written by `slowlab generate reference`; a test fails when it is not current. -->\n\n\
         Every verb's `--help`, as the binary prints it. The exit statuses are in\n\
         [Exit status](exit-status.md); the files the verbs write in\n\
         [Results files](results-files.md).\n\n",
    );
    let top = cmd.render_long_help().to_string();
    let _ = write!(s, "## slowlab\n\n```text\n{}\n```\n\n", top.trim_end());
    for verb in verbs(&cmd) {
        let help = verb.clone().render_long_help().to_string();
        let _ = write!(
            s,
            "## slowlab {}\n\n```text\n{}\n```\n\n",
            verb.get_name(),
            help.trim_end()
        );
    }
    s
}

/// The shells whose scripts the repository keeps.
pub const KEPT_SHELLS: [Shell; 3] = [Shell::Bash, Shell::Zsh, Shell::Fish];

/// Where the repository keeps the completion script of `shell`.
pub fn kept_completion(root: &Path, shell: Shell) -> PathBuf {
    let name = match shell {
        Shell::Bash => "slowlab.bash".to_string(),
        Shell::Zsh => "_slowlab".to_string(),
        Shell::Fish => "slowlab.fish".to_string(),
        other => format!("slowlab.{other}"),
    };
    root.join("docs/completions").join(name)
}
