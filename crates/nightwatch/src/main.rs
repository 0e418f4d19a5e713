//! The `nightwatch` binary: argument parsing and the edges (files, terminal, exit codes). All
//! judgement lives in the library crates.

mod cli;
mod commands;
mod report;

// The host (environment, clock, data directory, stores, engine) is nightwatch-host's; these
// names keep the commands' paths short.
use nightwatch_host::{clock, context, environment, home, host, paths, stores};

/// Times as operators type them: nightwatch-time's one grammar.
mod timespec {
    pub use nightwatch_time::parse_instant as parse;
}

use clap::Parser;
use std::process::ExitCode;

/// Stack for the worker thread. Analysis bounds its own recursion; this is headroom so that
/// nothing the parser does on a hostile line can reach the guard page.
const WORKER_STACK: usize = 64 * 1024 * 1024;

fn main() -> ExitCode {
    one_malloc_arena();
    let subcommand = std::env::args().nth(1);
    quiet_when_the_reader_goes(subcommand.as_deref());
    // An agent runs `nightwatch hook ...`: anything but 0 or 2 lets its call through, so every
    // failure on that path, even a bad command line, must be a refusal.
    let is_hook = subcommand.as_deref() == Some("hook");
    if is_hook {
        match std::panic::catch_unwind(commands::hook_through_resident_gate) {
            Ok(Some(code)) => return ExitCode::from(code),
            Ok(None) => {}
            Err(_) => {
                eprintln!("nightwatch: internal error in the hook; nothing was allowed");
                return ExitCode::from(2);
            }
        }
    }
    // `exec` that fails before running anything says so with its own status, never one a
    // command could have returned.
    let failure = match subcommand.as_deref() {
        Some("hook") => 2,
        Some("exec") => cli::EXEC_NOT_RUN,
        _ => cli::EXIT_ERROR,
    };
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            // Usage errors must not look like a verdict: `check` uses 2 for deny.
            return if error.use_stderr() {
                ExitCode::from(failure)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let worker = std::thread::Builder::new()
        .name("nightwatch".into())
        .stack_size(WORKER_STACK)
        .spawn(move || commands::run(cli));
    match worker.map(|handle| handle.join()) {
        Ok(Ok(Ok(code))) => ExitCode::from(code),
        Ok(Ok(Err(error))) => {
            eprintln!("nightwatch: {error:#}");
            ExitCode::from(failure)
        }
        Ok(Err(_)) | Err(_) => {
            eprintln!("nightwatch: internal error; nothing was allowed");
            ExitCode::from(failure)
        }
    }
}

/// A command whose reader goes away (`nightwatch log | head`) ends there, quietly, as `cat`
/// does, instead of panicking on its next write. The daemon and the resident gate keep
/// SIGPIPE ignored (a client that hangs up is an error on one socket, not the end of the
/// server), and so does the hook, whose every failure must be a refusal with exit 2.
fn quiet_when_the_reader_goes(subcommand: Option<&str>) {
    let checking_only = std::env::args().any(|a| a == "--check");
    if matches!(subcommand, Some("gate" | "hook"))
        || (subcommand == Some("serve") && !checking_only)
    {
        return;
    }
    // SAFETY: restores the default disposition of one signal before any thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// The work runs on a second thread, which glibc would give its own malloc arena: a heap it
/// grows one `mprotect` at a time, about a hundred system calls in a hook's life. The hook
/// runs before every agent command, so it shares the main arena instead.
fn one_malloc_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; it is called before any other thread
    // exists.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}
