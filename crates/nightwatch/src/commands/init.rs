use crate::cli::InitArgs;
use crate::home;
use anyhow::{Context, bail};
use nightwatch_policy::DEFAULT_POLICY_YAML;
use std::io::Write;

pub fn run(args: InitArgs) -> anyhow::Result<u8> {
    let path = args.output.unwrap_or_else(home::policy_file);
    if path.exists() && !args.force {
        bail!(
            "{} already exists; edit it, or pass --force to replace it with the built-in policy",
            path.display()
        );
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    // Write beside the target and rename, so a crash never leaves half a policy.
    let temporary = path.with_extension("yaml.tmp");
    let mut file = std::fs::File::create(&temporary)
        .with_context(|| format!("cannot write {}", temporary.display()))?;
    file.write_all(DEFAULT_POLICY_YAML.as_bytes())?;
    file.sync_all()?;
    std::fs::rename(&temporary, &path)
        .with_context(|| format!("cannot move the policy into {}", path.display()))?;
    println!("wrote the built-in policy to {}", path.display());
    println!(
        "check it with: nightwatch policy test --policy {}",
        path.display()
    );
    Ok(0)
}
