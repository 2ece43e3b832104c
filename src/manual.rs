//! `llmprobe completions SHELL` and `llmprobe man`: shell completion scripts
//! (clap_complete) and roff man pages (clap_mangen), both generated from the `cli`
//! declarations so they never drift from the flags.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use clap::CommandFactory;

use crate::cli::{Cli, Shell};

/// Writes the completion script for `shell`.
pub fn completions(shell: Shell, out: &mut dyn Write) {
    use clap_complete::Shell as S;
    let shell = match shell {
        Shell::Bash => S::Bash,
        Shell::Zsh => S::Zsh,
        Shell::Fish => S::Fish,
        Shell::Powershell => S::PowerShell,
    };
    clap_complete::generate(shell, &mut Cli::command(), "llmprobe", out);
}

/// Writes the top-level man page, `llmprobe.1`.
pub fn man_page(out: &mut dyn Write) -> anyhow::Result<()> {
    clap_mangen::Man::new(Cli::command())
        .render(out)
        .context("writing the man page")
}

/// Writes `llmprobe.1` and `llmprobe-COMMAND.1` (nested commands too) into `dir`;
/// returns the file names written.
pub fn man_pages(dir: &Path) -> anyhow::Result<Vec<String>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut cmd = Cli::command();
    cmd.build();
    let mut written = Vec::new();
    write_tree(&cmd, "llmprobe", dir, &mut written)?;
    Ok(written)
}

fn write_tree(
    cmd: &clap::Command,
    name: &str,
    dir: &Path,
    written: &mut Vec<String>,
) -> anyhow::Result<()> {
    let file = format!("{name}.1");
    let path = dir.join(&file);
    let mut buf = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .title(name)
        .render(&mut buf)
        .context("rendering a man page")?;
    std::fs::write(&path, buf).with_context(|| format!("writing {}", path.display()))?;
    written.push(file);
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        write_tree(sub, &format!("{name}-{}", sub.get_name()), dir, written)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shell_gets_a_script_naming_the_commands() {
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish, Shell::Powershell] {
            let mut out = Vec::new();
            completions(shell, &mut out);
            let text = String::from_utf8(out).unwrap();
            assert!(
                text.contains("daemon") && text.contains("web.config.file"),
                "{shell:?}"
            );
        }
    }

    #[test]
    fn man_pages_cover_every_command() {
        let dir = tempfile::tempdir().unwrap();
        let files = man_pages(dir.path()).unwrap();
        for want in [
            "llmprobe.1",
            "llmprobe-daemon.1",
            "llmprobe-bench.1",
            "llmprobe-report-merge.1",
        ] {
            assert!(files.iter().any(|f| f == want), "{want} in {files:?}");
        }
        let daemon = std::fs::read_to_string(dir.path().join("llmprobe-daemon.1")).unwrap();
        assert!(daemon.starts_with(".ie") || daemon.contains(".TH"), "roff");
        assert!(daemon.contains("web.enable\\-lifecycle"), "{daemon}");
        let mut top = Vec::new();
        man_page(&mut top).unwrap();
        assert!(String::from_utf8(top).unwrap().contains(".TH llmprobe 1"));
    }
}
