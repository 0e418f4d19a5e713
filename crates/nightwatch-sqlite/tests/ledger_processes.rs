//! Many processes writing one ledger, and a writer killed mid-append: real processes (this test
//! binary re-run as a writer), a real SQLite file.

use nightwatch_ledger::{Entry, RecordActor, event};
use nightwatch_sqlite::SqliteLedger;
use nightwatch_store::{Ledger, LedgerReader, verify};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

const WRITER_DIR: &str = "NIGHTWATCH_TEST_WRITER_DIR";
const WRITER_COUNT: &str = "NIGHTWATCH_TEST_WRITER_COUNT";
const WRITER_NAME: &str = "NIGHTWATCH_TEST_WRITER_NAME";

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nightwatch-ledger-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

fn entry(writer: &str, index: usize) -> Entry {
    let actor = RecordActor {
        kind: "agent".to_owned(),
        id: writer.to_owned(),
    };
    let mut entry = Entry::new(
        event::DECISION,
        1_771_038_000_000 + index as i64,
        actor,
        "exec",
    );
    entry.inputs = serde_json::json!({ "command": format!("echo {writer} {index}") });
    entry.verdict = Some("allow".to_owned());
    entry.call_id = Some(format!("{writer}-{index}"));
    entry
}

/// Not a test on its own: the body of a writer process, run when the tests below start this
/// binary with the writer's environment. Prints one line per append, after it is durable.
#[test]
fn writer_process() {
    let (Ok(dir), Ok(count)) = (std::env::var(WRITER_DIR), std::env::var(WRITER_COUNT)) else {
        return;
    };
    let name = std::env::var(WRITER_NAME).unwrap_or_else(|_| "writer".to_owned());
    let count: usize = count.parse().expect("a count");
    let ledger = SqliteLedger::open(Path::new(&dir)).expect("the ledger opens");
    for index in 0..count {
        ledger.append(entry(&name, index)).expect("append succeeds");
        println!("appended {name}-{index}");
    }
}

fn spawn_writer(dir: &Path, name: &str, count: usize) -> Child {
    Command::new(std::env::current_exe().expect("this test binary"))
        .args([
            "--exact",
            "writer_process",
            "--nocapture",
            "--test-threads=1",
            "--quiet",
        ])
        .env(WRITER_DIR, dir)
        .env(WRITER_COUNT, count.to_string())
        .env(WRITER_NAME, name)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("a writer process starts")
}

#[test]
fn sixteen_processes_appending_500_each_make_one_chain_of_8000() {
    let dir = scratch("sixteen");
    let writers: Vec<Child> = (0..16)
        .map(|i| spawn_writer(&dir, &format!("w{i}"), 500))
        .collect();
    for writer in writers {
        let output = writer.wait_with_output().expect("the writer finishes");
        assert!(
            output.status.success(),
            "a writer failed (no 'database is locked' may reach a caller): {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let ledger = SqliteLedger::open(&dir).expect("the ledger opens");
    let report = verify(&ledger).expect("the ledger can be read");
    assert!(report.is_intact(), "{report:?}");
    assert_eq!(report.records, 8_000);
    let mut seqs = Vec::new();
    ledger
        .scan(&mut |record| {
            seqs.push(record.seq);
            Ok(())
        })
        .expect("scan");
    assert_eq!(seqs, (1..=8_000).collect::<Vec<u64>>(), "one line, no gaps");
    for writer in 0..16 {
        let call = format!("w{writer}-499");
        assert!(
            ledger.decision_for_call(&call).expect("query").is_some(),
            "{call} was lost"
        );
    }
}

#[test]
fn a_writer_killed_mid_append_loses_no_committed_record() {
    let dir = scratch("killed");
    let mut writer = spawn_writer(&dir, "victim", 1_000_000);
    let mut acknowledged = Vec::new();
    {
        let stdout = writer.stdout.take().expect("piped stdout");
        let mut lines = BufReader::new(stdout).lines();
        while acknowledged.len() < 300 {
            match lines.next() {
                Some(Ok(line)) => {
                    if let Some(call) = line.strip_prefix("appended ") {
                        acknowledged.push(call.to_owned());
                    }
                }
                _ => break,
            }
        }
        // SIGKILL while the writer is busy appending: no chance to clean up.
        let _ = writer.kill();
        // Keep reading what was already acknowledged before the kill landed.
        for line in lines.map_while(Result::ok) {
            if let Some(call) = line.strip_prefix("appended ") {
                acknowledged.push(call.to_owned());
            }
        }
    }
    let _ = writer.wait();
    assert!(
        acknowledged.len() >= 300,
        "the writer acknowledged only {}",
        acknowledged.len()
    );

    let ledger = SqliteLedger::open(&dir).expect("the ledger opens after the crash");
    let report = verify(&ledger).expect("readable");
    assert!(report.is_intact(), "after SIGKILL: {report:?}");
    assert!(report.records >= acknowledged.len() as u64);
    for call in &acknowledged {
        assert!(
            ledger.decision_for_call(call).expect("query").is_some(),
            "{call} was acknowledged as durable but is gone"
        );
    }
    // And the ledger takes new records after the crash, on the same chain.
    ledger
        .append(entry("after", 0))
        .expect("append after the crash");
    assert!(verify(&ledger).expect("readable").is_intact());
}
