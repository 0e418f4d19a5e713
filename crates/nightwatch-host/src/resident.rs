//! The resident gate: `nightwatch gate` keeps the policy loaded and the ledger open, and hooks
//! hand it their calls over a Unix socket in the data directory (`gate.sock`), so a hook
//! process only reads its input, asks, and prints the answer.
//!
//! The hook looks for the socket first. When nothing listens there it does the work itself;
//! once it has sent a call, any failure is a refusal, never a silent pass and never a second
//! decision (the gate may have recorded the first). The gate decides with the hook's
//! environment (session, clock, policy), so the answer is the one the hook would have given.
//!
//! Wire format, one call per connection: a JSON header line `{"agent", "env", "input_len"}`,
//! then the hook's input bytes; the answer is one JSON object `{"stdout", "stderr",
//! "exit_code"}`. The socket is created owner-only: whoever can write the data directory can
//! already rewrite the ledger, so it is the same trust boundary.

use crate::environment::Environment;
use crate::hook::{MAX_INPUT, World, answer};
use anyhow::{Context as _, bail};
use nightwatch_agents::{Agent, Reply, reply_to_failure};
use nightwatch_policy::Policy;
use nightwatch_store::Ledger;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// How long a hook waits for the gate's answer (checks have their own, shorter deadlines).
const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);
/// Stack for each connection's thread: the same headroom the hook process gives itself.
const CONNECTION_STACK: usize = 64 * 1024 * 1024;
/// Longest header line read: the captured environment is a few hundred bytes.
const MAX_HEADER: u64 = 64 * 1024;

#[derive(Serialize, Deserialize)]
struct Request {
    agent: String,
    env: Environment,
    input_len: u64,
}

#[derive(Serialize, Deserialize)]
struct Response {
    stdout: String,
    stderr: String,
    exit_code: u8,
}

pub fn socket_path(data_dir: &Path) -> PathBuf {
    data_dir.join("gate.sock")
}

/// A connection to the resident gate of `env`'s data directory, or None when none listens.
pub fn connect(env: &Environment) -> Option<UnixStream> {
    UnixStream::connect(socket_path(&crate::home::data_dir_in(env))).ok()
}

/// The resident gate's answer, or None when no gate listens (the hook then answers itself).
pub fn ask(agent: Agent, input: &[u8], env: &Environment) -> Option<Reply> {
    connect(env).map(|stream| ask_on(stream, agent, input, env))
}

/// The answer over an open connection; from here on any failure is a refusal.
pub fn ask_on(stream: UnixStream, agent: Agent, input: &[u8], env: &Environment) -> Reply {
    match exchange(stream, agent, input, env) {
        Ok(reply) => reply,
        Err(error) => reply_to_failure(
            agent,
            &format!("the resident gate did not answer: {error:#}"),
        ),
    }
}

fn exchange(
    mut stream: UnixStream,
    agent: Agent,
    input: &[u8],
    env: &Environment,
) -> anyhow::Result<Reply> {
    stream.set_read_timeout(Some(ANSWER_TIMEOUT))?;
    stream.set_write_timeout(Some(ANSWER_TIMEOUT))?;
    let mut header = serde_json::to_vec(&Request {
        agent: agent.as_str().to_owned(),
        env: env.clone(),
        input_len: input.len() as u64,
    })?;
    header.push(b'\n');
    stream.write_all(&header)?;
    stream.write_all(input)?;
    stream.flush()?;
    let mut answer = Vec::new();
    stream.take(MAX_INPUT + 4096).read_to_end(&mut answer)?;
    let response: Response =
        serde_json::from_slice(&answer).context("its answer is not the gate's JSON")?;
    Ok(Reply {
        stdout: response.stdout,
        stderr: response.stderr,
        exit_code: response.exit_code,
    })
}

