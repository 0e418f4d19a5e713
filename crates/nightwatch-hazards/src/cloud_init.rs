//! cloud-init enabled on a host whose instance id would change: on the next boot it runs as
//! a new instance (a clone, a restore, a VM rebuilt from a template, a datasource answering
//! differently) and re-provisions a host that is in service: the SSH host keys deleted and
//! made anew (`ssh_deletekeys`, true unless said otherwise), packages upgraded at boot
//! (`package_upgrade`), a reboot when they ask (`package_reboot_if_required`).
//!
//! Not a hazard: cloud-init not installed, disabled (`/etc/cloud/cloud-init.disabled`, or
//! `cloud-init=disabled` on the kernel command line), or trusting its cache
//! (`manual_cache_clean: true`: it does not look for a new instance id).

use serde_json::json;

use crate::{Check, Hazard, Seen};

const SUBJECT: &str = "cloud-init";

/// What the I/O layer found, as text.
#[derive(Clone, Debug, Default)]
pub struct CloudInitFacts {
    /// `/usr/bin/cloud-init` or `/etc/cloud` exists.
    pub installed: bool,
    /// `/etc/cloud/cloud-init.disabled` exists.
    pub disabled_file: bool,
    /// `/proc/cmdline`.
    pub kernel_cmdline: Option<String>,
    /// `/etc/cloud/cloud.cfg`, then `/etc/cloud/cloud.cfg.d/*.cfg` by name: (name, text).
    pub configs: Vec<(String, String)>,
    /// `/var/lib/cloud/data/instance-id`: the instance cloud-init last ran as.
    pub cached_instance_id: Option<String>,
    /// `/var/lib/cloud/data/previous-instance-id`: the one before it.
    pub previous_instance_id: Option<String>,
    /// `/run/cloud-init/instance-data.json`: what the datasource says now.
    pub instance_data: Option<String>,
}

/// The settings that decide what a new instance does, after every file is merged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    pub ssh_deletekeys: bool,
    pub package_upgrade: bool,
    pub package_reboot_if_required: bool,
    pub manual_cache_clean: bool,
}

/// Merges the files' top-level keys (a later file wins), with cloud-init's defaults. Files
/// that do not parse are skipped, as cloud-init skips them, and returned with why.
pub fn settings(configs: &[(String, String)]) -> (Settings, Vec<(String, String)>) {
    let mut merged = serde_json::Map::new();
    let mut unread = Vec::new();
    for (name, text) in configs {
        match yaml_serde::from_str::<serde_json::Value>(text) {
            Ok(serde_json::Value::Object(map)) => merged.extend(map),
            // An empty file, or only comments.
            Ok(serde_json::Value::Null) => {}
            Ok(_) => unread.push((name.clone(), "not a mapping of settings".to_owned())),
            Err(e) => unread.push((name.clone(), e.to_string())),
        }
    }
    let flag = |key: &str, default: bool| merged.get(key).and_then(as_bool).unwrap_or(default);
    (
        Settings {
            ssh_deletekeys: flag("ssh_deletekeys", true),
            package_upgrade: flag("package_upgrade", false),
            package_reboot_if_required: flag("package_reboot_if_required", false),
            manual_cache_clean: flag("manual_cache_clean", false),
        },
        unread,
    )
}

