//! Where a caller's protected places are, from its environment: what the gate's path facts
//! resolve against, so that a hook, `exec`, `check` and the resident gate (with the hook's
//! environment) give every path the same names.

use crate::environment::Environment;
use nightwatch_gate::{Named, Places};
use std::path::{Path, PathBuf};

/// The places of a caller with environment `env`: its home, its working directory, and the
/// locations policy protects by symbolic name: the data directory (`$NIGHTWATCH_HOME`), each
/// agent's config directory where its variable moved it (`~/.claude`, `~/.codex`,
/// `~/.gemini`, Gemini's system settings files), and this binary (`$NIGHTWATCH_BIN`).
pub fn places(env: &Environment) -> Places {
    let cwd = env.cwd().map(PathBuf::from).filter(|cwd| cwd.is_absolute());
    // A relative value is taken from where the caller runs; without that it is unknown.
    let absolute = |value: &str| {
        let path = PathBuf::from(value);
        if path.is_absolute() {
            Some(path)
        } else {
            cwd.as_deref().map(|cwd| cwd.join(path))
        }
    };
    let variable = |name: &str| env.var(name).and_then(absolute);
    let home = variable("HOME");
    let data_dir = crate::home::data_dir_in(env);
    let mut named = vec![Named {
        path: data_dir.clone(),
        name: "$NIGHTWATCH_HOME".to_owned(),
        tree: true,
    }];
    let mut variables = vec![("NIGHTWATCH_HOME".to_owned(), data_dir)];
    let agents = [
        ("CLAUDE_CONFIG_DIR", "~/.claude", None),
        ("CODEX_HOME", "~/.codex", None),
        // Gemini CLI keeps its `.gemini` inside GEMINI_CLI_HOME.
        ("GEMINI_CLI_HOME", "~/.gemini", Some(".gemini")),
    ];
    for (name, symbolic, inside) in agents {
        let Some(value) = variable(name) else {
            continue;
        };
        variables.push((name.to_owned(), value.clone()));
        named.push(Named {
            path: inside.map_or_else(|| value.clone(), |dir| value.join(dir)),
            name: symbolic.to_owned(),
            tree: true,
        });
    }
    // Gemini CLI's system-wide settings (they hold hooks too), where its variables put them.
    let system_files = [
        (
            "GEMINI_CLI_SYSTEM_SETTINGS_PATH",
            "/etc/gemini-cli/settings.json",
        ),
        (
            "GEMINI_CLI_SYSTEM_DEFAULTS_PATH",
            "/etc/gemini-cli/system-defaults.json",
        ),
    ];
    for (name, symbolic) in system_files {
        if let Some(file) = variable(name) {
            variables.push((name.to_owned(), file.clone()));
            named.push(Named {
                path: file,
                name: symbolic.to_owned(),
                tree: false,
            });
        }
    }
    if let Some(state) = variable("XDG_STATE_HOME") {
        variables.push(("XDG_STATE_HOME".to_owned(), state));
    }
    if let Some(binary) = this_binary() {
        named.push(Named {
            path: binary,
            name: "$NIGHTWATCH_BIN".to_owned(),
            tree: false,
        });
    }
    Places {
        home,
        cwd,
        named,
        variables,
        passwd: None,
    }
}

/// The running binary, as the filesystem names it (a link to it is resolved by the facts).
fn this_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    // Replaced while running: Linux names the old file "<path> (deleted)".
    let text = exe.to_str()?;
    Some(
        text.strip_suffix(" (deleted)")
            .map_or_else(|| exe.clone(), |kept| Path::new(kept).to_path_buf()),
    )
}
