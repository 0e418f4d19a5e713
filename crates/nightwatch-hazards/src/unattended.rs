//! Automatic reboots by unattended-upgrades: `Unattended-Upgrade::Automatic-Reboot "true"`
//! while `APT::Periodic::Unattended-Upgrade` runs it. A host that reboots itself at 02:00
//! because a kernel update asked for it is an outage nobody decided.

use serde_json::json;

use crate::apt::{AptConfig, truth};
use crate::{Check, Hazard, Seen};

/// One file of APT's configuration, as read.
#[derive(Clone, Debug)]
pub struct AptFile {
    /// How it is named in findings (`/etc/apt/apt.conf.d/50unattended-upgrades`).
    pub name: String,
    pub text: String,
}

const SUBJECT: &str = "unattended-upgrades";
const REBOOT: &str = "Unattended-Upgrade::Automatic-Reboot";
const PERIODIC: &str = "APT::Periodic::Unattended-Upgrade";
const PERIODIC_ENABLE: &str = "APT::Periodic::Enable";
const REBOOT_TIME: &str = "Unattended-Upgrade::Automatic-Reboot-Time";

/// Judges the files in the order APT reads them (`apt.conf.d/*` by name, then `apt.conf`).
pub fn judge(files: &[AptFile]) -> Check {
    let check = |seen, what: String, fix: &str| {
        Check::new(Hazard::UnattendedReboot, SUBJECT, seen, what, fix)
    };
    if files.is_empty() {
        return check(
            Seen::Ok,
            "no APT configuration: unattended-upgrades does not run here".into(),
            "",
        );
    }
    let mut config = AptConfig::new();
    for file in files {
        if let Err(error) = config.read(&file.text, &file.name) {
            return check(
                Seen::Unknown,
                format!(
                    "{} does not read ({error}); APT refuses to run with it",
                    file.name
                ),
                "fix the file's syntax (apt-config dump shows what APT reads), then look again",
            )
            .with(json!({"file": file.name, "error": error.to_string()}));
        }
    }
    let value = |key: &str| config.get(key).map(|s| (s.value.clone(), s.origin.clone()));
    let reboot = value(REBOOT);
    let periodic = value(PERIODIC);
    let enable = value(PERIODIC_ENABLE);
    let reboot_time = value(REBOOT_TIME);
    let evidence = json!({
        "automatic_reboot": reboot.as_ref().map(|(v, o)| json!({"value": v, "file": o})),
        "periodic_unattended_upgrade": periodic.as_ref().map(|(v, o)| json!({"value": v, "file": o})),
        "periodic_enable": enable.as_ref().map(|(v, o)| json!({"value": v, "file": o})),
        "automatic_reboot_time": reboot_time.as_ref().map(|(v, _)| v),
        "files": files.iter().map(|f| &f.name).collect::<Vec<_>>(),
        "includes_not_followed": config.includes.iter().map(|(p, _)| p).collect::<Vec<_>>(),
    });
    // Unset or unreadable is APT's default: no automatic reboot.
    let reboots = reboot.as_ref().and_then(|(v, _)| truth(v)).unwrap_or(false);
    let runs = runs_periodically(periodic.as_ref().map(|(v, _)| v.as_str()))
        && enable.as_ref().and_then(|(v, _)| truth(v)).unwrap_or(true);
    let fix = format!(
        "set {REBOOT} \"false\"; in a file read after the others (/etc/apt/apt.conf.d/99-no-automatic-reboot) \
         and reboot in a window you choose (needrestart or /var/run/reboot-required says when)"
    );
    match (reboots, runs) {
        (true, true) => {
            let (_, origin) = reboot.unwrap_or_default();
            let at = reboot_time.map_or_else(
                || "as soon as the upgrade finishes".to_owned(),
                |(t, _)| format!("at {t}"),
            );
            check(
                Seen::Found,
                format!(
                    "unattended-upgrades reboots this host by itself when an upgrade asks for it \
                     ({REBOOT} \"true\" in {origin}), {at}"
                ),
                &fix,
            )
        }
        (true, false) => check(
            Seen::Ok,
            format!("{REBOOT} is true but unattended upgrades do not run ({PERIODIC} is off)"),
            &fix,
        ),
        (false, _) => check(
            Seen::Ok,
            "unattended-upgrades does not reboot by itself".into(),
            "",
        ),
    }
    .with(evidence)
}

/// `APT::Periodic::Unattended-Upgrade` is a period (days, or with a unit, or `always`);
/// `0`, empty or unset is off.
fn runs_periodically(value: Option<&str>) -> bool {
    let Some(value) = value.map(str::trim) else {
        return false;
    };
    !(value.is_empty() || value.trim_start_matches('0').is_empty() || truth(value) == Some(false))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(texts: &[(&str, &str)]) -> Vec<AptFile> {
        texts
            .iter()
            .map(|(name, text)| AptFile {
                name: (*name).into(),
                text: (*text).into(),
            })
            .collect()
    }

    #[test]
    fn reboot_with_periodic_runs_is_found() {
        let check = judge(&files(&[
            (
                "20auto-upgrades",
                "APT::Periodic::Unattended-Upgrade \"1\";",
            ),
            (
                "50unattended-upgrades",
                "Unattended-Upgrade::Automatic-Reboot \"true\";\nUnattended-Upgrade::Automatic-Reboot-Time \"02:00\";",
            ),
        ]));
        assert_eq!(check.seen, Seen::Found, "{check:?}");
        assert!(check.what.contains("50unattended-upgrades") && check.what.contains("02:00"));
        assert!(check.fix.contains("\"false\""));
    }

    #[test]
    fn reboot_without_periodic_runs_is_ok() {
        let check = judge(&files(&[(
            "50unattended-upgrades",
            "Unattended-Upgrade::Automatic-Reboot \"true\";",
        )]));
        assert_eq!(check.seen, Seen::Ok);
        let off = judge(&files(&[
            (
                "10periodic",
                "APT::Periodic { Enable \"0\"; Unattended-Upgrade \"1\"; };",
            ),
            ("50u", "Unattended-Upgrade::Automatic-Reboot \"true\";"),
        ]));
        assert_eq!(off.seen, Seen::Ok);
    }

    #[test]
    fn periodic_values() {
        assert!(runs_periodically(Some("1")));
        assert!(runs_periodically(Some("always")));
        assert!(runs_periodically(Some("7")));
        assert!(!runs_periodically(Some("0")));
        assert!(!runs_periodically(Some("00")));
        assert!(!runs_periodically(Some("")));
        assert!(!runs_periodically(None));
    }
}
