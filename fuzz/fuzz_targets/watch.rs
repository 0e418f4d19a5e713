//! The watchers' parsers, on any bytes: the `watch:` section, cron expressions and zones,
//! baseline rates, INI files (drift), apt configuration, `timedatectl` output, HTTP dates,
//! cloud-init settings and instance data, Docker's daemon.json (hazards), and PSI and
//! meminfo (the memory guard). None may panic; a schedule that parses must answer its next
//! slot without one.
//!
//! The first byte picks the parser; the rest is its text.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    match which % 12 {
        0 => {
            if let Ok(file) = yaml_serde::from_str::<nightwatch_watch::WatchFile>(&text) {
                let _ = file.check();
            }
        }
        1 => {
            // The expression, then a zone after a NUL.
            let (expr, zone) = text.split_once('\0').unwrap_or((&text, "UTC"));
            if let Ok(schedule) = nightwatch_watch::Schedule::cron(expr, Some(zone)) {
                let _ = schedule.next_after(1_796_256_000_000);
                let _ = schedule.slot_at(1_796_256_000_000, 86_400_000);
                let _ = schedule.typical_gap_ms(0);
            }
        }
        2 => {
            let _ = nightwatch_watch::baseline::Rate::parse(&text);
        }
        3 => {
            let _ = nightwatch_watch::drift::Ini::parse(&text);
        }
        4 => {
            let _ = nightwatch_hazards::apt::parse(&text);
        }
        5 => {
            let _ = nightwatch_hazards::clock::parse_show(&text);
            let _ = nightwatch_hazards::clock::parse_status(&text);
            let _ = nightwatch_hazards::clock::interpret(&text, &text, which & 0x80 != 0);
        }
        6 => {
            let _ = nightwatch_hazards::clock::parse_http_date(&text);
        }
        7 => {
            let configs = vec![("cloud.cfg".to_owned(), text.clone().into_owned())];
            let _ = nightwatch_hazards::cloud_init::settings(&configs);
            let _ = nightwatch_hazards::cloud_init::current_instance_id(&text);
        }
        8 => {
            let _ = nightwatch_hazards::docker::judge(Some(&text));
        }
        9 => {
            let _ = nightwatch_guard::parse_psi(&text);
        }
        10 => {
            let _ = nightwatch_guard::parse_meminfo(&text);
        }
        _ => {
            if let Ok(guard) = yaml_serde::from_str::<nightwatch_guard::GuardConfig>(&text) {
                let _ = guard.check(None);
            }
        }
    }
});
