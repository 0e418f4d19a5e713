//! Every flag, defined once: help text comes from here.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// Exit status for errors (bad usage, unreadable or invalid policy). Never 0.
pub const EXIT_ERROR: u8 = 1;
/// `exec`'s status when it did not run the command (refused, or could not decide): 125, as
/// `env`, `timeout` and `docker run` use for "the wrapper, not the command".
pub const EXEC_NOT_RUN: u8 = 125;

#[derive(Debug, Parser)]
#[command(
    name = "nightwatch",
    version,
    about = "The gate and the ledger around AI agents and robots on real servers.",
    long_about = "nightwatch decides every action an agent or a robot proposes (allow, deny with \
                  where to go instead, ask a human, or halt and notify) by one policy, and says why.",
    after_help = "Start with `nightwatch check 'cd /srv && docker compose up -d'`, then \
                  `nightwatch init` to write the default policy where you can edit it."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Decide one shell line by policy and explain the verdict.
    ///
    /// Every command the line would run is judged: pipelines, lists, substitutions, here-docs,
    /// and what wrappers such as sudo, xargs, find -exec, bash -c and ssh run. The strictest
    /// verdict wins. Exit status: 0 allow, 2 deny, 3 ask, 4 halt, 1 error.
    Check(CheckArgs),
    /// Write the built-in policy, with its comments, to a file you can edit.
    Init(InitArgs),
    /// Work with policy files.
    #[command(subcommand)]
    Policy(PolicyCommand),
    /// The agent's hook: reads the hook's JSON on stdin, answers in the agent's protocol.
    ///
    /// Before a tool call: decide by policy, record the decision, answer. After it: record the
    /// result against the decision. Anything that goes wrong is a refusal (exit 2, reason on
    /// stderr), never a silent pass.
    Hook(HookArgs),
    /// Add nightwatch's hooks to an agent's settings, or write hardened systemd units.
    ///
    /// For an agent: the hook runs a stable program (`nightwatch` on PATH; else this binary
    /// when it is not a build's output; else a copy in the data directory's `bin/`), written
    /// into this project's local settings unless --shared or --user says otherwise; the file
    /// is backed up first and installing again changes nothing. It prints the data directory
    /// and the policy the hook will use. `nightwatch doctor` checks the result.
    ///
    /// `systemd`: units for `nightwatch serve` and the resident gate (`nightwatch gate`), run
    /// as a dedicated user with the seed's hardening (NoNewPrivileges, ProtectSystem=strict,
    /// ProtectHome, PrivateTmp, an empty capability set, ...). Written to --unit-dir; enable
    /// them with `systemctl daemon-reload && systemctl enable --now nightwatch-serve`.
    Install(InstallArgs),
    /// Take nightwatch's hooks out of an agent's settings (the file is backed up first).
    Uninstall(UninstallArgs),
    /// Print a shell completion script, generated from these definitions.
    ///
    /// bash: `nightwatch completions bash > /etc/bash_completion.d/nightwatch`;
    /// zsh: `nightwatch completions zsh > "${fpath[1]}/_nightwatch"`;
    /// fish: `nightwatch completions fish > ~/.config/fish/completions/nightwatch.fish`.
    Completions(CompletionsArgs),
    /// Write the man pages, one per command, generated from these definitions.
    ///
    /// `nightwatch man --dir /usr/local/share/man/man1`, then `man nightwatch-check`. Without
    /// --dir, nightwatch(1) is printed.
    Man(ManArgs),
    /// Check the whole chain and say what to fix: the binary, the data directory and ledger,
    /// the policy, the resident gate, and each agent's settings and hook (run for real on a
    /// harmless and a refused line). Exit status: 0 all good, 1 something to fix.
    Doctor(DoctorArgs),
    /// Decide a command, run it if allowed, and record its exit code, output and duration.
    ///
    /// For scripts and agents without hooks: `nightwatch exec -- systemctl restart app`.
    /// Exit status: the command's own (127 when it cannot be started, 128+N when signal N
    /// killed it); 125 when nightwatch did not run it: policy said deny, ask or halt (the
    /// verdict, record and reason are on stderr), or it could not decide or record the
    /// decision, so it failed closed.
    Exec(ExecArgs),
    /// What happened, and why: the ledger's records, oldest first.
    Log(LogArgs),
    /// One record in full, with its decision or result.
    Show(ShowArgs),
    /// Every record, for another system: one JSON object per line.
    Export(ExportArgs),
    /// Restore what a record's action changed, from the backup taken before it.
    ///
    /// Refuses when a file changed again since the action (and says what changed) unless
    /// --force; the undo is recorded. Exit status: 0 restored, 1 refused or failed.
    Undo(UndoArgs),
    /// The backups taken before writes.
    #[command(subcommand)]
    Backups(BackupsCommand),
    /// Let one asked call through: the same actor, the exact same call, once, until it expires.
    Approve(ApproveArgs),
    /// Refuse an asked call for good, and void any approval of it.
    Reject(RejectArgs),
    /// Send a halt's or an ask's escalation to the notifiers its record names, and record
    /// every attempt. The hook and exec run this in the background; run it by hand to resend.
    Escalate(EscalateArgs),
    /// The janitor: find what agents left behind (containers, worktrees, branches, temp
    /// paths), decide each by the policy's `sweep:` rules, remove only what is still as planned.
    #[command(subcommand)]
    Sweep(SweepCommand),
    /// Why is this still here (or gone), or awake (or asleep)? The janitor's or the idle
    /// controller's records about one target.
    Why(WhyArgs),
    /// Keep the policy loaded and the ledger open for the hooks (a resident gate).
    ///
    /// Listens on gate.sock in the data directory until killed. A hook finds it there and
    /// hands it the call, so the hook's own process stays small; without it, each hook does
    /// the work itself. Policy files are re-read when they change. Either way the answer, the
    /// record and the refusals are the same.
    Gate(GateArgs),
    /// Run the daemon: monitoring webhooks in, tasks and runbooks out, and the page and API
    /// that show what happened tonight.
    ///
    /// Listens on 127.0.0.1:8787 unless serve.yaml says otherwise. Accepts Uptime Kuma
    /// (/hooks/uptime-kuma), Alertmanager (/hooks/alertmanager) and mapped JSON hooks
    /// (/hooks/generic/NAME); every alert is stored before the reply and gets a record of what
    /// became of it. Routes in serve.yaml turn alerts into tasks that run a runbook (a script
    /// or an agent) through the gate. Open http://127.0.0.1:8787/ for the timeline. Stops
    /// cleanly on SIGINT or SIGTERM.
    Serve(ServeArgs),
    /// Check the ledger's hash chain and head checkpoint; report unguarded results.
    ///
    /// Exit status: 0 intact, 1 tampered or truncated (the first bad record is named),
    /// 2 unguarded (the chain is intact, but results ran with no recorded decision; the
    /// output starts with UNGUARDED and names them), 3 with --fleet: every chain is intact but
    /// the fleet store does not hold all of some host's (it has not shipped yet).
    Verify(VerifyArgs),
    /// The fleet this host is in (NIGHTWATCH_DATABASE_URL names its PostgreSQL database).
    #[command(subcommand)]
    Fleet(FleetCommand),
    /// Trust tiers: place an agent in one, and see whether its record has earned the next.
    #[command(subcommand)]
    Trust(TrustCommand),
    /// Look for what is quietly wrong on this host before it breaks, each with its fix.
    ///
    /// cloud-init that would re-provision the host if its instance id changed (new host
    /// keys, upgrades at boot); unattended-upgrades that reboots by itself; no memory guard
    /// (earlyoom, systemd-oomd, nohang); the clock unsynchronised (timedatectl) or skewed
    /// against --date-url servers' Date headers (NIGHTWATCH_NOW moves the time judged); a
    /// disk or its inodes near full; Docker without a log size limit. `nightwatch serve`
    /// runs the same checks on a schedule (serve.yaml: watch.watchers.NAME.hazards), and
    /// there also finds a clock set back between two runs.
    ///
    /// Exit status: 0 nothing found, 5 a hazard found, 6 nothing found but some check could
    /// not tell (it says why), 1 usage or other error.
    Hazards(HazardsArgs),
}

