//! The `slowlab` command: one subcommand per verb.
//!
//! `serve`, `proxy` and `load` belong to their crates; this module only
//! dispatches to them, so each crate owns its own command-line contract.
//! `lab::child::Child` goes the other way: the command line of a verb the
//! harness starts, written from the same clap structs the child parses;
//! the test below parses it back with this command.

use clap::{Parser, Subcommand};

/// slowlab: a lab for slow-client backpressure.
#[derive(Debug, Parser)]
#[command(
    name = "slowlab",
    version,
    propagate_version = true,
    about = "slowlab: a lab for slow-client backpressure",
    long_about = None
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve the Rust replica of the experiment's app.
    Serve(server::ServeArgs),
    /// Run the pingora reverse proxy with NGINX-like buffering.
    Proxy(proxy::ProxyArgs),
    /// Run slow readers and the open-loop /fast client against a target.
    #[command(after_help = LOAD_EXAMPLES)]
    Load(loadgen::LoadArgs),
    /// Install or find Gunicorn 23.0.0 and NGINX 1.22 for the real conditions.
    Prepare(crate::prepare::PrepareArgs),
    /// Run the experiment's condition matrix, capped and sampled.
    #[command(after_help = REPRODUCE_EXAMPLES)]
    Reproduce(crate::reproduce::ReproduceArgs),
    /// Write the HTML and Markdown report of a results directory.
    Report(report::ReportArgs),
    /// Merge results directories (shards of one matrix, other machines) into one.
    Merge(crate::merge::MergeArgs),
    /// Step the request rate to saturation against one stack.
    Sweep(crate::sweep::SweepArgs),
    /// The load generator of one rate sweep (run by `slowlab sweep`).
    #[command(hide = true)]
    SweepLoad(loadgen::sweep::SweepLoadArgs),
    /// Check how many slow downloads your server survives, direct and behind a proxy.
    #[command(after_help = CHECK_EXAMPLES)]
    Check(Box<crate::check::CheckArgs>),
    /// Write the man pages, a shell's completions or the book's command reference.
    Generate(crate::generate::GenerateArgs),
}

const LOAD_EXAMPLES: &str = "\
Examples:
  # The experiment's load: 2 slow readers of /large at 2 MiB/s, /fast 8 per second for 9 s
  slowlab load --target http://127.0.0.1:8000 --out results/load
  # 200 slow uploaders of 16 MiB at 64 KiB/s, the run ending with its last /fast call
  slowlab load --target http://127.0.0.1:8000 --slow 0 --slow-upload 200 --upload-rate 64KiB --end-with-fast";

const REPRODUCE_EXAMPLES: &str = "\
Examples:
  # The published experiment on real Gunicorn and NGINX (about 15 minutes)
  slowlab reproduce
  # A few minutes: the quick preset, then its report
  slowlab reproduce --preset quick --out results/quick && slowlab report results/quick
  # Half of a matrix on this machine, the other half elsewhere, merged
  slowlab reproduce --shard 1/2 --out a && slowlab merge both a b";

const CHECK_EXAMPLES: &str = "\
Examples:
  # Your app under Gunicorn, started by slowlab, direct and behind NGINX with buffering on
  slowlab check --server-cmd 'gunicorn -w 3 -b {host}:{port} app:app' --large-path /export --through nginx-on
  # A server already running; gate the exit status on the proxied route only
  slowlab check --target http://127.0.0.1:8000 --large-path /export --through nginx-on --gate nginx-on
  # Slow uploads instead of slow downloads
  slowlab check --server gunicorn-sync2 --direction upload --max-slow 16";

/// Runs the chosen verb.
pub fn dispatch(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve(args) => server::run(args),
        Command::Proxy(args) => proxy::run(args),
        Command::Load(args) => loadgen::run(args),
        Command::Prepare(args) => crate::prepare::run(args),
        Command::Reproduce(args) => crate::reproduce::run(args),
        Command::Report(args) => report::run(args),
        Command::Merge(args) => crate::merge::run(args),
        Command::Sweep(args) => crate::sweep::run(args),
        Command::SweepLoad(args) => loadgen::sweep::run(args),
        Command::Check(args) => crate::check::run(*args),
        Command::Generate(args) => crate::generate::run(args),
    }
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use lab::child::Child;

    use super::*;

    fn parse(argv: &[&str]) -> Command {
        Cli::try_parse_from(std::iter::once("slowlab").chain(argv.iter().copied()))
            .expect("parses")
            .command
    }

    /// What the `slowlab` command line makes of a child's argv.
    fn reparse(child: &Child) -> Child {
        let argv = std::iter::once(OsString::from("slowlab")).chain(child.argv());
        match Cli::try_parse_from(argv).expect("argv parses").command {
            Command::Serve(a) => Child::Serve(a),
            Command::Proxy(a) => Child::Proxy(a),
            Command::Load(a) => Child::Load(a),
            Command::SweepLoad(a) => Child::SweepLoad(a),
            other => panic!("a child verb parsed as {other:?}"),
        }
    }

    #[test]
    fn every_child_verb_round_trips_through_the_slowlab_command_line() {
        let Command::Serve(serve) = parse(&["serve", "--model", "async"]) else {
            unreachable!()
        };
        let Command::Proxy(proxy) = parse(&[
            "proxy",
            "--upstream",
            "127.0.0.1:9",
            "--buffering",
            "on",
            "--temp-path",
            "/tmp",
        ]) else {
            unreachable!()
        };
        let Command::Load(load) = parse(&[
            "load",
            "--target",
            "http://127.0.0.1:9",
            "--label",
            "run_id=001",
            "--realtime",
        ]) else {
            unreachable!()
        };
        let Command::SweepLoad(sweep) = parse(&[
            "sweep-load",
            "--target",
            "http://127.0.0.1:9",
            "--rates",
            "50,100",
            "--out",
            "/tmp/x",
        ]) else {
            unreachable!()
        };
        for child in [
            Child::Serve(serve),
            Child::Proxy(proxy),
            Child::Load(load),
            Child::SweepLoad(sweep),
        ] {
            assert_eq!(reparse(&child), child);
        }
    }
}

