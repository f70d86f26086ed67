//! The README, the book and `--help` cannot disagree: the book's command
//! reference, the man pages and the completions are what the binary writes
//! today; every flag has its help; every flag the docs name exists on its
//! verb; every link and include of the book and the top-level documents
//! resolves.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use clap::CommandFactory;
use harness::cli::Cli;
use harness::generate;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

const RENEW: &str = "run scripts/generate-docs";

#[test]
fn the_generated_copies_are_current() {
    let root = root();
    let reference = read(&root.join("book/src/reference/commands.md"));
    assert!(
        reference == generate::reference(),
        "book/src/reference/commands.md is stale: {RENEW}"
    );
    let pages = generate::man_pages().unwrap();
    let kept: BTreeSet<String> = std::fs::read_dir(root.join("docs/man"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    let now: BTreeSet<String> = pages.iter().map(|(n, _)| n.clone()).collect();
    assert_eq!(kept, now, "docs/man has other pages: {RENEW}");
    for (name, page) in pages {
        let kept = std::fs::read(root.join("docs/man").join(&name)).unwrap();
        assert!(kept == page, "docs/man/{name} is stale: {RENEW}");
    }
    for shell in generate::KEPT_SHELLS {
        let path = generate::kept_completion(&root, shell);
        assert!(
            read(&path) == generate::completions(shell),
            "{} is stale: {RENEW}",
            path.display()
        );
    }
}

#[test]
fn every_flag_has_its_help() {
    let mut cmd = Cli::command();
    cmd.build();
    let mut missing = Vec::new();
    for verb in cmd.get_subcommands() {
        for arg in verb.get_arguments() {
            if arg.is_hide_set() || ["help", "version"].contains(&arg.get_id().as_str()) {
                continue;
            }
            let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
            if help.trim().is_empty() {
                missing.push(format!("{} {}", verb.get_name(), arg.get_id()));
            }
        }
    }
    assert!(missing.is_empty(), "flags without help: {missing:?}");
}

/// The Markdown files of the docs: the top-level documents and the
/// book's chapters (not the example runs the book links to).
fn documents() -> Vec<PathBuf> {
    let root = root();
    let mut files: Vec<PathBuf> = ["README.md", "ARCHITECTURE.md", "BENCHMARKS.md"]
        .iter()
        .map(|f| root.join(f))
        .collect();
    let mut dirs = vec![root.join("book/src")];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            let path = e.path();
            // `book/src/docs` is a link to the repository's docs/.
            if e.file_type().unwrap().is_symlink() {
                continue;
            }
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|x| x == "md") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// Every command line the docs show of `slowlab VERB`, with the lines a
/// synopsis continues on, joined.
fn commands(text: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut in_code = false;
    let mut current: Option<(String, String)> = None;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            found.extend(current.take());
            continue;
        }
        if !in_code {
            continue;
        }
        let t = line.trim();
        let start = [
            "slowlab ",
            "target/release/slowlab ",
            "target/debug/slowlab ",
        ]
        .iter()
        .find_map(|p| t.find(p).map(|i| &t[i + p.len()..]));
        match start {
            Some(rest) => {
                found.extend(current.take());
                let verb = rest.split_whitespace().next().unwrap_or_default();
                current = Some((verb.to_string(), rest.to_string()));
            }
            // A synopsis goes on on indented lines, a shell line after `\`.
            None if (line.starts_with(' ') || line.starts_with('\t')) && current.is_some() => {
                if let Some((_, words)) = &mut current {
                    words.push(' ');
                    words.push_str(t);
                }
            }
            None => found.extend(current.take()),
        }
    }
    found.extend(current);
    found
}

