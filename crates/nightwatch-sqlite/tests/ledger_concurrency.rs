//! Parallel hooks: many handles, one file, one chain.

mod common;

use common::decision;
use nightwatch_sqlite::SqliteLedger;
use nightwatch_store::{Ledger, LedgerReader, verify};
use std::sync::{Arc, Barrier};

#[test]
fn sixteen_writers_with_their_own_connections_keep_one_chain() {
    const WRITERS: usize = 16;
    const EACH: usize = 500;
    let dir = tempfile::tempdir().unwrap();
    let barrier = Arc::new(Barrier::new(WRITERS));
    let handles: Vec<_> = (0..WRITERS)
        .map(|w| {
            let path = dir.path().to_path_buf();
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                // Each writer opens its own store, as a separate hook process would.
                let ledger = SqliteLedger::open(&path).unwrap();
                barrier.wait();
                for i in 0..EACH {
                    let n = (w * EACH + i) as i64;
                    ledger
                        .append(decision(
                            n,
                            &format!("sess-{w}"),
                            &format!("echo {i}"),
                            "allow",
                        ))
                        .unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let ledger = SqliteLedger::open(dir.path()).unwrap();
    let mut expected = 1u64;
    ledger
        .scan(&mut |r| {
            assert_eq!(r.seq, expected);
            expected += 1;
            Ok(())
        })
        .unwrap();
    assert_eq!(expected - 1, (WRITERS * EACH) as u64);
    let report = verify(&ledger).unwrap();
    assert_eq!(report.records, 8000);
    assert_eq!(report.first_bad, None);
    assert_eq!(report.head_checkpoint.map(|c| c.0), Some(8000));
    for w in 0..WRITERS {
        let f = nightwatch_ledger::Filter {
            session: Some(format!("sess-{w}")),
            ..Default::default()
        };
        assert_eq!(ledger.query(&f).unwrap().len(), EACH);
    }
}