#[cfg(test)]
mod help_tests {
    use std::collections::BTreeMap;

    use clap::CommandFactory;

    use super::Cli;

    /// The range a flag's help states: `A to B` in parentheses, such as
    /// "(0 to 1GiB)" or "(its window; 100ms to 1day)".
    fn range(help: &str) -> Option<String> {
        help.split('(')
            .skip(1)
            .filter_map(|g| g.split(')').next())
            .flat_map(|g| g.split(';'))
            .find_map(|piece| {
                let words: Vec<&str> = piece.split_whitespace().collect();
                let at = words.iter().position(|w| *w == "to")?;
                let start = words[..at]
                    .iter()
                    .rposition(|w| w.starts_with(|c: char| c.is_ascii_digit()))?;
                Some(words[start..=at + 1].join(" "))
            })
    }

    /// Every flag that two verbs share states one range in both: a flag
    /// is one definition, whichever verb takes it.
    #[test]
    fn a_flag_has_one_range_in_every_verb() {
        let cli = Cli::command();
        let mut seen: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
        for verb in cli.get_subcommands() {
            for arg in verb.get_arguments() {
                let (Some(long), Some(help)) = (arg.get_long(), arg.get_help()) else {
                    continue;
                };
                if let Some(r) = range(&help.to_string()) {
                    seen.entry(long.to_string())
                        .or_default()
                        .entry(r)
                        .or_default()
                        .push(verb.get_name().to_string());
                }
            }
        }
        let differ: Vec<String> = seen
            .iter()
            .filter(|(_, ranges)| ranges.len() > 1)
            .map(|(flag, ranges)| format!("--{flag}: {ranges:?}"))
            .collect();
        assert!(differ.is_empty(), "{}", differ.join("\n"));
    }

    /// Words of a shell command line: spaces split, single quotes group.
    fn words(line: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut cur = String::new();
        let mut quoted = false;
        for c in line.chars() {
            match c {
                '\'' => quoted = !quoted,
                ' ' if !quoted => {
                    if !cur.is_empty() {
                        out.push(std::mem::take(&mut cur));
                    }
                }
                c => cur.push(c),
            }
        }
        if !cur.is_empty() {
            out.push(cur);
        }
        out
    }

    /// Every example in the help is a command line slowlab takes.
    #[test]
    fn the_examples_parse() {
        use clap::Parser;
        let mut n = 0;
        for text in [
            super::LOAD_EXAMPLES,
            super::REPRODUCE_EXAMPLES,
            super::CHECK_EXAMPLES,
        ] {
            for line in text
                .lines()
                .map(str::trim)
                .filter(|l| l.starts_with("slowlab "))
            {
                for cmd in line.split("&&") {
                    let argv = words(cmd.trim());
                    if let Err(e) = Cli::try_parse_from(&argv) {
                        panic!("`{cmd}`: {e}");
                    }
                    n += 1;
                }
            }
        }
        assert!(n >= 8, "{n} examples");
    }

    /// Help speaks to users: no issue numbers, no code names in brackets;
    /// the internal verb is hidden; every verb knows the version.
    #[test]
    fn help_names_no_internals() {
        let mut cli = Cli::command();
        cli.build();
        for verb in cli.get_subcommands_mut() {
            let name = verb.get_name().to_string();
            if name == "help" {
                continue;
            }
            let help = verb.render_long_help().to_string();
            assert!(!help.contains("[`"), "{name}: {help}");
            let issue = help
                .match_indices("issue ")
                .any(|(i, m)| help[i + m.len()..].starts_with(|c: char| c.is_ascii_digit()));
            assert!(!issue, "{name} names an issue: {help}");
            assert!(verb.get_version().is_some(), "{name} --version");
            if name == "sweep-load" {
                assert!(verb.is_hide_set());
            }
            if ["check", "load", "reproduce"].contains(&name.as_str()) {
                assert!(help.contains("Examples:"), "{name}");
            }
        }
        let reproduce = cli
            .find_subcommand_mut("reproduce")
            .unwrap()
            .render_long_help()
            .to_string();
        for size in catalogue::preset::BUFFER_GRID {
            let s = common::units::Size(size).to_string();
            assert!(reproduce.contains(&s), "the buffers preset's grid: {s}");
        }
        let link = common::units::Size(catalogue::preset::LINK_RATE).to_string();
        assert!(
            reproduce.contains(&format!("({link}/s)")),
            "the link preset's rate {link}"
        );
        assert!(reproduce.contains("MTU 65535") && catalogue::preset::BUFFERS_MTU == 65535);
    }
}
