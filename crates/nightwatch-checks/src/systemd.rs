//! `systemd_unit:` asks `systemctl show` whether a unit is running and since when.

use crate::child::run_bounded;
use crate::spec::SystemdUnitCheck;
use crate::{Outcome, human_ms, span_ms};
use std::ffi::OsStr;
use std::process::Command;
use std::time::Instant;

/// `systemctl show` prints a handful of short lines for these properties.
const STDOUT_CAP: usize = 16 * 1024;

/// Probes the unit. `path` overrides `PATH` for finding `systemctl` (tests use it; the gate
/// passes `None`).
pub(crate) fn probe(
    check: &SystemdUnitCheck,
    now_ms: i64,
    deadline: Instant,
    path: Option<&OsStr>,
) -> Outcome {
    let shown = show(
        &check.unit,
        &[
            "LoadState",
            "ActiveState",
            "SubState",
            "ActiveEnterTimestamp",
            "InactiveExitTimestamp",
        ],
        deadline,
        path,
    );
    match shown.and_then(|text| parse_show(&text)) {
        Ok(state) => judge(check, &state, now_ms),
        Err(e) => Outcome::unknown(e),
    }
}

/// One property of a unit as `systemctl show -p PROPERTY --value UNIT` prints it, trimmed
/// (`Restart` gives `always`). `Err` says why systemctl could not tell: not installed, not
/// running under systemd, past `deadline`. `path` overrides `PATH` for finding `systemctl`.
pub fn show_property(
    unit: &str,
    property: &str,
    deadline: Instant,
    path: Option<&OsStr>,
) -> Result<String, String> {
    let text = show(unit, &[property], deadline, path)?;
    let prefix = format!("{property}=");
    text.lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .map(|value| value.trim().to_owned())
        .ok_or_else(|| format!("systemctl show printed no {property} for {unit}"))
}

/// A unit's `ActiveState` (`active`, `failed`, `inactive`, ...), or why it cannot be told.
pub fn active_state(unit: &str, deadline: Instant, path: Option<&OsStr>) -> Result<String, String> {
    show_property(unit, "ActiveState", deadline, path)
}

/// `systemctl show --timestamp=unix -p P... -- UNIT`: its `KEY=value` lines, or why not.
fn show(
    unit: &str,
    properties: &[&str],
    deadline: Instant,
    path: Option<&OsStr>,
) -> Result<String, String> {
    let mut cmd = Command::new("systemctl");
    if let Some(path) = path {
        cmd.env("PATH", path);
    }
    cmd.args(["show", "--timestamp=unix"]);
    for property in properties {
        cmd.args(["-p", property]);
    }
    cmd.args(["--", unit]);
    let exited =
        run_bounded(cmd, deadline, Some(STDOUT_CAP), 512).map_err(|e| format!("systemctl: {e}"))?;
    if !exited.status.success() {
        let stderr = exited
            .stderr
            .map(|b| String::from_utf8_lossy(&b).trim().to_owned())
            .unwrap_or_default();
        return Err(format!(
            "systemctl show failed ({}): {stderr}",
            exited.status
        ));
    }
    let Some(stdout) = exited.stdout else {
        return Err("systemctl show left its output open past the deadline".to_owned());
    };
    Ok(String::from_utf8_lossy(&stdout).into_owned())
}

/// What `systemctl show` says about a unit.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct UnitState {
    pub load: String,
    pub active: String,
    pub sub: String,
    /// When it last left `inactive` (began starting), else when it became active.
    pub since_ms: Option<i64>,
    /// A timestamp was printed that this parser does not understand.
    pub since_unreadable: Option<String>,
}

