//! What the tests' throwaway PostgreSQL clusters share: `nightwatch-postgres`'s (one cluster
//! per test binary, `tests/support/mod.rs`) and the fleet tests' (a cluster a test stops and
//! starts, `nightwatch`'s `tests/common/postgres.rs`). Debian's server binaries, the user a
//! cluster runs as, a free port on 127.0.0.1, and a certificate authority with a server
//! certificate for TLS.
//!
//! Each harness starts its cluster and talks to it itself: this crate names no PostgreSQL
//! driver (only `nightwatch-postgres` may) and runs no program but `pg_config`, `initdb` and
//! `openssl`.
//! Missing programs fail the tests, saying what to install; nothing is skipped.

use std::path::{Path, PathBuf};
use std::process::Command;

/// What [`find_bindir`] finding nothing means, and what to install; a harness adds what else
/// would do, if anything.
pub const SERVER_BINARIES_MISSING: &str = "PostgreSQL's server binaries were not found (looked \
     at `pg_config --bindir` and /usr/lib/postgresql/*/bin/initdb): install Debian's \
     `postgresql` package (scripts/test does)";

/// Debian's binaries: `pg_config --bindir`, else the newest `/usr/lib/postgresql/*/bin`; a
/// directory only when it holds both `initdb` and `postgres`.
pub fn find_bindir() -> Option<PathBuf> {
    let has_initdb = |dir: &Path| dir.join("initdb").is_file() && dir.join("postgres").is_file();
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output()
        && out.status.success()
    {
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if has_initdb(&dir) {
            return Some(dir);
        }
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse().ok()?;
            Some((version, e.path().join("bin")))
        })
        .filter(|(_, bin)| has_initdb(bin))
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

/// The `postgres` user's uid and gid, from `/etc/passwd`.
pub fn postgres_user() -> Option<(u32, u32)> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        (fields.first() == Some(&"postgres") && fields.len() > 3)
            .then(|| Some((fields[2].parse().ok()?, fields[3].parse().ok()?)))
            .flatten()
    })
}

/// Who a throwaway cluster runs as: Debian's `postgres` user when the tests run as root
/// (`initdb` refuses root), else the tests' own user (`None`). As root without that user,
/// panics saying what to install.
pub fn cluster_owner() -> Option<(u32, u32)> {
    // SAFETY: geteuid cannot fail and touches no memory of ours.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    Some(postgres_user().unwrap_or_else(|| {
        panic!(
            "running as root, the test cluster must run as Debian's `postgres` user, which does \
             not exist: install the `postgresql` package, or run as another user"
        )
    }))
}

/// A port of 127.0.0.1 nothing listens on right now, for a server a test starts a moment later.
/// Chosen below the kernel's ephemeral range: a port handed out for `bind(0)` was free for
/// anyone's next `bind(0)` or outgoing connection too, and a test server lost its port that way
/// (`Address already in use`). Below the range only an explicit bind can take it.
pub fn free_port() -> u16 {
    use std::hash::{BuildHasher, RandomState};
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    const LOWEST: u16 = 10_000;
    let span = ephemeral_low.saturating_sub(LOWEST);
    if span < 1_000 {
        // An unusual range: the kernel's choice, as before.
        return std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port on 127.0.0.1");
    }
    // A random place to start, so tests running at once rarely try the same ports.
    let start = RandomState::new().hash_one(std::process::id()) % u64::from(span);
    (0..u64::from(span))
        .map(|i| LOWEST + u16::try_from((start + i) % u64::from(span)).unwrap_or(0))
        .find(|&port| std::net::TcpListener::bind(("127.0.0.1", port)).is_ok())
        .expect("a free port on 127.0.0.1 below the ephemeral range")
}

/// What [`issue_test_certificates`] made.
pub struct TestCertificates {
    /// The authority's certificate (PEM): what a client verifies the server with.
    pub ca: PathBuf,
    /// The server's certificate (PEM), for `ssl_cert_file`.
    pub server_certificate: PathBuf,
    /// The server's private key (PEM, mode 0600), for `ssl_key_file`.
    pub server_key: PathBuf,
}

impl TestCertificates {
    /// The statements that switch a running server's TLS on with these files (superuser).
    pub fn server_settings(&self) -> [String; 4] {
        [
            format!(
                "ALTER SYSTEM SET ssl_cert_file = '{}'",
                self.server_certificate.display()
            ),
            format!(
                "ALTER SYSTEM SET ssl_key_file = '{}'",
                self.server_key.display()
            ),
            "ALTER SYSTEM SET ssl = on".to_owned(),
            "SELECT pg_reload_conf()".to_owned(),
        ]
    }
}

/// A test certificate authority and a server certificate it signed for 127.0.0.1 (subject
/// alternative names IP:127.0.0.1 and DNS:localhost), made in `dir` with `openssl` and valid
/// for two days: `ca.pem` and `ca.key`, `server.pem` and `server.key`. `dir` and the server's
/// files belong to `owner` (a cluster's, from [`cluster_owner`]; `None` leaves them as made),
/// so the server can read them, and its key is mode 0600, as PostgreSQL requires.
pub fn issue_test_certificates(dir: &Path, owner: Option<(u32, u32)>) -> TestCertificates {
    let ca = certificate_authority(dir, "ca");
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=127.0.0.1",
        ],
    );
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\n",
    )
    .expect("the server certificate's extensions written");
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            "2",
            "-extfile",
            "server.ext",
        ],
    );
    let certificates = TestCertificates {
        ca,
        server_certificate: dir.join("server.pem"),
        server_key: dir.join("server.key"),
    };
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        &certificates.server_key,
        std::fs::Permissions::from_mode(0o600),
    )
    .expect("the server's key made private");
    if let Some((uid, gid)) = owner {
        for path in [
            dir,
            certificates.server_key.as_path(),
            certificates.server_certificate.as_path(),
        ] {
            std::os::unix::fs::chown(path, Some(uid), Some(gid))
                .unwrap_or_else(|e| panic!("{} given to the cluster's owner: {e}", path.display()));
        }
    }
    certificates
}

/// A certificate authority `name` in `dir`, valid for two days: its key `name.key` and its
/// self-signed certificate `name.pem`, which it returns.
pub fn certificate_authority(dir: &Path, name: &str) -> PathBuf {
    let (key, pem, subject) = (
        format!("{name}.key"),
        format!("{name}.pem"),
        format!("/CN=nightwatch test {name}"),
    );
    openssl(
        dir,
        &[
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", &key, "-out", &pem,
            "-days", "2", "-subj", &subject,
        ],
    );
    dir.join(pem)
}

/// A new cluster's data directory `data`, made by `bindir`'s `initdb` as `owner` (see
/// [`cluster_owner`]): superuser `postgres`, trusted on every connection (the server listens
/// on 127.0.0.1 only), UTF-8 with the C locale, not synced (a test's cluster need not survive
/// a power cut).
pub fn init_cluster(bindir: &Path, data: &Path, owner: Option<(u32, u32)>) {
    let mut initdb = Command::new(bindir.join("initdb"));
    if let Some((uid, gid)) = owner {
        use std::os::unix::process::CommandExt;
        initdb.uid(uid).gid(gid);
    }
    if let Some(parent) = data.parent() {
        initdb.current_dir(parent);
    }
    let out = initdb
        .arg("-D")
        .arg(data)
        .args(["-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C"])
        .args(["--no-sync", "--no-instructions"])
        .output()
        .expect("initdb runs");
    assert!(
        out.status.success(),
        "initdb failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl runs (Debian's `openssl` package)");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
