//! A real PostgreSQL cluster for the fleet's end-to-end tests, which stop and start it: Debian's
//! binaries, `initdb` into a scratch directory, the server on 127.0.0.1 only (a free port, its
//! socket in that directory), run as Debian's `postgres` user when the tests run as root
//! (`initdb` refuses root). Stopped (immediately) and removed when dropped. Missing binaries
//! fail the test, saying what to install. Finding the binaries, the owner, the port and TLS
//! certificates is `nightwatch-test-postgres`'s, shared with `nightwatch-postgres`'s tests.

use nightwatch_test_postgres::{
    SERVER_BINARIES_MISSING, cluster_owner, find_bindir, free_port, init_cluster,
    issue_test_certificates,
};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

pub struct Cluster {
    bindir: PathBuf,
    dir: PathBuf,
    port: u16,
    owner: Option<(u32, u32)>,
    durable: bool,
}

impl Cluster {
    /// A new cluster with a database `fleet`, running, with `fsync` off (nothing a test checks
    /// needs to survive a power cut).
    pub fn start(name: &str) -> Cluster {
        Cluster::start_with(name, false)
    }

    /// As [`Cluster::start`]; `durable` keeps PostgreSQL's own `fsync` on (for benchmarks).
    pub fn start_with(name: &str, durable: bool) -> Cluster {
        let bindir = find_bindir().expect(SERVER_BINARIES_MISSING);
        let owner = cluster_owner();
        let dir = super::scratch("pg", name);
        if let Some((uid, gid)) = owner {
            std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).unwrap();
        }
        let port = free_port();
        let cluster = Cluster {
            bindir,
            dir,
            port,
            owner,
            durable,
        };
        init_cluster(&cluster.bindir, &cluster.dir.join("data"), owner);
        cluster.up();
        let made = cluster
            .command("createdb")
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &port.to_string(),
                "-U",
                "postgres",
                "fleet",
            ])
            .output()
            .expect("createdb runs");
        assert!(
            made.status.success(),
            "createdb: {}",
            String::from_utf8_lossy(&made.stderr)
        );
        cluster
    }

    /// The fleet database's connection string.
    pub fn url(&self) -> String {
        format!(
            "postgres://postgres@127.0.0.1:{}/fleet?connect_timeout=3",
            self.port
        )
    }

    /// Starts the server and waits until it takes connections.
    pub fn up(&self) {
        let options = format!(
            "-c listen_addresses=127.0.0.1 -p {} -k {} -c fsync={} -c max_connections=200",
            self.port,
            self.dir.display(),
            if self.durable { "on" } else { "off" }
        );
        let started = self
            .command("pg_ctl")
            .arg("-D")
            .arg(self.dir.join("data"))
            .args(["-o", &options, "-l"])
            .arg(self.dir.join("server.log"))
            .args(["-w", "-t", "60", "start"])
            .output()
            .expect("pg_ctl runs");
        assert!(
            started.status.success(),
            "pg_ctl start: {}{}",
            String::from_utf8_lossy(&started.stderr),
            std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
        );
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("the cluster did not take connections");
    }

    /// Stops the server at once, as a crash or an outage would.
    pub fn down(&self) {
        let _ = self
            .command("pg_ctl")
            .arg("-D")
            .arg(self.dir.join("data"))
            .args(["-m", "immediate", "-w", "stop"])
            .output();
    }

    /// Switches TLS on, with a certificate for 127.0.0.1 signed by a certificate authority
    /// made here with `openssl`; returns that authority's certificate (PEM).
    pub fn with_tls(&self) -> PathBuf {
        let certificates = issue_test_certificates(&self.dir, self.owner);
        for setting in certificates.server_settings() {
            self.query(&setting);
        }
        certificates.ca
    }

    /// Runs one query with `psql` and returns its unaligned output.
    pub fn query(&self, sql: &str) -> String {
        let out = self
            .command("psql")
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                "postgres",
            ])
            .args(["-d", "fleet", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql])
            .output()
            .expect("psql runs");
        assert!(
            out.status.success(),
            "psql {sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    fn command(&self, program: &str) -> Command {
        let path = match program {
            "psql" | "createdb" if !self.bindir.join(program).exists() => PathBuf::from(program),
            _ => self.bindir.join(program),
        };
        let mut command = Command::new(path);
        command.current_dir(&self.dir);
        if let Some((uid, gid)) = self.owner {
            command.uid(uid).gid(gid);
        }
        command
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.down();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
