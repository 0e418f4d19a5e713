//! Drift against real files, a /proc tree in a temp root, systemctl as it is on this machine,
//! and containers through the engine seam; and which actor the ledger says last touched a file.

mod support;

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use nightwatch_ledger::{Entry, RecordActor, event};
use nightwatch_store::Ledger;
use nightwatch_store::memory::MemoryLedger;
use nightwatch_watch::drift::DriftSpec;
use nightwatch_watch::touched::last_touched;
use nightwatch_watch::{ContainerFacts, NoContainers, Seen};
use serde_json::json;
use support::{AnsweringDatabases, NOW_MS, TestContainers, env, only};

fn spec(yaml: &str) -> DriftSpec {
    yaml_serde::from_str(yaml).unwrap_or_else(|e| panic!("{yaml}: {e}"))
}

fn run(spec: &DriftSpec) -> Vec<nightwatch_watch::Observation> {
    let ledger = MemoryLedger::new();
    let dbs = AnsweringDatabases::default();
    spec.run(&env(NOW_MS, &ledger, &dbs, &NoContainers))
}

fn agent(id: &str) -> RecordActor {
    RecordActor {
        kind: "agent".into(),
        id: id.into(),
    }
}

/// An allowed write of `path` by `actor`, with the backup the gate takes before it.
fn write_decision(at_ms: i64, actor: RecordActor, path: &str) -> Entry {
    let mut e = Entry::new(event::DECISION, at_ms, actor, "write");
    e.session_id = Some("sess_1".into());
    e.verdict = Some("allow".into());
    e.inputs = json!({ "file_path": path, "content": "..." });
    e.safeguards = Some(json!({ "backup": { "snapshot": "s1", "paths": [path] } }));
    e
}

const APP_INI: &str = "[server]\nhost = 0.0.0.0\nmax_connections = 512\n";

#[test]
fn a_knob_removed_from_a_file_is_drift_naming_the_agent_that_wrote_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("app.ini");
    let path = file.to_str().unwrap().to_owned();
    std::fs::write(&file, APP_INI).unwrap();
    let watcher = spec(&format!(
        "{{ file: {path}, key: server.max_connections, equals: \"512\" }}"
    ));
    only(run(&watcher), Seen::Ok);

    // The autohealer's agent rewrites the file from an old template, without the knob.
    let ledger = MemoryLedger::new();
    ledger
        .append(write_decision(NOW_MS - 60_000, agent("claude-code"), &path))
        .unwrap();
    // Later records that did not write it: another file, and a denied write of this one.
    ledger
        .append(write_decision(
            NOW_MS - 50_000,
            agent("other"),
            "/etc/other.ini",
        ))
        .unwrap();
    let mut denied = write_decision(NOW_MS - 40_000, agent("denied-bot"), &path);
    denied.verdict = Some("deny".into());
    ledger.append(denied).unwrap();
    std::fs::write(&file, "[server]\nhost = 0.0.0.0\n").unwrap();

    let seen = only(run(&watcher), Seen::Found);
    assert_eq!(
        seen.summary,
        "app.ini: server.max_connections is missing; expected \"512\""
    );
    assert_eq!(seen.touched, std::slice::from_ref(&path));
    assert_eq!(seen.subject, format!("{path}: server.max_connections"));

    let toucher = last_touched(&ledger, &seen.touched[0], Some(NOW_MS - 3_600_000))
        .unwrap()
        .expect("the ledger names who wrote it");
    assert_eq!(toucher.actor, "agent:claude-code");
    assert_eq!(toucher.record_id, "r1");
    assert_eq!(toucher.at_ms, NOW_MS - 60_000);
    assert_eq!(toucher.session.as_deref(), Some("sess_1"));
    assert_eq!(toucher.summary, format!("write {path}"));
    // Outside the window, the ledger names nobody.
    assert_eq!(last_touched(&ledger, &path, Some(NOW_MS)).unwrap(), None);
}

