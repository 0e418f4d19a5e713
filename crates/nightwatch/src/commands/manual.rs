//! `nightwatch completions SHELL` and `nightwatch man`: generated from the CLI's definitions
//! (`cli.rs`), so they never disagree with `--help`.

use crate::cli::{Cli, CompletionsArgs, ManArgs};
use anyhow::Context as _;
use clap::CommandFactory;

pub fn completions(args: CompletionsArgs) -> anyhow::Result<u8> {
    let mut command = Cli::command();
    clap_complete::generate(
        args.shell,
        &mut command,
        "nightwatch",
        &mut std::io::stdout(),
    );
    Ok(0)
}

pub fn man(args: ManArgs) -> anyhow::Result<u8> {
    let command = Cli::command();
    let Some(dir) = args.dir else {
        clap_mangen::Man::new(command)
            .render(&mut std::io::stdout())
            .context("cannot write the page")?;
        return Ok(0);
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    clap_mangen::generate_to(command, &dir)
        .with_context(|| format!("cannot write the pages into {}", dir.display()))?;
    let mut written: Vec<String> = std::fs::read_dir(&dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("nightwatch") && n.ends_with(".1"))
        .collect();
    written.sort();
    println!(
        "wrote {} pages into {}: {}",
        written.len(),
        dir.display(),
        written.join(" ")
    );
    Ok(0)
}
