//! `nightwatch hook AGENT`: the agent's hook. Whatever happens here, the agent gets an answer it
//! honours: a verdict, or a refusal (exit 2 with the reason on stderr). Never exit 1, which every
//! agent reads as "go ahead". This is the edge (stdin, stdout, exit status, the resident
//! gate's socket); the pipeline is nightwatch-host's `hook`.

use crate::cli::HookArgs;
use crate::commands::resident;
use crate::environment::Environment;
use nightwatch_agents::{Agent, Reply, reply_to_failure};
use nightwatch_host::hook::{self, World, answer};
use nightwatch_policy::Policy;
use nightwatch_store::Ledger;
use std::io::{Read, Write};
use std::sync::{Arc, OnceLock};

/// Largest hook input read; a larger one is refused.
pub const MAX_INPUT: u64 = 16 * 1024 * 1024;

/// The world of one hook process: opened on first use.
struct Local {
    env: Environment,
    ledger: OnceLock<Result<Arc<dyn Ledger>, String>>,
    guards: nightwatch_gate::LiveGuards,
}

impl World for Local {
    fn ledger(&self) -> anyhow::Result<&dyn Ledger> {
        let opened = self.ledger.get_or_init(|| {
            super::open_ledger_in(&crate::home::data_dir_in(&self.env))
                .map_err(|e| format!("{e:#}"))
        });
        match opened {
            Ok(ledger) => Ok(ledger),
            Err(error) => Err(anyhow::anyhow!("{error}")),
        }
    }

    fn policy(&self, env: &Environment) -> anyhow::Result<Arc<Policy>> {
        let (policy, _) = super::load_policy(&super::policy_source_in(env))?;
        let policy = Arc::new(policy);
        // This process answers one call and exits: freeing the compiled policy's thousands of
        // small allocations would cost more than deciding with it. The exit frees it.
        std::mem::forget(Arc::clone(&policy));
        Ok(policy)
    }

    fn guards(&self, env: &Environment) -> nightwatch_gate::LiveGuards {
        self.guards.with_places(crate::paths::places(env))
    }

    fn escalate(&self, record_id: &str, env: &Environment) {
        super::send_escalation_in_background(record_id, env);
    }
}

pub fn run(args: HookArgs) -> u8 {
    let agent = args.agent.into();
    hook::remember_panics();
    let env = Environment::of_process();
    let mut input = Vec::new();
    let reply = match std::io::stdin().take(MAX_INPUT + 1).read_to_end(&mut input) {
        Err(error) => reply_to_failure(agent, &format!("cannot read the hook input: {error}")),
        Ok(_) if input.len() as u64 > MAX_INPUT => {
            reply_to_failure(agent, "the hook input is larger than 16 MiB")
        }
        // A resident gate (`nightwatch gate`) answers without loading anything; without one,
        // this process does the same work itself.
        Ok(_) => match resident::ask(agent, &input, &env) {
            Some(reply) => reply,
            None => {
                let local = Local {
                    guards: nightwatch_gate::LiveGuards::new(&crate::home::data_dir_in(&env)),
                    env: env.clone(),
                    ledger: OnceLock::new(),
                };
                answer(agent, &input, &env, &local)
            }
        },
    };
    write_reply(&reply)
}

/// Reads the call and lets the resident gate answer it over `stream`; the exit status.
pub fn answer_through(
    stream: std::os::unix::net::UnixStream,
    agent: Agent,
    env: &Environment,
) -> u8 {
    let mut input = Vec::new();
    let reply = match std::io::stdin().take(MAX_INPUT + 1).read_to_end(&mut input) {
        Err(error) => reply_to_failure(agent, &format!("cannot read the hook input: {error}")),
        Ok(_) if input.len() as u64 > MAX_INPUT => {
            reply_to_failure(agent, "the hook input is larger than 16 MiB")
        }
        Ok(_) => resident::ask_on(stream, agent, &input, env),
    };
    write_reply(&reply)
}

fn write_reply(reply: &Reply) -> u8 {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(reply.stdout.as_bytes());
    let _ = stdout.flush();
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(reply.stderr.as_bytes());
    let _ = stderr.flush();
    reply.exit_code
}