#[derive(Debug, Args)]
pub struct HazardsArgs {
    /// Look at the host laid out under this directory (its etc/, proc/, var/, run/ and mount
    /// points), not this one; timedatectl is then not asked unless --timedatectl says which.
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub root: PathBuf,
    /// One JSON object: every check with what it saw, its fix and its evidence.
    #[arg(long)]
    pub json: bool,
    /// A filesystem whose space or inodes are this percent used or more is near full.
    #[arg(long, value_name = "PERCENT", default_value_t = 90, value_parser = clap::value_parser!(u8).range(0..=100))]
    pub disk_full: u8,
    /// How far the clock may be from a --date-url server's: 2s, 500ms, 1m.
    #[arg(long, value_name = "DURATION", default_value = "2s")]
    pub max_skew: String,
    /// Compare the clock with this server's HTTP Date header (repeatable).
    #[arg(long = "date-url", value_name = "URL")]
    pub date_urls: Vec<String>,
    /// Do not look for this hazard (repeatable): cloud-init-reprovision, unattended-reboot,
    /// no-memory-guard, clock-unsynchronised, clock-skew, clock-jump-backwards,
    /// disk-near-full, docker-unbounded-logs.
    #[arg(long, value_name = "ID")]
    pub ignore: Vec<String>,
    /// The timedatectl program to ask (default: timedatectl on PATH, when --root is /).
    #[arg(long, value_name = "PROGRAM")]
    pub timedatectl: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// Check every host's chain as the fleet store holds it, and that it holds all of each
    /// (up to the head the host last reported, and for this host up to its own ledger's end).
    #[arg(long)]
    pub fleet: bool,
}