pub(crate) fn parse_show(text: &str) -> Result<UnitState, String> {
    let mut state = UnitState {
        load: String::new(),
        active: String::new(),
        sub: String::new(),
        since_ms: None,
        since_unreadable: None,
    };
    let (mut entered, mut exited_inactive) = (None, None);
    for line in text.lines() {
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let value = value.trim();
        match key {
            "LoadState" => state.load = value.to_owned(),
            "ActiveState" => state.active = value.to_owned(),
            "SubState" => state.sub = value.to_owned(),
            "ActiveEnterTimestamp" => entered = Some(value.to_owned()),
            "InactiveExitTimestamp" => exited_inactive = Some(value.to_owned()),
            _ => {}
        }
    }
    if state.active.is_empty() {
        return Err("systemctl show printed no ActiveState".to_owned());
    }
    for raw in [exited_inactive, entered].into_iter().flatten() {
        match parse_timestamp(&raw) {
            Ok(Some(ms)) => {
                state.since_ms = Some(ms);
                break;
            }
            Ok(None) => {}
            Err(()) => state.since_unreadable = Some(raw),
        }
    }
    Ok(state)
}

/// `@1712345678` (`--timestamp=unix`), or `Mon 2024-04-01 12:00:00 UTC` from a systemd too old
/// for `--timestamp=unix`; empty or `n/a` when the unit never got there. Other zones than UTC
/// are ambiguous as abbreviations, so they are refused rather than guessed.
fn parse_timestamp(raw: &str) -> Result<Option<i64>, ()> {
    let raw = raw.trim();
    if raw.is_empty() || raw == "n/a" || raw == "0" {
        return Ok(None);
    }
    if let Some(secs) = raw.strip_prefix('@') {
        let secs = secs.split('.').next().unwrap_or_default();
        let secs: i64 = secs.parse().map_err(|_| ())?;
        return if secs == 0 {
            Ok(None)
        } else {
            secs.checked_mul(1000).map(Some).ok_or(())
        };
    }
    let parts: Vec<&str> = raw.split_whitespace().collect();
    if let [_weekday, date, time, "UTC"] = parts.as_slice() {
        let civil: jiff::civil::DateTime = format!("{date}T{time}").parse().map_err(|_| ())?;
        let ts = civil.to_zoned(jiff::tz::TimeZone::UTC).map_err(|_| ())?;
        return Ok(Some(ts.timestamp().as_millisecond()));
    }
    Err(())
}

