//! What every `Leases` must do: one holder at a time, told apart by a token that only grows;
//! an expired lease taken over; a stale holder's renew and release refused; and of hosts
//! acquiring at once, exactly one holder.

use crate::Backend;
use nightwatch_store::{Acquired, Lease};
use std::sync::{Arc, Barrier};

const JOB: &str = "janitor-sweep";

fn got(acquired: Acquired) -> Lease {
    match acquired {
        Acquired::Got(lease) => lease,
        Acquired::HeldBy(other) => panic!("expected the lease, but {other:?} holds it"),
    }
}

fn held_by(acquired: Acquired) -> Lease {
    match acquired {
        Acquired::HeldBy(other) => other,
        Acquired::Got(lease) => panic!("expected to stand down, but got {lease:?}"),
    }
}

pub fn one_holder_at_a_time_and_the_others_are_told_who_and_until_when(backend: &dyn Backend) {
    let place = backend.place();
    let leases = place.leases();
    let a = got(leases.acquire(JOB, "host-a", 60_000, 1_000).unwrap());
    assert_eq!(
        (a.name.as_str(), a.holder.as_str(), a.until_ms),
        (JOB, "host-a", 61_000)
    );
    // Another handle, as another host's daemon.
    let other = held_by(
        place
            .leases()
            .acquire(JOB, "host-b", 60_000, 30_000)
            .unwrap(),
    );
    assert_eq!(
        other, a,
        "the one standing down is told who holds it, until when"
    );
    assert!(other.held_at(60_999) && !other.held_at(61_000));
    // Another name is another lease.
    let report = got(place
        .leases()
        .acquire("report", "host-b", 1_000, 30_000)
        .unwrap());
    assert_eq!(report.holder, "host-b");
}

pub fn an_expired_lease_is_taken_over_with_a_higher_token(backend: &dyn Backend) {
    let place = backend.place();
    let leases = place.leases();
    let dead = got(leases.acquire(JOB, "host-a", 10_000, 0).unwrap());
    // Still held one millisecond before it ends.
    held_by(leases.acquire(JOB, "host-b", 10_000, 9_999).unwrap());
    let taken = got(place
        .leases()
        .acquire(JOB, "host-b", 10_000, 10_000)
        .unwrap());
    assert_eq!(taken.holder, "host-b");
    assert_eq!(taken.until_ms, 20_000);
    assert!(taken.token > dead.token, "{taken:?} after {dead:?}");
    assert_eq!(leases.list().unwrap(), vec![taken]);
}

pub fn a_stale_holder_cannot_renew_or_release(backend: &dyn Backend) {
    let place = backend.place();
    let leases = place.leases();
    let stale = got(leases.acquire(JOB, "host-a", 10_000, 0).unwrap());
    let fresh = got(leases.acquire(JOB, "host-b", 10_000, 15_000).unwrap());
    // host-a wakes up late and tries to go on as if it still held the lease.
    assert_eq!(leases.renew(&stale, 10_000, 16_000).unwrap(), None);
    assert!(!leases.release(&stale, 16_000).unwrap());
    assert_eq!(
        leases.list().unwrap(),
        vec![fresh.clone()],
        "nothing changed"
    );
    // The same holder with an old token is refused too (a restarted process's late finisher).
    let again = got(leases.acquire(JOB, "host-b", 10_000, 16_000).unwrap());
    assert!(again.token > fresh.token);
    assert_eq!(leases.renew(&fresh, 10_000, 17_000).unwrap(), None);
    assert!(!leases.release(&fresh, 17_000).unwrap());
    // An expired lease cannot be renewed, even before anyone took it.
    assert_eq!(leases.renew(&again, 10_000, 26_000).unwrap(), None);
}

pub fn renew_extends_and_release_frees_the_lease_at_once(backend: &dyn Backend) {
    let place = backend.place();
    let leases = place.leases();
    let a = got(leases.acquire(JOB, "host-a", 10_000, 0).unwrap());
    let renewed = leases
        .renew(&a, 10_000, 8_000)
        .unwrap()
        .expect("still held");
    assert_eq!((renewed.token, renewed.until_ms), (a.token, 18_000));
    let other = held_by(
        place
            .leases()
            .acquire(JOB, "host-b", 10_000, 15_000)
            .unwrap(),
    );
    assert_eq!(other.until_ms, 18_000);
    assert!(leases.release(&renewed, 16_000).unwrap());
    let b = got(place
        .leases()
        .acquire(JOB, "host-b", 10_000, 16_000)
        .unwrap());
    assert!(b.token > a.token);
}

pub fn tokens_only_grow_across_holders_releases_and_reopening(backend: &dyn Backend) {
    let place = backend.place();
    let mut last = 0;
    let mut now = 0;
    for round in 0..20 {
        let holder = ["host-a", "host-b", "host-c"][round % 3];
        let lease = got(place.leases().acquire(JOB, holder, 1_000, now).unwrap());
        assert!(
            lease.token > last,
            "round {round}: {} after {last}",
            lease.token
        );
        last = lease.token;
        if round % 2 == 0 {
            assert!(place.leases().release(&lease, now + 10).unwrap());
            now += 10;
        } else {
            now += 1_000;
        }
    }
}

pub fn hosts_acquiring_at_once_get_exactly_one_holder(backend: &dyn Backend) {
    const HOSTS: usize = 8;
    let place: Arc<dyn crate::Place> = Arc::from(backend.place());
    for round in 0..10i64 {
        let now = round * 1_000;
        let barrier = Arc::new(Barrier::new(HOSTS));
        let threads: Vec<_> = (0..HOSTS)
            .map(|n| {
                let leases = place.leases();
                let barrier = barrier.clone();
                std::thread::spawn(move || {
                    barrier.wait();
                    leases
                        .acquire(JOB, &format!("host-{n}"), 1_000, now)
                        .unwrap()
                })
            })
            .collect();
        let answers: Vec<Acquired> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        let winners: Vec<&Lease> = answers
            .iter()
            .filter_map(|a| match a {
                Acquired::Got(lease) => Some(lease),
                Acquired::HeldBy(_) => None,
            })
            .collect();
        assert_eq!(winners.len(), 1, "round {round}: {answers:?}");
        let winner = winners[0];
        for answer in &answers {
            if let Acquired::HeldBy(other) = answer {
                assert_eq!(other, winner, "round {round}: every loser names the winner");
            }
        }
        assert_eq!(place.leases().list().unwrap(), vec![winner.clone()]);
    }
}
