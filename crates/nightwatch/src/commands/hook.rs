//! `nightwatch hook AGENT`: the agent's hook. Whatever happens here, the agent gets an answer it
//! honours: a verdict, or a refusal (exit 2 with the reason on stderr). Never exit 1, which every
//! agent reads as "go ahead". This is the edge (stdin, stdout, exit status); the pipeline and
//! the resident gate's protocol are nightwatch-host's `hook` and `resident`.

use crate::cli::HookArgs;
use crate::environment::Environment;
use nightwatch_agents::{Agent, Reply};
use nightwatch_host::hook::{self, OneCall, answer, read_call};
use nightwatch_host::resident;
use std::io::Write;

pub fn run(args: HookArgs) -> u8 {
    let agent = args.agent.into();
    hook::remember_panics();
    let env = Environment::of_process();
    let reply = match read_call(agent, std::io::stdin()) {
        Err(refusal) => refusal,
        // A resident gate (`nightwatch gate`) answers without loading anything; without one,
        // this process does the same work itself.
        Ok(input) => match resident::ask(agent, &input, &env) {
            Some(reply) => reply,
            None => answer(agent, &input, &env, &OneCall::new(&env)),
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
    let reply = match read_call(agent, std::io::stdin()) {
        Err(refusal) => refusal,
        Ok(input) => resident::ask_on(stream, agent, &input, env),
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