fn judge(check: &SystemdUnitCheck, state: &UnitState, now_ms: i64) -> Outcome {
    let unit = &check.unit;
    if state.load == "not-found" {
        return Outcome::clear(format!("unit {unit} is not loaded (not-found)"));
    }
    let running = matches!(
        state.active.as_str(),
        "active" | "activating" | "reloading" | "deactivating" | "refreshing"
    );
    if !running {
        return Outcome::clear(format!("unit {unit} is {} ({})", state.active, state.sub));
    }
    let min_ms = span_ms(check.active_longer_than);
    let Some(since_ms) = state.since_ms else {
        if min_ms == 0 {
            return Outcome::matched(format!("unit {unit} is {} ({})", state.active, state.sub));
        }
        return Outcome::unknown(match &state.since_unreadable {
            Some(raw) => format!(
                "unit {unit} is {} since an unreadable time {raw:?}",
                state.active
            ),
            None => format!(
                "unit {unit} is {} but systemd gives no start time",
                state.active
            ),
        });
    };
    let age_ms = now_ms.saturating_sub(since_ms).max(0);
    let since = jiff::Timestamp::from_millisecond(since_ms)
        .map(|t| t.to_string())
        .unwrap_or_else(|_| since_ms.to_string());
    let age = human_ms(u64::try_from(age_ms).unwrap_or_default());
    let detail = format!(
        "unit {unit} is {} ({}) since {since}, for {age}",
        state.active, state.sub
    );
    if age_ms >= min_ms {
        Outcome::matched(detail)
    } else {
        Outcome::clear(format!(
            "{detail}, under {}",
            human_ms(u64::try_from(min_ms).unwrap_or_default())
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::time::Duration;

    const NOW_MS: i64 = 1_712_350_000_000;

    fn check(unit: &str, min: Duration) -> SystemdUnitCheck {
        SystemdUnitCheck {
            unit: unit.to_owned(),
            active_longer_than: min,
        }
    }

    fn deadline() -> Instant {
        Instant::now() + Duration::from_secs(5)
    }

    /// Captured from systemd 255 for a oneshot migration unit mid-run.
    const ACTIVATING: &str = "LoadState=loaded\nActiveState=activating\nSubState=start\n\
        ActiveEnterTimestamp=\nInactiveExitTimestamp=@1712345678\n";
    /// Captured from systemd 255 for a long-running service.
    const ACTIVE: &str = "LoadState=loaded\nActiveState=active\nSubState=running\n\
        ActiveEnterTimestamp=@1712340000\nInactiveExitTimestamp=@1712339999\n";
    const INACTIVE: &str = "LoadState=loaded\nActiveState=inactive\nSubState=dead\n\
        ActiveEnterTimestamp=n/a\nInactiveExitTimestamp=n/a\n";
    const NOT_FOUND: &str = "LoadState=not-found\nActiveState=inactive\nSubState=dead\n\
        ActiveEnterTimestamp=\nInactiveExitTimestamp=\n";
    /// The default format, from a systemd without `--timestamp=unix`.
    const OLD_FORMAT: &str = "LoadState=loaded\nActiveState=active\nSubState=running\n\
        ActiveEnterTimestamp=Fri 2024-04-05 18:00:00 UTC\nInactiveExitTimestamp=Fri 2024-04-05 18:00:00 UTC\n";

    #[test]
    fn parses_captured_output() {
        let cases: &[(&str, &str, &str, Option<i64>)] = &[
            (ACTIVATING, "activating", "start", Some(1_712_345_678_000)),
            (ACTIVE, "active", "running", Some(1_712_339_999_000)),
            (INACTIVE, "inactive", "dead", None),
            (NOT_FOUND, "inactive", "dead", None),
            (OLD_FORMAT, "active", "running", Some(1_712_340_000_000)),
        ];
        for (text, active, sub, since) in cases {
            let state = parse_show(text).expect(text);
            assert_eq!(
                (state.active.as_str(), state.sub.as_str(), state.since_ms),
                (*active, *sub, *since),
                "{text}"
            );
        }
        assert!(parse_show("garbage\n=\n").is_err());
        assert!(parse_show("").is_err());
    }

    #[test]
    fn running_migration_unit_matches_only_past_its_threshold() {
        let state = parse_show(ACTIVATING).expect("parses");
        // Started 4322 s (72 min) before NOW_MS.
        let long = judge(
            &check("app-migrate.service", Duration::from_secs(1800)),
            &state,
            NOW_MS,
        );
        assert!(long.is_matched(), "{long:?}");
        let short = judge(
            &check("app-migrate.service", Duration::from_secs(7200)),
            &state,
            NOW_MS,
        );
        assert!(short.is_clear(), "{short:?}");
        for text in [INACTIVE, NOT_FOUND] {
            let state = parse_show(text).expect("parses");
            assert!(judge(&check("x.service", Duration::ZERO), &state, NOW_MS).is_clear());
        }
    }

    #[test]
    fn unreadable_start_time_is_unknown() {
        let text = "ActiveState=active\nSubState=running\nActiveEnterTimestamp=Fri 2024-04-05 18:00:00 CEST\n";
        let state = parse_show(text).expect("parses");
        let outcome = judge(&check("x.service", Duration::from_secs(60)), &state, NOW_MS);
        assert!(outcome.is_unknown(), "{outcome:?}");
    }

    #[test]
    fn systemctl_missing_is_unknown() {
        let empty = tempfile::tempdir().expect("tempdir");
        let outcome = probe(
            &check("app-migrate.service", Duration::ZERO),
            NOW_MS,
            deadline(),
            Some(empty.path().as_os_str()),
        );
        match outcome {
            Outcome::Unknown { reason } => assert!(reason.contains("could not start"), "{reason}"),
            other => panic!("expected unknown, got {other:?}"),
        }
    }

    /// Runs the probe, retrying the rare "text file busy" when another test thread forked while
    /// the fake was still open for writing.
    fn probe_fake(check: &SystemdUnitCheck, deadline: Instant, dir: &tempfile::TempDir) -> Outcome {
        for _ in 0..5 {
            let outcome = probe(check, NOW_MS, deadline, Some(dir.path().as_os_str()));
            match &outcome {
                Outcome::Unknown { reason } if reason.contains("busy") => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                _ => return outcome,
            }
        }
        Outcome::unknown("text file busy")
    }

    fn fake_systemctl(script: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("systemctl");
        std::fs::write(&path, script).expect("write script");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        dir
    }

    #[test]
    fn systemctl_failing_is_unknown() {
        let dir = fake_systemctl(
            "#!/bin/sh\necho 'System has not been booted with systemd as init system (PID 1). Can'\"'\"'t operate.' >&2\nexit 1\n",
        );
        let outcome = probe_fake(
            &check("app-migrate.service", Duration::ZERO),
            deadline(),
            &dir,
        );
        match outcome {
            Outcome::Unknown { reason } => assert!(reason.contains("not been booted"), "{reason}"),
            other => panic!("expected unknown, got {other:?}"),
        }
    }

    #[test]
    fn systemctl_hanging_is_unknown_at_the_deadline() {
        // The fake's PATH is its own directory only, so it names sleep by its full path.
        let sleep = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .map(|d| d.join("sleep"))
            .find(|p| p.exists())
            .expect("sleep on PATH");
        let dir = fake_systemctl(&format!("#!/bin/sh\nexec {} 30\n", sleep.display()));
        let start = Instant::now();
        let outcome = probe_fake(
            &check("app-migrate.service", Duration::ZERO),
            start + Duration::from_millis(300),
            &dir,
        );
        match outcome {
            Outcome::Unknown { reason } => assert!(reason.contains("deadline"), "{reason}"),
            other => panic!("expected unknown, got {other:?}"),
        }
        let took = start.elapsed();
        assert!(
            took >= Duration::from_millis(300) && took < Duration::from_secs(3),
            "{took:?}"
        );
    }

    #[test]
    fn real_systemctl_output_is_judged() {
        // A fake systemctl that prints captured output, checking the arguments it was given.
        let script = format!(
            "#!/bin/sh\ncase \"$*\" in\n  *'-- app-migrate.service'*) printf '%s' '{ACTIVATING}';;\n  *) echo \"unexpected args: $*\" >&2; exit 2;;\nesac\n"
        );
        let dir = fake_systemctl(&script);
        let outcome = probe_fake(
            &check("app-migrate.service", Duration::from_secs(1800)),
            deadline(),
            &dir,
        );
        match outcome {
            Outcome::Matched { detail } => {
                assert!(
                    detail.contains("app-migrate.service is activating"),
                    "{detail}"
                );
                assert!(detail.contains("1h12m"), "{detail}");
            }
            other => panic!("expected matched, got {other:?}"),
        }
    }

    #[test]
    fn one_property_is_read_from_systemctl_show() {
        let script = "#!/bin/sh\ncase \"$*\" in\n  *'-p Restart -- nginx.service'*) printf 'Restart=on-failure\\n';;\n  *) echo \"unexpected args: $*\" >&2; exit 2;;\nesac\n";
        let dir = fake_systemctl(script);
        let mut answer = Err(String::new());
        for _ in 0..5 {
            answer = show_property(
                "nginx.service",
                "Restart",
                deadline(),
                Some(dir.path().as_os_str()),
            );
            match &answer {
                Err(e) if e.contains("busy") => std::thread::sleep(Duration::from_millis(20)),
                _ => break,
            }
        }
        assert_eq!(answer, Ok("on-failure".to_owned()));
        let missing = show_property(
            "nginx.service",
            "Type",
            deadline(),
            Some(dir.path().as_os_str()),
        );
        assert!(missing.is_err(), "{missing:?}");
    }
}