#[test]
fn the_last_toucher_is_found_through_backups_of_exec_lines_and_file_tool_inputs() {
    let ledger = MemoryLedger::new();
    // An exec line that removed the whole directory: its backup saved the directory.
    let mut rm = Entry::new(
        event::DECISION,
        NOW_MS - 30_000,
        agent("janitor-bot"),
        "exec",
    );
    rm.verdict = Some("allow".into());
    rm.inputs = json!({ "command": "rm -rf /srv/app/conf" });
    rm.safeguards = Some(json!({ "backup": { "paths": ["/srv/app/conf"] } }));
    ledger.append(rm).unwrap();
    let toucher = last_touched(&ledger, "/srv/app/conf/app.yaml", None)
        .unwrap()
        .unwrap();
    assert_eq!(toucher.actor, "agent:janitor-bot");
    assert_eq!(toucher.summary, "rm -rf /srv/app/conf");
    // `/srv/app/config` is not under `/srv/app/conf`.
    assert_eq!(
        last_touched(&ledger, "/srv/app/config", None).unwrap(),
        None
    );

    // An edit recorded without a backup (backups off): its relative path against its cwd.
    let mut edit = Entry::new(event::DECISION, NOW_MS - 20_000, agent("editor"), "edit");
    edit.verdict = Some("allow".into());
    edit.cwd = Some("/srv/app".into());
    edit.inputs = json!({ "file_path": "conf/app.yaml" });
    ledger.append(edit).unwrap();
    // A write that ran without asking the gate at all.
    let mut unguarded = Entry::new(
        event::UNGUARDED_RESULT,
        NOW_MS - 10_000,
        agent("rogue"),
        "write",
    );
    unguarded.inputs = json!({ "file_path": "/srv/app/other.yaml" });
    ledger.append(unguarded).unwrap();
    let toucher = last_touched(&ledger, "/srv/app/conf/app.yaml", None)
        .unwrap()
        .unwrap();
    assert_eq!(toucher.actor, "agent:editor");
    let toucher = last_touched(&ledger, "/srv/app/other.yaml", None)
        .unwrap()
        .unwrap();
    assert_eq!(toucher.actor, "agent:rogue");
    // A read is not a touch.
    let mut read = Entry::new(event::DECISION, NOW_MS, agent("reader"), "read");
    read.verdict = Some("allow".into());
    read.inputs = json!({ "file_path": "/srv/app/other.yaml" });
    ledger.append(read).unwrap();
    let toucher = last_touched(&ledger, "/srv/app/other.yaml", None)
        .unwrap()
        .unwrap();
    assert_eq!(toucher.actor, "agent:rogue");
}

#[test]
fn the_last_toucher_is_found_past_a_page_of_unrelated_records() {
    let ledger = MemoryLedger::new();
    ledger
        .append(write_decision(
            NOW_MS - 10_000_000,
            agent("old-writer"),
            "/etc/app.toml",
        ))
        .unwrap();
    for n in 0..1_200 {
        ledger
            .append(write_decision(
                NOW_MS - 1_000_000 + n,
                agent("busy"),
                "/tmp/elsewhere",
            ))
            .unwrap();
    }
    let toucher = last_touched(&ledger, "/etc/app.toml", None)
        .unwrap()
        .unwrap();
    assert_eq!(toucher.actor, "agent:old-writer");
}

#[test]
fn keys_in_yaml_json_and_toml_are_compared_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "app.yaml",
            "server:\n  max_connections: 512\n  tls: true\nhosts: [a, b]\n",
        ),
        (
            "app.json",
            r#"{"server": {"max_connections": 512, "tls": true}, "hosts": ["a", "b"]}"#,
        ),
        (
            "app.toml",
            "hosts = [\"a\", \"b\"]\n[server]\nmax_connections = 512\ntls = true\n",
        ),
    ];
    for (name, text) in cases {
        let file = dir.path().join(name);
        std::fs::write(&file, text).unwrap();
        let path = file.display();
        for (yaml, seen, says) in [
            (
                format!("{{ file: {path}, key: server.max_connections, equals: 512 }}"),
                Seen::Ok,
                "as declared".to_owned(),
            ),
            (
                format!("{{ file: {path}, key: server.tls, equals: true }}"),
                Seen::Ok,
                "as declared".to_owned(),
            ),
            (
                format!("{{ file: {path}, key: hosts.1, equals: b }}"),
                Seen::Ok,
                "as declared".to_owned(),
            ),
            (
                format!("{{ file: {path}, key: server.max_connections, equals: 1024 }}"),
                Seen::Found,
                format!("{name}: server.max_connections is \"512\"; expected \"1024\""),
            ),
            (
                format!("{{ file: {path}, key: server, equals: x }}"),
                Seen::Found,
                format!("{name}: server is a table; expected \"x\""),
            ),
            (
                format!("{{ file: {path}, key: server.tls, present: true }}"),
                Seen::Ok,
                "present".to_owned(),
            ),
            (
                format!("{{ file: {path}, key: server.debug, present: true }}"),
                Seen::Found,
                format!("{name}: server.debug is missing; expected it present"),
            ),
            (
                format!("{{ file: {path}, key: server.debug, present: false }}"),
                Seen::Ok,
                "absent as declared".to_owned(),
            ),
            (
                format!("{{ file: {path}, key: server.tls, present: false }}"),
                Seen::Found,
                format!("{name}: server.tls is present (\"true\"); expected it absent"),
            ),
        ] {
            let seen = only(run(&spec(&yaml)), seen);
            assert!(seen.summary.contains(&says), "{yaml}: {}", seen.summary);
        }
    }
}

