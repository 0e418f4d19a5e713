//! The APT parser held to APT itself: `apt-config -c FILE dump` reads the same file, and
//! both must accept or refuse it alike and agree on every value. The files are this
//! machine's own `/etc/apt/apt.conf.d` (Debian's, copied into `tests/fixtures/apt/`), a
//! Debian unattended-upgrades file, odd spellings, and generated text.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use nightwatch_hazards::apt::AptConfig;
use proptest::prelude::*;

/// What APT read from the file on top of the system's configuration: its values by
/// lowercased name, or its error.
fn apt_config(text: &str) -> Result<BTreeMap<String, String>, String> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("case.conf");
    std::fs::write(&file, text).unwrap();
    let output = Command::new("apt-config")
        .arg("-c")
        .arg(&file)
        .arg("dump")
        .output()
        .expect("this test needs APT's apt-config (apt install apt)");
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).into_owned());
    }
    let mut values = BTreeMap::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        // `Name "value";`: values hold no quote, so the last one before `";` opens it.
        let Some(body) = line.strip_suffix("\";") else {
            continue;
        };
        let Some((key, value)) = body.rsplit_once('"') else {
            continue;
        };
        let Some(key) = key.strip_suffix(' ') else {
            continue;
        };
        values.insert(percent_decoded(key).to_lowercase(), value.to_owned());
    }
    Ok(values)
}

/// `apt-config dump` writes a name's spaces and other odd bytes as `%20`.
fn percent_decoded(key: &str) -> String {
    let bytes = key.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn ours(text: &str) -> Result<AptConfig, String> {
    let mut config = AptConfig::new();
    config.read(text, "case").map_err(|e| e.to_string())?;
    Ok(config)
}

/// Both accept or both refuse; every value set here is APT's value; every `nwtest` value APT
/// holds is set here too.
fn agree(text: &str) -> Result<(), String> {
    match (ours(text), apt_config(text)) {
        (Err(_), Err(_)) => Ok(()),
        (Ok(_), Err(apt)) => Err(format!("APT refuses what we accept: {apt}")),
        (Err(us), Ok(_)) => Err(format!("we refuse what APT accepts: {us}")),
        (Ok(config), Ok(apt)) => {
            for (key, setting) in config.values() {
                // APT itself turns some values into lists after reading (Acquire::Languages).
                let made_a_list = apt.get(key).is_some_and(String::is_empty)
                    && apt.get(&format!("{key}::")) == Some(&setting.value);
                if apt.get(key) != Some(&setting.value) && !made_a_list {
                    return Err(format!(
                        "{key}: we read {:?}, APT {:?}",
                        setting.value,
                        apt.get(key)
                    ));
                }
            }
            for (key, value) in &apt {
                // `Name:: "item"` lines are lists' items, compared no further.
                let item = key.ends_with("::");
                if key.starts_with("nwtest")
                    && !item
                    && !value.is_empty()
                    && config.get(key).is_none()
                {
                    return Err(format!("{key}: APT reads {value:?}, we nothing"));
                }
            }
            Ok(())
        }
    }
}

#[test]
fn real_files_read_as_apt_reads_them() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/apt");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    assert!(names.len() >= 10);
    for path in names {
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            ours(&text).is_ok(),
            "{}: {:?}",
            path.display(),
            ours(&text).err()
        );
        agree(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

#[test]
fn refusals_are_apts() {
    for text in [
        "A \"1\";\nB \"2\"",
        "A b c;",
        "A \"1\" b;",
        "{ A 1; };",
        "#clear;",
        "#clear A B;",
        "A \"a\nb\";",
    ] {
        assert!(ours(text).is_err(), "{text:?}");
        assert!(apt_config(text).is_err(), "{text:?}");
    }
}

/// Statements made of APT's pieces, under names of the test's own (`Nwtest...`).
fn apt_text() -> impl Strategy<Value = String> {
    let name = "Nwtest[A-Za-z]{0,3}(::[A-Za-z]{1,3}){0,2}";
    let quoted = "\"[A-Za-z0-9 ./:_-]{0,6}\"";
    let piece = prop_oneof![
        4 => name.prop_map(|n| format!("{n} ")),
        4 => quoted.prop_map(|q| format!("{q} ")),
        2 => "[a-z0-9]{1,4}".prop_map(|w| format!("{w} ")),
        3 => Just(";".to_owned()),
        2 => Just("{".to_owned()),
        2 => Just("};".to_owned()),
        1 => Just("}".to_owned()),
        1 => Just("\n".to_owned()),
        1 => Just("// c \"x\" { ;\n".to_owned()),
        1 => Just("# c ;\n".to_owned()),
        1 => Just("/* c; } */".to_owned()),
        1 => name.prop_map(|n| format!("{n}:: ")),
    ];
    prop::collection::vec(piece, 0..24).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn generated_text_reads_as_apt_reads_it(text in apt_text()) {
        if let Err(why) = agree(&text) {
            prop_assert!(false, "{text:?}: {why}");
        }
    }
}