#[derive(Debug, clap::Subcommand)]
pub enum FleetCommand {
    /// The hosts, what of each one's ledger the fleet holds and how far behind it is, and
    /// the fleet's queue.
    Status(FleetStatusArgs),
}

#[derive(Debug, clap::Args)]
pub struct FleetStatusArgs {
    /// One JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum AgentName {
    Claude,
    Codex,
    Gemini,
}

impl From<AgentName> for nightwatch_agents::Agent {
    fn from(name: AgentName) -> Self {
        match name {
            AgentName::Claude => nightwatch_agents::Agent::Claude,
            AgentName::Codex => nightwatch_agents::Agent::Codex,
            AgentName::Gemini => nightwatch_agents::Agent::Gemini,
        }
    }
}

#[derive(Debug, Args)]
pub struct HookArgs {
    /// Which agent's protocol to speak.
    #[arg(value_enum)]
    pub agent: AgentName,
}

/// What `nightwatch install` sets up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum InstallTarget {
    Claude,
    Codex,
    Gemini,
    /// systemd units for the daemon and the resident gate.
    Systemd,
}

/// Which of an agent's settings files.
#[derive(Debug, Args)]
pub struct SettingsPlace {
    /// The project whose settings to change (default: the current directory).
    #[arg(long, value_name = "DIR", conflicts_with = "user")]
    pub project: Option<PathBuf>,
    /// The project's shared settings, committed with it (Claude's `.claude/settings.json`),
    /// instead of this user's local ones (`.claude/settings.local.json`).
    #[arg(long, conflicts_with = "user")]
    pub shared: bool,
    /// The user's settings, for every project.
    #[arg(long)]
    pub user: bool,
}

