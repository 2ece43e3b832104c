//! Puts the git commit into `--version`. Without git or a `.git` (a source tarball, the
//! Docker build, whose context leaves `.git` out) it takes `LLMPROBE_GIT_COMMIT` from the
//! environment, else says `unknown`: the build never fails over it.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!text.is_empty()).then_some(text)
}

fn main() {
    println!("cargo:rerun-if-env-changed=LLMPROBE_GIT_COMMIT");
    let from_env = std::env::var("LLMPROBE_GIT_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty());
    let commit = from_env.or_else(|| {
        let commit = git(&["rev-parse", "--short=12", "HEAD"])?;
        // Rebuild when HEAD moves: the HEAD file, and the branch ref it points to. Only
        // files that exist: cargo takes a missing one as changed and rebuilds every time
        // (a clone without packed refs, a worktree).
        let mut watched = Vec::new();
        for path in ["HEAD", "packed-refs"] {
            watched.extend(git(&["rev-parse", "--git-path", path]));
        }
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            watched.extend(git(&["rev-parse", "--git-path", &branch]));
        }
        for p in watched.iter().filter(|p| std::path::Path::new(p).exists()) {
            println!("cargo:rerun-if-changed={p}");
        }
        Some(commit)
    });
    let commit = commit.unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=LLMPROBE_GIT_COMMIT={commit}");
}