/// Listens on the data directory's socket, owner-only. A socket left by a gate that was
/// killed is replaced; one that another gate answers on is an error.
pub fn bind(data_dir: &Path) -> anyhow::Result<UnixListener> {
    std::fs::create_dir_all(data_dir)
        .with_context(|| format!("cannot create {}", data_dir.display()))?;
    let socket = socket_path(data_dir);
    if socket.exists() {
        if UnixStream::connect(&socket).is_ok() {
            bail!("a resident gate already answers on {}", socket.display());
        }
        // Nothing listens, so it is safe to replace.
        std::fs::remove_file(&socket)
            .with_context(|| format!("cannot remove the stale {}", socket.display()))?;
    }
    let listener = UnixListener::bind(&socket)
        .with_context(|| format!("cannot listen on {}", socket.display()))?;
    std::fs::set_permissions(&socket, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
    Ok(listener)
}

/// Answers hook calls on `listener`, each on a thread of its own, until the listener fails.
pub fn serve<W: World + Send + 'static>(listener: UnixListener, world: Arc<W>) {
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let world = Arc::clone(&world);
        let spawned = std::thread::Builder::new()
            .stack_size(CONNECTION_STACK)
            .spawn(move || serve_one(stream, world.as_ref()));
        if let Err(error) = spawned {
            eprintln!("nightwatch: cannot take a hook call: {error}");
        }
    }
}

fn serve_one(stream: UnixStream, world: &dyn World) {
    let _ = stream.set_read_timeout(Some(ANSWER_TIMEOUT));
    let mut reader = BufReader::new(&stream);
    let mut header = Vec::new();
    let request = reader
        .by_ref()
        .take(MAX_HEADER)
        .read_until(b'\n', &mut header)
        .map_err(anyhow::Error::from)
        .and_then(|_| Ok(serde_json::from_slice::<Request>(&header)?));
    let reply = match request {
        Err(error) => reply_to_failure(Agent::Claude, &format!("a malformed call: {error}")),
        Ok(request) => match request.agent.parse::<Agent>() {
            Err(error) => reply_to_failure(Agent::Claude, &error.to_string()),
            Ok(agent) if request.input_len > MAX_INPUT => {
                reply_to_failure(agent, "the hook input is larger than 16 MiB")
            }
            Ok(agent) => {
                let mut input = Vec::with_capacity(request.input_len as usize);
                match reader.take(request.input_len).read_to_end(&mut input) {
                    Ok(_) => answer(agent, &input, &request.env, world),
                    Err(error) => {
                        reply_to_failure(agent, &format!("cannot read the hook input: {error}"))
                    }
                }
            }
        },
    };
    let response = Response {
        stdout: reply.stdout,
        stderr: reply.stderr,
        exit_code: reply.exit_code,
    };
    let mut writer = &stream;
    if let Ok(bytes) = serde_json::to_vec(&response) {
        let _ = writer.write_all(&bytes);
    }
}

/// The gate's world: one ledger connection and the policies it has read, each re-read when
/// its file changes.
pub struct Resident {
    ledger: Arc<dyn Ledger>,
    guards: nightwatch_gate::LiveGuards,
    policies: crate::Policies,
}

impl Resident {
    /// The world of a gate in `data_dir`, its ledger open.
    pub fn open(data_dir: &Path) -> anyhow::Result<Resident> {
        Ok(Resident {
            ledger: crate::stores::ledger(data_dir)
                .with_context(|| format!("cannot open the ledger in {}", data_dir.display()))?,
            guards: nightwatch_gate::LiveGuards::new(data_dir),
            policies: crate::Policies::default(),
        })
    }
}

impl World for Resident {
    fn ledger(&self) -> anyhow::Result<&dyn Ledger> {
        Ok(&self.ledger)
    }

    fn policy(&self, env: &Environment) -> anyhow::Result<Arc<Policy>> {
        self.policies.get(crate::policies::policy_file(None, env))
    }

    fn guards(&self, env: &Environment) -> nightwatch_gate::LiveGuards {
        // One backup store for every call; the paths are the hook's.
        self.guards.with_places(crate::paths::places(env))
    }

    fn escalate(&self, record_id: &str, env: &Environment) {
        crate::host::send_escalation_in_background(record_id, env);
    }
}