#[test]
fn every_flag_the_docs_name_exists_on_its_verb() {
    let mut cmd = Cli::command();
    cmd.build();
    let mut wrong = Vec::new();
    let mut seen = 0;
    for file in documents() {
        // The command reference is `--help` itself.
        if file.ends_with("reference/commands.md") {
            continue;
        }
        for (verb, words) in commands(&read(&file)) {
            let Some(sub) = cmd.find_subcommand(&verb) else {
                continue;
            };
            seen += 1;
            let mut longs: BTreeSet<String> = sub
                .get_arguments()
                .filter_map(|a| a.get_long().map(String::from))
                .collect();
            if let Some(what) = sub.get_subcommands().next() {
                // `generate man --out`: the flags of its subcommands.
                for s in sub.get_subcommands().chain(std::iter::once(what)) {
                    longs.extend(
                        s.get_arguments()
                            .filter_map(|a| a.get_long().map(String::from)),
                    );
                }
            }
            longs.extend(["help".to_string(), "version".to_string()]);
            for w in words.split(|c: char| c.is_whitespace() || "[]|()'\"`,".contains(c)) {
                let Some(flag) = w.strip_prefix("--") else {
                    continue;
                };
                let flag: String = flag
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
                    .collect();
                if flag.starts_with(|c: char| c.is_ascii_lowercase()) && !longs.contains(&flag) {
                    wrong.push(format!(
                        "{}: `slowlab {verb}` has no --{flag}",
                        file.strip_prefix(root()).unwrap_or(&file).display()
                    ));
                }
            }
        }
    }
    assert!(seen >= 15, "only {seen} commands found in the docs");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// mdBook's heading ids: lower case, spaces to `-`, other punctuation out.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn anchors(text: &str) -> BTreeSet<String> {
    let mut in_code = false;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        } else if !in_code && line.starts_with('#') {
            out.insert(slug(line.trim_start_matches('#')));
        }
    }
    out
}

/// The targets of `[text](target)` and `![alt](target)` outside code.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        let mut rest = line;
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    out
}

#[test]
fn every_link_and_include_of_the_docs_resolves() {
    let root = root();
    let summary = read(&root.join("book/src/SUMMARY.md"));
    let chapters: BTreeSet<PathBuf> = links(&summary)
        .iter()
        .map(|l| root.join("book/src").join(l))
        .collect();
    let mut broken = Vec::new();
    for file in documents() {
        let text = read(&file);
        let dir = file.parent().unwrap();
        let name = file
            .strip_prefix(&root)
            .unwrap_or(&file)
            .display()
            .to_string();
        if file.starts_with(root.join("book/src"))
            && !file.ends_with("SUMMARY.md")
            && !chapters.contains(&file)
        {
            broken.push(format!("{name}: not in SUMMARY.md"));
        }
        for link in links(&text) {
            if link.starts_with("http://")
                || link.starts_with("https://")
                || link.starts_with("mailto:")
            {
                continue;
            }
            let (path, frag) = link.split_once('#').unwrap_or((&link, ""));
            let target = if path.is_empty() {
                file.clone()
            } else {
                dir.join(path)
            };
            if !target.exists() {
                broken.push(format!("{name}: {link} does not exist"));
                continue;
            }
            if !frag.is_empty()
                && target.extension().is_some_and(|x| x == "md")
                && !anchors(&read(&target)).contains(frag)
            {
                broken.push(format!("{name}: {link}: no heading #{frag}"));
            }
        }
        // mdBook's `{{#include path:anchor}}`.
        for inc in text.split("{{#include ").skip(1) {
            let spec = inc.split("}}").next().unwrap_or_default().trim();
            let (path, anchor) = spec.split_once(':').unwrap_or((spec, ""));
            let target = dir.join(path);
            match std::fs::read_to_string(&target) {
                Err(_) => broken.push(format!("{name}: include {path} does not exist")),
                Ok(t) if !anchor.is_empty() && !t.contains(&format!("ANCHOR: {anchor} ")) => {
                    broken.push(format!("{name}: include {path} has no anchor {anchor}"))
                }
                Ok(_) => {}
            }
        }
    }
    for c in &chapters {
        if !c.exists() {
            broken.push(format!("SUMMARY.md: {} does not exist", c.display()));
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}