#[derive(Debug, Args)]
pub struct InstallArgs {
    #[arg(value_enum)]
    pub target: InstallTarget,
    #[command(flatten)]
    pub place: SettingsPlace,
    /// The nightwatch program the hook or the units run (default: see above).
    #[arg(long, value_name = "PROGRAM")]
    pub binary: Option<PathBuf>,
    /// Codex: record nightwatch's hooks as trusted in `$CODEX_HOME/config.toml`, the way
    /// Codex's own `/hooks` review does. Codex runs no hook you have not trusted, and says
    /// nothing about the ones it skips; without this flag, install says what to run and exits
    /// 1 until the hooks are trusted.
    #[arg(long)]
    pub trust: bool,
    /// systemd: the directory the units are written to.
    #[arg(long, value_name = "DIR", default_value = "/etc/systemd/system")]
    pub unit_dir: PathBuf,
    /// systemd: the account the units run as (a system user of its own; install prints how to
    /// create it). The data directory is systemd's StateDirectory, /var/lib/nightwatch.
    #[arg(long, value_name = "NAME", default_value = "nightwatch")]
    pub service_user: String,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write every page (nightwatch.1, nightwatch-check.1, ...) into this directory.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct UninstallArgs {
    #[arg(value_enum)]
    pub agent: AgentName,
    #[command(flatten)]
    pub place: SettingsPlace,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// The agents to check (default: all three).
    #[arg(value_enum)]
    pub agents: Vec<AgentName>,
    /// The project whose settings to check (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub project: Option<PathBuf>,
    /// Also run each installed agent whose binary is on PATH once, against a canary model
    /// on 127.0.0.1 that asks it to read a canary key under ~/.ssh: passes only when
    /// nightwatch refused that call and recorded it (nothing is sent anywhere else).
    #[arg(long)]
    pub live: bool,
}

#[derive(Debug, Args)]
pub struct ExecArgs {
    /// Session the command belongs to (default: $NIGHTWATCH_SESSION).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    #[command(flatten)]
    pub source: PolicySource,
    /// The command and its arguments, after `--`.
    #[arg(required = true, last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct LogArgs {
    /// From this time: 2am, 14:30, 90m, 3d, yesterday, today, or RFC 3339.
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// Before this time (same forms as --since).
    #[arg(long, value_name = "WHEN")]
    pub until: Option<String>,
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Actor kind (agent, script, janitor, ...) or id (claude-code, ...).
    #[arg(long, value_name = "NAME")]
    pub actor: Option<String>,
    #[arg(long, value_name = "VERDICT")]
    pub verdict: Option<String>,
    /// Tool name (exec, write, mcp__github__create_issue, ...).
    #[arg(long, value_name = "NAME")]
    pub tool: Option<String>,
    /// Alert id the records were triggered by.
    #[arg(long, value_name = "ID")]
    pub alert: Option<String>,
    /// Only the last N matching records.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// One JSON object per record, per line.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct GateArgs {}

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub source: PolicySource,
    /// The daemon's configuration. Default: $NIGHTWATCH_HOME/serve.yaml; without it, the
    /// defaults (loopback, no secrets, no routes: every alert is recorded, nothing runs).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Listen here instead (host:port; port 0 picks a free one and prints it).
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<std::net::SocketAddr>,
    /// Check the configuration and the policy, print what would run, and exit.
    #[arg(long)]
    pub check: bool,
}

#[derive(Debug, Subcommand)]
pub enum SweepCommand {
    /// List every candidate with keep or remove and the reasons. Removes nothing.
    ///
    /// Containers are judged only when an agent started them (the `nightwatch.agent` label)
    /// or `sweep.containers.scope` names them; every other container is kept, "not in the
    /// janitor's scope". The plan is recorded, so `nightwatch why` can answer before it is
    /// applied; kinds not swept (no Docker Engine, no repositories) are recorded and said.
    ///
    /// Exit status: 0, or 1 when some kind could not be listed (it is then not planned) or
    /// a configured Docker Engine could not be used.
    Plan(SweepPlanArgs),
    /// Carry out a plan: re-inspect each item and remove only those still in the state the
    /// plan saw (a fingerprint); report the ones that changed. A dry run unless --yes.
    /// With --session ID instead of --plan: plan that session's leftovers now and carry it out.
    ///
    /// Every removal goes through policy as the janitor's action; every keep and every result
    /// is recorded as soon as it happens, one item after another, so a run that is killed
    /// leaves a ledger that says exactly what was done. One sweep at a time per data
    /// directory (see --wait). Exit status: 0, or 1 when a removal failed or could not be
    /// tried (an unreachable Engine, an item that could not be inspected).
    Apply(SweepApplyArgs),
}

#[derive(Debug, Args)]
pub struct SweepPlanArgs {
    #[command(flatten)]
    pub source: PolicySource,
    /// Print the plan as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also write the plan (JSON) to this file, for `sweep apply --plan`.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Judge ages as of this time (2026-03-01T12:00:00Z, yesterday, ...), not now.
    #[arg(long, value_name = "TIME")]
    pub now: Option<String>,
    /// Plan only what agent session ID left behind (containers labelled
    /// nightwatch.session=ID, or created while one of its calls to a container tool was
    /// running, as the ledger shows), to remove whatever its age: for when a session has ended.
    /// Keep labels and open exec sessions still keep a container.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// When another sweep is running in this data directory, wait this long for it to
    /// finish (without it, exit at once and say so).
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    pub wait: u64,
}

#[derive(Debug, Args)]
pub struct SweepApplyArgs {
    #[command(flatten)]
    pub source: PolicySource,
    /// The plan `sweep plan --out` wrote.
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "session",
        conflicts_with = "session"
    )]
    pub plan: Option<PathBuf>,
    /// Plan now, and carry out, the reaping of what agent session ID left behind (as
    /// `sweep plan --session ID` would plan it): for a session that has ended.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Remove for real (without it, say what would be removed).
    #[arg(long)]
    pub yes: bool,
    /// Judge ages as of this time, not now.
    #[arg(long, value_name = "TIME")]
    pub now: Option<String>,
    /// When another sweep is running in this data directory, wait this long for it to
    /// finish (without it, exit at once and say so).
    #[arg(long, value_name = "SECONDS", default_value_t = 0)]
    pub wait: u64,
}