#[test]
fn a_missing_broken_or_unreadable_file_is_reported_for_what_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("gone.ini");
    let seen = only(
        run(&spec(&format!(
            "{{ file: {}, key: a.b, equals: 1 }}",
            missing.display()
        ))),
        Seen::Found,
    );
    assert!(
        seen.summary.contains("gone.ini is missing"),
        "{}",
        seen.summary
    );
    assert_eq!(seen.touched, [missing.display().to_string()]);
    // Declared absent: a missing file has no such key.
    only(
        run(&spec(&format!(
            "{{ file: {}, key: a.b, present: false }}",
            missing.display()
        ))),
        Seen::Ok,
    );
    // A file that no longer parses is drift of the knob it held.
    let broken = dir.path().join("app.json");
    std::fs::write(&broken, "{\"server\": ").unwrap();
    let seen = only(
        run(&spec(&format!(
            "{{ file: {}, key: server, present: true }}",
            broken.display()
        ))),
        Seen::Found,
    );
    assert!(
        seen.summary.contains("does not read as JSON"),
        "{}",
        seen.summary
    );
    // A path that cannot be read as a file: the watcher cannot tell.
    let a_dir = dir.path().join("conf.d.ini");
    std::fs::create_dir(&a_dir).unwrap();
    std::fs::set_permissions(&a_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let seen = only(
        run(&spec(&format!(
            "{{ file: {}, key: a, present: true }}",
            a_dir.display()
        ))),
        Seen::Unknown,
    );
    assert!(seen.summary.contains("cannot read"), "{}", seen.summary);
}

#[test]
fn whole_file_content_and_digest_are_compared() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("motd");
    std::fs::write(&file, "welcome\nauthorised use only\n").unwrap();
    let path = file.display();
    let sha = "9e5d9e43f0b1be3e4e5b3c4e2d27d7d5e6d7d0e4c9f0b6f2e1c4d0a3b2c1d0e9";
    let seen = only(
        run(&spec(&format!("{{ file: {path}, content_sha256: {sha} }}"))),
        Seen::Found,
    );
    assert!(seen.summary.contains("SHA-256"), "{}", seen.summary);
    let real = {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(std::fs::read(&file).unwrap());
        digest
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    only(
        run(&spec(&format!(
            "{{ file: {path}, content_sha256: {} }}",
            real.to_uppercase()
        ))),
        Seen::Ok,
    );
    only(
        run(&spec(&format!(
            "{{ file: {path}, content: \"welcome\\nauthorised use only\\n\" }}"
        ))),
        Seen::Ok,
    );
    let seen = only(
        run(&spec(&format!(
            "{{ file: {path}, content: \"welcome\\nno entry\\n\" }}"
        ))),
        Seen::Found,
    );
    assert_eq!(
        seen.summary,
        format!("{path} has changed: line 2 is \"authorised use only\"; expected \"no entry\"")
    );
}

