//! TLS to a real PostgreSQL server: the tests' own cluster with TLS switched on, its
//! certificate signed by a certificate authority made here with `openssl`. Asked for
//! (`sslmode=require`, `verify-full`), TLS is used and the server verified; a server that
//! cannot be verified, or has no TLS, is refused; not asked for, nothing changes.

mod support;

use nightwatch_postgres::{PgStores, query_returns_row};
use nightwatch_test_postgres::{certificate_authority, issue_test_certificates};
use std::time::{Duration, Instant};

/// The error of opening the stores at `url`, which must fail.
fn refused(url: &str) -> String {
    match PgStores::connect(url, "h1") {
        Ok(_) => panic!("{url} was opened"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn tls_is_used_and_verified_when_asked_for_and_refused_when_it_cannot_be() {
    let server = support::own_server();
    let db = server.database();
    let url = db.url.clone();
    assert!(!url.contains('?'), "{url}");
    let is_tls = "SELECT 1 FROM pg_stat_ssl WHERE pid = pg_backend_pid() AND ssl";
    let is_plain = "SELECT 1 FROM pg_stat_ssl WHERE pid = pg_backend_pid() AND NOT ssl";
    let wait = Duration::from_secs(10);

    // A server without TLS, asked for it: refused, saying so, never talked to in the clear.
    let why = refused(&format!("{url}?sslmode=require"));
    assert!(why.contains("TLS"), "{why}");

    // Switch TLS on, with a certificate for 127.0.0.1 signed by the test's authority.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let certificates = issue_test_certificates(d, support::cluster_owner());
    let other_ca = certificate_authority(d, "other-ca");
    let mut admin = server.client(&db);
    for setting in certificates.server_settings() {
        admin.batch_execute(&setting).unwrap();
    }
    let ca = &certificates.ca;
    let verified = format!("{url}?sslmode=verify-full&sslrootcert={}", ca.display());
    let deadline = Instant::now() + Duration::from_secs(20);
    while query_returns_row(&verified, "SELECT 1", wait).is_err() {
        assert!(
            Instant::now() < deadline,
            "TLS never came up on the test cluster"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // Asked for, with the authority: the stores open (migrations and all) over TLS.
    for asked in [
        verified.clone(),
        format!("{url}?sslmode=require&sslrootcert={}", ca.display()),
    ] {
        PgStores::connect(&asked, "h1").unwrap_or_else(|e| panic!("{asked}: {e}"));
        assert!(query_returns_row(&asked, is_tls, wait).unwrap(), "{asked}");
    }
    let pairs = format!(
        "host=127.0.0.1 port={} user=postgres dbname={} sslmode=require sslrootcert='{}'",
        url.rsplit_once(':').unwrap().1.split('/').next().unwrap(),
        db.name,
        ca.display()
    );
    assert!(query_returns_row(&pairs, is_tls, wait).unwrap(), "{pairs}");

    // Another authority's server, or the public authorities only: refused, naming why.
    let other = format!("{url}?sslmode=require&sslrootcert={}", other_ca.display());
    let why = refused(&other);
    assert!(why.to_lowercase().contains("certificate"), "{why}");
    let why = refused(&format!("{url}?sslmode=require"));
    assert!(why.to_lowercase().contains("certificate"), "{why}");
    let why = refused(&format!(
        "{url}?sslmode=require&sslrootcert={}",
        d.join("missing.pem").display()
    ));
    assert!(why.contains("sslrootcert"), "{why}");

    // Not asked for: the connection is made as before, in the clear.
    assert!(query_returns_row(&url, is_plain, wait).unwrap());
    assert!(query_returns_row(&format!("{url}?sslmode=prefer"), is_plain, wait).unwrap());

    // Leave the cluster as the other tests of this binary found it.
    admin.batch_execute("ALTER SYSTEM RESET ssl").unwrap();
    admin.batch_execute("SELECT pg_reload_conf()").unwrap();
}