#[derive(Debug, Args)]
pub struct WhyArgs {
    /// A container id or name, a worktree path, `REPO#branch`, a swept path, or an app
    /// under idle control (serve.yaml: idle.apps): why it is awake, or why it slept.
    pub target: String,
    /// How many of the latest records to show.
    #[arg(long, default_value = "10")]
    pub last: usize,
}

#[derive(Debug, Args)]
pub struct UndoArgs {
    /// The record whose changes to restore: its decision, or its result.
    #[arg(
        value_name = "RECORD",
        required_unless_present = "session",
        conflicts_with = "session"
    )]
    pub record: Option<String>,
    /// Undo every backed-up action of this session, latest first.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Restore even over changes made since the action.
    #[arg(long)]
    pub force: bool,
    /// Who is undoing (default: $USER).
    #[arg(long, value_name = "NAME")]
    pub by: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum BackupsCommand {
    /// Remove backups past the policy's retention (`backup.retention`), keeping every one an
    /// undo may still need: those of the last `keep_days`, and the latest of every path.
    ///
    /// What was removed, and what was kept over the limits and why, is recorded.
    Prune(BackupsPruneArgs),
}

#[derive(Debug, Args)]
pub struct BackupsPruneArgs {
    #[command(flatten)]
    pub source: PolicySource,
}

#[derive(Debug, Args)]
pub struct ApproveArgs {
    /// The asked decision (r42).
    #[arg(value_name = "RECORD")]
    pub record: String,
    /// How long the approval holds: 30m, 2h, 1d (at most 7d).
    #[arg(long = "for", value_name = "DURATION", default_value = "1h")]
    pub valid_for: String,
    /// Who approves (default: $USER).
    #[arg(long, value_name = "NAME")]
    pub by: Option<String>,
    #[arg(long, value_name = "TEXT")]
    pub why: Option<String>,
}

#[derive(Debug, Args)]
pub struct RejectArgs {
    /// The asked decision (r42).
    #[arg(value_name = "RECORD")]
    pub record: String,
    /// Who rejects (default: $USER).
    #[arg(long, value_name = "NAME")]
    pub by: Option<String>,
    #[arg(long, value_name = "TEXT")]
    pub why: Option<String>,
}