#[test]
fn a_sysctl_is_read_under_its_proc_root() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("sys/net/ipv4");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("ip_forward"), "1\n").unwrap();
    std::fs::write(dir.join("tcp_rmem"), "4096\t131072\t6291456\n").unwrap();
    let proc_root = root.path().display();
    let seen = only(
        run(&spec(&format!(
            "{{ sysctl: net.ipv4.ip_forward, equals: 0, proc_root: {proc_root} }}"
        ))),
        Seen::Found,
    );
    assert_eq!(
        seen.summary,
        "sysctl net.ipv4.ip_forward is \"1\"; expected \"0\""
    );
    only(
        run(&spec(&format!(
            "{{ sysctl: net/ipv4/ip_forward, equals: 1, proc_root: {proc_root} }}"
        ))),
        Seen::Ok,
    );
    only(
        run(&spec(&format!(
            "{{ sysctl: net.ipv4.tcp_rmem, equals: \"4096 131072 6291456\", proc_root: {proc_root} }}"
        ))),
        Seen::Ok,
    );
    let seen = only(
        run(&spec(&format!(
            "{{ sysctl: net.bridge.bridge-nf-call-iptables, equals: 1, proc_root: {proc_root} }}"
        ))),
        Seen::Found,
    );
    assert!(
        seen.summary.contains("does not exist on this kernel"),
        "{}",
        seen.summary
    );
}

#[test]
fn the_real_proc_is_read_by_default() {
    // Every Linux kernel has this one; its value is whatever this machine has.
    let found = std::fs::read_to_string("/proc/sys/kernel/ostype").unwrap();
    only(
        run(&spec(&format!(
            "{{ sysctl: kernel.ostype, equals: \"{}\" }}",
            found.trim()
        ))),
        Seen::Ok,
    );
}

#[test]
fn a_unit_property_is_asked_of_systemctl_and_an_unusable_systemctl_is_unknown() {
    let watcher = spec("{ unit: nginx.service, property: Restart, equals: always }");
    let observations = run(&watcher);
    assert_eq!(observations.len(), 1);
    let o = &observations[0];
    assert_eq!(o.subject, "nginx.service: Restart");
    // On a machine booted with systemd the property is read; elsewhere (a container, this
    // one when systemd is not PID 1) systemctl says why it cannot, and that is unknown.
    let booted = Path::new("/run/systemd/system").is_dir();
    if booted {
        assert_ne!(o.seen, Seen::Unknown, "{o:#?}");
    } else {
        assert_eq!(o.seen, Seen::Unknown, "{o:#?}");
        assert!(o.summary.contains("systemctl"), "{}", o.summary);
    }
}

#[test]
fn a_containers_env_and_labels_are_compared() {
    let containers = TestContainers::default();
    containers.set(
        "web",
        ContainerFacts {
            state: "running".into(),
            env: BTreeMap::from([("LOG_LEVEL".into(), "debug".into())]),
            labels: BTreeMap::from([("tier".into(), "front".into())]),
        },
    );
    let ledger = MemoryLedger::new();
    let dbs = AnsweringDatabases::default();
    let e = env(NOW_MS, &ledger, &dbs, &containers);
    let watcher =
        spec("{ container: web, env: { LOG_LEVEL: info, TZ: UTC }, labels: { tier: front } }");
    let seen = only(watcher.run(&e), Seen::Found);
    assert_eq!(
        seen.summary,
        "container web: env LOG_LEVEL is \"debug\"; expected \"info\"; env TZ is missing; expected \"UTC\""
    );
    only(
        spec("{ container: web, labels: { tier: front } }").run(&e),
        Seen::Ok,
    );
    let seen = only(
        spec("{ container: db, labels: { tier: back } }").run(&e),
        Seen::Found,
    );
    assert_eq!(seen.summary, "container db does not exist");
    let nothing = env(NOW_MS, &ledger, &dbs, &NoContainers);
    only(
        spec("{ container: web, labels: { tier: front } }").run(&nothing),
        Seen::Unknown,
    );
}

#[test]
fn yaml_tags_and_number_keys_read_as_their_values() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("configuration.yaml");
    std::fs::write(
        &file,
        "http:\n  server_port: 8123\n  api_password: !secret http_password\nports:\n  443: https\n",
    )
    .unwrap();
    let path = file.display();
    only(
        run(&spec(&format!(
            "{{ file: {path}, key: http.server_port, equals: 8123 }}"
        ))),
        Seen::Ok,
    );
    only(
        run(&spec(&format!(
            "{{ file: {path}, key: http.api_password, equals: http_password }}"
        ))),
        Seen::Ok,
    );
    only(
        run(&spec(&format!(
            "{{ file: {path}, key: ports.443, equals: https }}"
        ))),
        Seen::Ok,
    );
}