/// A boolean as cloud-init's `get_cfg_option_bool` reads one.
fn as_bool(value: &serde_json::Value) -> Option<bool> {
    match value {
        serde_json::Value::Bool(b) => Some(*b),
        serde_json::Value::Number(n) => n.as_i64().map(|n| n != 0),
        serde_json::Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "on" | "yes" => Some(true),
            "false" | "0" | "off" | "no" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

/// The instance id the datasource reported (`v1.instance_id` of instance-data.json).
pub fn current_instance_id(instance_data: &str) -> Option<String> {
    let data: serde_json::Value = serde_json::from_str(instance_data).ok()?;
    let v1 = data.get("v1")?;
    v1.get("instance_id")
        .or_else(|| v1.get("instance-id"))
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned)
}

fn id(text: &Option<String>) -> Option<&str> {
    text.as_deref().map(str::trim).filter(|t| !t.is_empty())
}

pub fn judge(facts: &CloudInitFacts) -> Check {
    let check = |seen, what: String, fix: &str| {
        Check::new(Hazard::CloudInitReprovision, SUBJECT, seen, what, fix)
    };
    if !facts.installed {
        return check(Seen::Ok, "cloud-init is not installed".into(), "");
    }
    if facts.disabled_file {
        return check(
            Seen::Ok,
            "cloud-init is disabled (/etc/cloud/cloud-init.disabled)".into(),
            "",
        );
    }
    let on_cmdline = facts
        .kernel_cmdline
        .as_deref()
        .is_some_and(|line| line.split_whitespace().any(|w| w == "cloud-init=disabled"));
    if on_cmdline {
        return check(
            Seen::Ok,
            "cloud-init is disabled (cloud-init=disabled on the kernel command line)".into(),
            "",
        );
    }
    let (settings, unread) = settings(&facts.configs);
    let cached = id(&facts.cached_instance_id);
    let previous = id(&facts.previous_instance_id);
    let current = facts.instance_data.as_deref().and_then(current_instance_id);
    let evidence = json!({
        "ssh_deletekeys": settings.ssh_deletekeys,
        "package_upgrade": settings.package_upgrade,
        "package_reboot_if_required": settings.package_reboot_if_required,
        "manual_cache_clean": settings.manual_cache_clean,
        "cached_instance_id": cached,
        "previous_instance_id": previous,
        "datasource_instance_id": current,
        "config_files": facts.configs.iter().map(|(n, _)| n).collect::<Vec<_>>(),
        "unreadable_config_files": unread.iter().map(|(n, e)| json!({"file": n, "error": e})).collect::<Vec<_>>(),
    });
    let fix = "once the host is provisioned, disable cloud-init: touch /etc/cloud/cloud-init.disabled \
               (or set manual_cache_clean: true in /etc/cloud/cloud.cfg.d/99-keep-instance.cfg); \
               failing that, ssh_deletekeys: false and package_upgrade: false";
    if settings.manual_cache_clean {
        return check(
            Seen::Ok,
            "cloud-init is enabled but trusts its cache (manual_cache_clean: true): a changed \
             instance id does not make it a new instance"
                .into(),
            "",
        )
        .with(evidence);
    }
    let mut would = Vec::new();
    if settings.ssh_deletekeys {
        would.push("delete and regenerate the SSH host keys");
    }
    if settings.package_upgrade {
        would.push("upgrade packages at boot");
    }
    if settings.package_reboot_if_required {
        would.push("reboot when an upgrade asks");
    }
    let would = if would.is_empty() {
        "run its per-instance modules again (users, hostname, mounts)".to_owned()
    } else {
        would.join(", ")
    };
    let changed = match (current.as_deref(), cached) {
        (Some(now), Some(cached)) if now != cached => Some(format!(
            "the datasource reports instance id {now:?} but cloud-init last ran as {cached:?}: \
             the next boot is a new instance"
        )),
        _ => None,
    };
    let changed_before = match (previous, cached) {
        (Some(previous), Some(cached)) if previous != cached => Some(format!(
            "its instance id already changed once ({previous:?} to {cached:?}): this host is \
             cloned or restored"
        )),
        _ => None,
    };
    let destructive =
        settings.ssh_deletekeys || settings.package_upgrade || settings.package_reboot_if_required;
    match (changed.or(changed_before), destructive) {
        (Some(evidence_of_change), _) => check(
            Seen::Found,
            format!(
                "cloud-init is enabled and {evidence_of_change}; as a new instance it would {would}"
            ),
            fix,
        ),
        (None, true) => check(
            Seen::Found,
            format!(
                "cloud-init is enabled: if this host's instance id changes (a clone, a restore, a \
                 rebuild from a template) it would {would}"
            ),
            fix,
        ),
        (None, false) => check(
            Seen::Ok,
            "cloud-init is enabled, but a new instance would neither replace the host keys nor \
             upgrade packages"
                .into(),
            fix,
        ),
    }
    .with(evidence)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enabled(configs: &[&str]) -> CloudInitFacts {
        CloudInitFacts {
            installed: true,
            configs: configs
                .iter()
                .enumerate()
                .map(|(i, t)| (format!("{i}.cfg"), (*t).to_owned()))
                .collect(),
            ..CloudInitFacts::default()
        }
    }

    #[test]
    fn defaults_delete_host_keys() {
        let check = judge(&enabled(&["datasource_list: [NoCloud]\n"]));
        assert_eq!(check.seen, Seen::Found);
        assert!(check.what.contains("SSH host keys"), "{}", check.what);
    }

    #[test]
    fn later_file_wins_and_harmless_settings_pass() {
        let check = judge(&enabled(&[
            "ssh_deletekeys: true\npackage_upgrade: true\n",
            "ssh_deletekeys: false\npackage_upgrade: \"no\"\n",
        ]));
        assert_eq!(check.seen, Seen::Ok, "{check:?}");
    }

    #[test]
    fn instance_id_change_is_found_even_when_harmless() {
        let mut facts = enabled(&["ssh_deletekeys: false\n"]);
        facts.cached_instance_id = Some("i-old\n".into());
        facts.instance_data = Some(r#"{"v1": {"instance_id": "i-new"}}"#.into());
        let check = judge(&facts);
        assert_eq!(check.seen, Seen::Found);
        assert!(check.what.contains("i-new") && check.what.contains("i-old"));
    }

    #[test]
    fn disabled_or_absent_is_ok() {
        let mut facts = enabled(&[]);
        facts.kernel_cmdline = Some("BOOT_IMAGE=/vmlinuz ro cloud-init=disabled quiet".into());
        assert_eq!(judge(&facts).seen, Seen::Ok);
        assert_eq!(judge(&CloudInitFacts::default()).seen, Seen::Ok);
        let trusting = judge(&enabled(&["manual_cache_clean: true\n"]));
        assert_eq!(trusting.seen, Seen::Ok);
    }

    #[test]
    fn unreadable_config_is_skipped_and_named() {
        let check = judge(&enabled(&["ssh_deletekeys: [\n", "- a list\n"]));
        assert_eq!(check.seen, Seen::Found);
        assert_eq!(
            check.evidence["unreadable_config_files"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
    }
}