#[derive(Debug, Args)]
pub struct EscalateArgs {
    #[command(flatten)]
    pub source: PolicySource,
    /// The halted or asked decision (r42).
    #[arg(value_name = "RECORD")]
    pub record: String,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Record id (r42) or sequence number (42).
    pub id: String,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Output format.
    #[arg(long, value_enum, default_value = "jsonl")]
    pub format: ExportFormat,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ExportFormat {
    Jsonl,
}

#[derive(Debug, Args)]
pub struct PolicySource {
    /// Policy file. Default: $NIGHTWATCH_HOME/policy.yaml when it exists, else the built-in policy.
    #[arg(long, value_name = "FILE", env = "NIGHTWATCH_POLICY")]
    pub policy: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub source: PolicySource,
    /// Print one JSON object instead of the explanation.
    #[arg(long)]
    pub json: bool,
    /// The whole command line, as one argument: quote it.
    #[arg(value_name = "LINE")]
    pub line: String,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Where to write the policy. Default: $NIGHTWATCH_HOME/policy.yaml.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Replace a file that already exists.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Run the examples inside a policy file and report each one.
    Test(PolicyTestArgs),
    /// Decide every recorded decision again under a candidate policy; list what would change.
    ///
    /// Each decision in the window is rebuilt from its record (tool and inputs, actor, session,
    /// host, time of day from its timestamp in the local zone, and the actor's trust tier at
    /// the time) and decided by --policy. What the gate did to the recorded verdict (an
    /// approval, pre-flight checks, a failed backup) is applied to the new one as recorded;
    /// checks are not run again. Every call whose verdict would change is listed: looser ones
    /// (deny -> allow, ...) first and marked LOOSER. Records that cannot be rebuilt are listed
    /// and counted, never skipped silently. Nothing is recorded. Exit status: 0 no verdict
    /// would change, 3 some would, 1 error (an unreadable or invalid policy, a bad time).
    Replay(PolicyReplayArgs),
    /// List a policy's rules, or explain one: its verdict, reason, checks, where it was
    /// written (the file, or the base it extends), and the lines of nightwatch's command
    /// corpora (about 2,000 everyday and hostile lines) it decides.
    ///
    /// Exit status: 0, or 1 on error (an unknown rule, a policy that does not load).
    Explain(PolicyExplainArgs),
    /// Compare two policies' verdicts over nightwatch's command corpora (about 2,000 everyday
    /// and hostile lines) and, with --lines, lines of your own.
    ///
    /// Every line whose verdict differs is listed with both verdicts and the rules that gave
    /// them, looser ones (deny -> allow, ...) first and marked LOOSER. Nothing is recorded.
    /// Exit status: 0 no verdict differs, 3 some do, 1 error.
    Diff(PolicyDiffArgs),
}

#[derive(Debug, Args)]
pub struct PolicyExplainArgs {
    #[command(flatten)]
    pub source: PolicySource,
    /// The rule to explain (its id); without it, every rule is listed.
    #[arg(value_name = "RULE")]
    pub rule: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct PolicyDiffArgs {
    /// The policy compared from: a policy file, or `builtin`.
    #[arg(value_name = "OLD")]
    pub old: String,
    /// The policy compared to: a policy file, or `builtin`.
    #[arg(value_name = "NEW")]
    pub new: String,
    /// Also decide these lines (a file of shell lines, one per line; `#` starts a comment).
    #[arg(long, value_name = "FILE")]
    pub lines: Option<PathBuf>,
    /// One JSON object: counts and the lines whose verdict differs.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct PolicyTestArgs {
    #[command(flatten)]
    pub source: PolicySource,
    /// Print JSON lines, one per example.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct PolicyReplayArgs {
    /// The candidate policy file to replay the ledger under.
    #[arg(long, value_name = "FILE")]
    pub policy: PathBuf,
    /// Replay decisions from this time: 2am, 14:30, 90m, 3d, yesterday, today, or RFC 3339.
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// Replay decisions before this time (same forms as --since).
    #[arg(long, value_name = "WHEN")]
    pub until: Option<String>,
    /// One JSON object: counts, the changes (looser first) and the records not rebuilt.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum TrustCommand {
    /// Place an agent in a trust tier: a human decision, recorded in the ledger with why.
    ///
    /// Its record in the tier starts again from here; rules with `tier:` see the new tier.
    /// Exit status: 0 recorded, 1 refused (a tier the policy's `trust.tiers` does not name, an
    /// empty --why) or error; nothing is recorded when refused.
    Set(TrustSetArgs),
    /// Each agent's tier, its record there, and whether policy's criteria say promote, demote
    /// or stay, with the numbers.
    ///
    /// An agent's tier is the latest `trust set` for it, else the policy's starting tier; its
    /// record counts decisions (allow, ask, halt, deny), undos, and results with failures since
    /// then. Promotion needs every `trust.promote` bound to hold (a failure rate with no
    /// results does not); any `trust.demote` bound crossed recommends demotion, which wins.
    /// Nothing is changed: `trust set` moves an agent. Exit status: 0, or 1 on error.
    Report(TrustReportArgs),
}

#[derive(Debug, Args)]
pub struct TrustSetArgs {
    /// The agent's actor id, as `nightwatch log` shows it (claude-code, codex, gemini-cli, ...).
    #[arg(value_name = "AGENT")]
    pub agent: String,
    /// One of the policy's `trust.tiers` (default: observe, draft, nonprod, prod).
    #[arg(value_name = "TIER")]
    pub tier: String,
    /// Why the agent belongs there: recorded, and required.
    #[arg(long, value_name = "TEXT")]
    pub why: String,
    /// Who decides (default: $USER, else "operator").
    #[arg(long, value_name = "NAME")]
    pub by: Option<String>,
    #[command(flatten)]
    pub source: PolicySource,
}

#[derive(Debug, Args)]
pub struct TrustReportArgs {
    /// Count only actions, results and undos from this time (2am, 90m, 3d, yesterday, RFC 3339);
    /// the tier and the days in it still come from the whole ledger.
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// One JSON array, one object per agent.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub source: PolicySource,
}
