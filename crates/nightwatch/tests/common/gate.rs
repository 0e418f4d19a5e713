//! `nightwatch gate`, the resident gate the hooks hand their calls to, for tests.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `nightwatch gate` in `home`, stopped when dropped.
pub struct Gate(Child);

impl Gate {
    /// Starts the gate on `home` and waits (up to 10 s) for its socket.
    pub fn start(home: &Path) -> Gate {
        let child = Command::new(env!("CARGO_BIN_EXE_nightwatch"))
            .arg("gate")
            .env("NIGHTWATCH_HOME", home)
            .env_remove("NIGHTWATCH_POLICY")
            .stderr(Stdio::null())
            .spawn()
            .expect("the gate starts");
        let socket = home.join("gate.sock");
        let started = Instant::now();
        while !socket.exists() {
            assert!(started.elapsed() < Duration::from_secs(10), "no socket");
            std::thread::sleep(Duration::from_millis(10));
        }
        Gate(child)
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
