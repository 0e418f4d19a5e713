//! Every parser here reads text from files an attacker or a bad day may have written:
//! none may panic, hang or grow without bound, whatever it is given.

use std::time::{Duration, Instant};

use nightwatch_hazards::{apt, clock, cloud_init, disk, docker};
use proptest::prelude::*;

/// Inputs that have broken parsers like these before.
const CORPUS: &[&str] = &[
    "",
    "\0",
    "\u{feff}APT::Periodic::Unattended-Upgrade \"1\";",
    "\"",
    "\"\"",
    ";;;;",
    "}",
    "{",
    "{}",
    "a{}",
    "a{};}",
    "#clear",
    "#clear;",
    "#include",
    "#include;",
    "#clear a b c;",
    "#clear{",
    "/*",
    "*/",
    "/* /* */ */",
    "//",
    "a::b::c:: \"x\";",
    "::: \":\";",
    "a \"b\"\"c\";",
    "a \"b\nc\";",
    "a\r\n\"b\";\r\n",
    "NTP=\nNTPSynchronized=\n=\n==\n",
    "System clock synchronized:\nNTP service:\n:\n::\n",
    "NTPSynchronized=yes\0\n",
    "\\040\\\\\\0\\777 \\ \\1 ",
    "/dev/x \\ \\0 \\00 \\000 \\3777",
    "{\"log-opts\": {\"max-size\": 10}}",
    "{\"log-driver\": null, \"log-opts\": []}",
    "!!binary AAAA",
    "*anchor",
    "&a [*a, *a]",
    "a: &a [*a]",
    "? complex\n: key",
    "Wed, 13 Mar 2024 10:15:42 +9999",
    "Mon, 31 Feb 2024 25:61:61 GMT",
    "99999999999999999999",
];

fn everything(text: &str) {
    let _ = apt::parse(text);
    let mut config = apt::AptConfig::new();
    let _ = config.read(text, "f");
    let _ = apt::read_by_apt(text);
    let _ = apt::truth(text);
    let _ = clock::parse_show(text);
    let _ = clock::parse_status(text);
    let _ = clock::judge_timedatectl(clock::interpret(text, text, true));
    let _ = clock::judge_timedatectl(clock::interpret(text, text, false));
    let _ = clock::parse_http_date(text);
    let _ = clock::judge_http_date("u", i64::MIN, i64::MAX, Some(text), Duration::MAX);
    let _ = disk::watched(&disk::parse_mounts(text));
    let _ = docker::judge(Some(text));
    let _ = cloud_init::current_instance_id(text);
    let _ = cloud_init::judge(&cloud_init::CloudInitFacts {
        installed: true,
        kernel_cmdline: Some(text.into()),
        configs: vec![("c".into(), text.into())],
        cached_instance_id: Some(text.into()),
        previous_instance_id: Some(text.into()),
        instance_data: Some(text.into()),
        ..Default::default()
    });
}

#[test]
fn the_hostile_corpus_never_panics() {
    for text in CORPUS {
        everything(text);
    }
}

#[test]
fn deep_and_long_inputs_stay_cheap() {
    let started = Instant::now();
    let deep = "a{".repeat(200_000);
    assert!(apt::parse(&deep).is_err());
    let long_key = format!("{} \"v\";", "k::".repeat(100_000));
    let _ = apt::parse(&long_key);
    let quotes = "\"".repeat(200_001);
    assert!(apt::parse(&quotes).is_err());
    // An unclosed comment runs to the end, as in APT.
    let comment = format!("/*{}", "{ a; /* ".repeat(100_000));
    assert_eq!(apt::parse(&comment), Ok(vec![]));
    let lines = "NTPSynchronized=yes\n".repeat(100_000);
    assert_eq!(clock::parse_show(&lines).unwrap().synchronized, Some(true));
    let mounts = "/dev/a / ext4 rw 0 0\n".repeat(20_000);
    assert_eq!(disk::watched(&disk::parse_mounts(&mounts)).len(), 1);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

/// Text made of APT's own pieces, so the parser's paths are reached, not just its first error.
fn apt_like() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("{".to_owned()),
        Just("}".to_owned()),
        Just(";".to_owned()),
        Just("\"".to_owned()),
        Just("::".to_owned()),
        Just("//".to_owned()),
        Just("/*".to_owned()),
        Just("*/".to_owned()),
        Just("#".to_owned()),
        Just("#clear ".to_owned()),
        Just("#include ".to_owned()),
        Just("\n".to_owned()),
        Just(" ".to_owned()),
        "[A-Za-z0-9_-]{1,8}",
        "\"[^\"\n]{0,8}\"",
        any::<char>().prop_map(String::from),
    ];
    prop::collection::vec(piece, 0..60).prop_map(|v| v.concat())
}

/// A key path and a value, written flat (`A::B "v";`) or as nested blocks.
fn assignment() -> impl Strategy<Value = (Vec<String>, String)> {
    (
        prop::collection::vec("[A-Za-z][A-Za-z0-9-]{0,6}", 1..4),
        "[A-Za-z0-9 :/._-]{0,10}",
    )
}

fn nested(path: &[String], value: &str) -> String {
    match path {
        [last] => format!("{last} \"{value}\";"),
        [first, rest @ ..] => format!("{first} {{\n  {}\n}};", nested(rest, value)),
        [] => String::new(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    #[test]
    fn nothing_panics_on_apt_like_text(text in apt_like()) {
        everything(&text);
    }

    #[test]
    fn nothing_panics_on_any_text(text in any::<String>()) {
        everything(&text);
    }

    #[test]
    fn nested_and_flat_spellings_agree(assignments in prop::collection::vec(assignment(), 1..8), comments in any::<bool>()) {
        let sep = if comments { "\n// a comment \"quoted\"\n# another\n/* and { one } */\n" } else { "\n" };
        let flat: Vec<String> = assignments.iter().map(|(p, v)| format!("{} \"{v}\";", p.join("::"))).collect();
        let deep: Vec<String> = assignments.iter().map(|(p, v)| nested(p, v)).collect();
        let mut a = apt::AptConfig::new();
        a.read(&flat.join(sep), "flat").unwrap();
        let mut b = apt::AptConfig::new();
        b.read(&deep.join(sep), "deep").unwrap();
        for (path, _) in &assignments {
            let key = path.join("::").to_uppercase();
            prop_assert_eq!(a.get(&key).map(|s| &s.value), b.get(&key).map(|s| &s.value));
        }
        // The last assignment to a name is the one that holds.
        let (path, value) = assignments.last().unwrap();
        prop_assert_eq!(a.get(&path.join("::")).map(|s| s.value.as_str()), Some(value.as_str()));
    }
}
