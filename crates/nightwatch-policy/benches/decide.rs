//! How fast the gate decides shell lines, single thread.
//!
//! Run with `cargo bench -p nightwatch-policy --bench decide`. A plain `main` (no criterion):
//! it builds a 200-rule policy (the built-in rules plus generated ones), decides every line of
//! the everyday and hostile corpora of `crates/nightwatch/tests/corpus/` over and over for about
//! three seconds, and prints lines per second and the per-line latency distribution. The same
//! is measured for the shell analysis alone, for the rules alone (over lines analysed
//! beforehand) and for the built-in policy.

use nightwatch_core::{Action, Invocation};
use nightwatch_policy::{DEFAULT_POLICY_YAML, Policy};
use serde::Deserialize;
use std::hint::black_box;
use std::time::{Duration, Instant};

const RULES: usize = 200;
const WARM_UP: Duration = Duration::from_millis(500);
const RUN: Duration = Duration::from_secs(3);
const COMMAND: &str = "cargo bench -p nightwatch-policy --bench decide";

#[derive(Deserialize)]
struct Entry {
    line: String,
}

fn corpus(name: &str) -> Vec<String> {
    let path = format!(
        "{}/../nightwatch/tests/corpus/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let entries: Vec<Entry> = yaml_serde::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    entries.into_iter().map(|e| e.line).collect()
}

/// The built-in policy without its examples (they test the built-in rules, and the generated
/// rules below change some of their verdicts), followed by generated rules up to `total`.
fn big_policy_yaml(total: usize) -> String {
    let builtin = Policy::builtin(nightwatch_shell::analyse).rule_count();
    let rules_end = DEFAULT_POLICY_YAML
        .find("\nexamples:")
        .expect("the built-in policy has an examples: section");
    let mut yaml = DEFAULT_POLICY_YAML[..rules_end].to_string();
    yaml.push('\n');
    for i in 0..total.saturating_sub(builtin) {
        yaml.push_str(&generated_rule(i));
    }
    yaml
}

const TOOLS: &[&str] = &[
    "docker",
    "kubectl",
    "helm",
    "terraform",
    "aws",
    "gcloud",
    "az",
    "ansible-playbook",
    "psql",
    "mysql",
    "redis-cli",
    "npm",
    "cargo",
    "pip",
    "systemctl",
    "rsync",
    "scp",
    "podman",
    "nomad",
    "vault",
    "consul",
    "pulumi",
    "gh",
];

const PROJECTS: &[&str] = &[
    "billing", "search", "auth", "ledger", "web", "ingest", "reports", "mail",
];

/// One realistic rule of a team's policy, of one of a dozen shapes.
fn generated_rule(i: usize) -> String {
    let tool = TOOLS[(i / 12) % TOOLS.len()];
    let project = PROJECTS[i % PROJECTS.len()];
    let id = format!("team-{i:03}-{tool}");
    match i % 12 {
        0 => format!(
            "  - id: {id}\n    verdict: deny\n    reason: \"{tool} belongs on the dev host\"\n    \
             instead: \"ssh devbox '{tool} ...'\"\n    command: \"{tool} *\"\n    \
             host: [\"ci-*\", \"vm-{project}-*\"]\n\n"
        ),
        1 => format!(
            "  - id: {id}\n    verdict: ask\n    reason: \"deleting with {tool} needs a human\"\n    \
             command: [\"{tool} delete *\", \"{tool} rm *\", \"{tool} destroy *\"]\n\n"
        ),
        2 => format!(
            "  - id: {id}\n    verdict: allow\n    reason: \"{tool} read-only look around\"\n    \
             read_only: true\n    command: [\"{tool} {{list,ls,get,show,describe,status}}\", \
             \"{tool} version\"]\n\n"
        ),
        3 => format!(
            "  - id: {id}\n    verdict: deny\n    reason: \"no force on {project}\"\n    \
             command: [\"git push * --force* * {project}-*\", \"{tool} * --force*\"]\n\n"
        ),
        4 => format!(
            "  - id: {id}\n    verdict: halt\n    reason: \"the {project} database is production\"\n    \
             writes: [\"/srv/{project}/data/**\", \"/var/lib/{project}/**\"]\n    \
             deletes: [\"/srv/{project}/**\", \"!/srv/{project}/tmp/**\"]\n\n"
        ),
        5 => format!(
            "  - id: {id}\n    verdict: deny\n    reason: \"{project} secrets stay on disk\"\n    \
             reads: [\"{project}*.pem\", \"/etc/{project}/secrets/**\", \".{project}.env\"]\n\n"
        ),
        6 => format!(
            "  - id: {id}\n    verdict: ask\n    reason: \"{tool} talks to the network\"\n    \
             command: \"{tool} *\"\n    effects: [network]\n    time: \"22:00-06:00\"\n\n"
        ),
        7 => format!(
            "  - id: {id}\n    verdict: deny\n    reason: \"draft agents do not run {tool} as root\"\n    \
             command: \"{tool}\"\n    effects: [privilege]\n    tier: [observe, draft]\n\n"
        ),
        8 => format!(
            "  - id: {id}\n    verdict: ask\n    reason: \"deploying {project}\"\n    \
             command: [\"{tool} apply *\", \"{tool} deploy *\", \"{tool} up *\", \
             \"{tool} upgrade --install *\"]\n    actor: {{ kind: [agent], id: [\"claude*\", \"codex*\"] }}\n\n"
        ),
        9 => format!(
            "  - id: {id}\n    verdict: allow\n    reason: \"{project} scratch space\"\n    \
             paths: [\"/tmp/{project}/**\", \"~/scratch/{project}/**\"]\n    tool: [write, edit]\n\n"
        ),
        10 => format!(
            "  - id: {id}\n    verdict: halt\n    reason: \"{tool} on prod\"\n    \
             command: \"{tool} *\"\n    host: [\"prod-*\", \"{project}-prod*\"]\n    \
             effects: [service_control, process_control]\n\n"
        ),
        _ => format!(
            "  - id: {id}\n    verdict: deny\n    reason: \"{tool} must not run fetched code\"\n    \
             command: [\"{tool}\", \"{tool}-*\"]\n    effects_all: [network, runs_code]\n\n"
        ),
    }
}

struct Stats {
    lines: usize,
    per_second: f64,
    median: Duration,
    p99: Duration,
    p999: Duration,
    max: Duration,
    /// Time spent on each item, summed over the rounds.
    per_item: Vec<Duration>,
}

fn percentile(sorted: &[Duration], q: f64) -> Duration {
    // Nearest rank.
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Runs `f` over `items` round after round: a warm-up, then for about `RUN`, timing each call.
fn measure<T, R>(items: &[T], mut f: impl FnMut(&T) -> R) -> Stats {
    let start = Instant::now();
    while start.elapsed() < WARM_UP {
        for item in items {
            black_box(f(black_box(item)));
        }
    }
    let mut times = Vec::with_capacity(4_000_000);
    let mut per_item = vec![Duration::ZERO; items.len()];
    let start = Instant::now();
    while start.elapsed() < RUN {
        for (item, total) in items.iter().zip(&mut per_item) {
            let t = Instant::now();
            black_box(f(black_box(item)));
            let took = t.elapsed();
            times.push(took);
            *total += took;
        }
    }
    let wall = start.elapsed();
    times.sort_unstable();
    Stats {
        lines: times.len(),
        per_second: times.len() as f64 / wall.as_secs_f64(),
        median: percentile(&times, 0.5),
        p99: percentile(&times, 0.99),
        p999: percentile(&times, 0.999),
        max: *times.last().expect("at least one round"),
        per_item,
    }
}

fn micros(d: Duration) -> String {
    format!("{:.2}", d.as_secs_f64() * 1e6)
}

fn main() {
    let yaml = big_policy_yaml(RULES);
    let big = Policy::from_yaml(&yaml, nightwatch_shell::analyse)
        .unwrap_or_else(|e| panic!("generated policy: {e}"));
    assert_eq!(big.rule_count(), RULES);
    let builtin = Policy::builtin(nightwatch_shell::analyse);

    let mut lines = corpus("everyday.yaml");
    let everyday = lines.len();
    lines.extend(corpus("hostile.yaml"));
    let hostile = lines.len() - everyday;
    let actions: Vec<Action> = lines
        .iter()
        .map(|line| {
            let mut action = Action::exec(line.as_str());
            // What the hook supplies: this machine's name and the time of day.
            action.context.host = Some("devbox".to_string());
            action.context.minute_of_day = Some(14 * 60 + 30);
            action
        })
        .collect();
    let analysed: Vec<(&Action, Vec<Invocation>)> = lines
        .iter()
        .zip(&actions)
        .map(|(line, action)| (action, nightwatch_shell::analyse(line)))
        .collect();
    let invocations: usize = analysed.iter().map(|(_, i)| i.len()).sum();

    println!("nightwatch gate benchmark (single thread)");
    println!(
        "corpus: {} lines ({everyday} everyday, {hostile} hostile), {:.2} invocations per line",
        lines.len(),
        invocations as f64 / lines.len() as f64
    );
    println!(
        "policies: {} rules (built-in + generated), built-in {} rules",
        big.rule_count(),
        builtin.rule_count()
    );
    println!("each row: {WARM_UP:?} warm-up, then ~{RUN:?} timing every call with Instant");
    println!();

    let rows: Vec<(&str, Stats)> = vec![
        (
            "decide, 200-rule policy",
            measure(&actions, |a| big.decide(a)),
        ),
        (
            "decide, built-in policy",
            measure(&actions, |a| builtin.decide(a)),
        ),
        (
            "analysis only (nightwatch_shell::analyse)",
            measure(&lines, |l| nightwatch_shell::analyse(l)),
        ),
        (
            "rules only, 200-rule (decide_analysed)",
            measure(&analysed, |(a, i)| big.decide_analysed(a, i)),
        ),
    ];

    println!(
        "| {:<42} | {:>10} | {:>10} | {:>9} | {:>9} | {:>10} | {:>9} |",
        "what", "lines/s", "calls", "median µs", "p99 µs", "p99.9 µs", "max µs"
    );
    println!(
        "|{:-<44}|{:->12}|{:->12}|{:->11}|{:->11}|{:->12}|{:->11}|",
        "", "", "", "", "", "", ""
    );
    for (name, s) in &rows {
        println!(
            "| {:<42} | {:>10.0} | {:>10} | {:>9} | {:>9} | {:>10} | {:>9} |",
            name,
            s.per_second,
            s.lines,
            micros(s.median),
            micros(s.p99),
            micros(s.p999),
            micros(s.max)
        );
    }
    println!();
    // Where the time goes: the lines that cost most, and the share of analysis in each.
    let (decide, analysis) = (&rows[0].1, &rows[2].1);
    let total: Duration = decide.per_item.iter().sum();
    let mut order: Vec<usize> = (0..lines.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(decide.per_item[i]));
    println!(
        "costliest lines, 200-rule policy (share of all decide time, mean per decide, analysis share):"
    );
    for &i in order.iter().take(8) {
        let mut line = lines[i].replace('\n', "\\n");
        if line.len() > 70 {
            let cut = (0..=70)
                .rev()
                .find(|&c| line.is_char_boundary(c))
                .unwrap_or(0);
            line.truncate(cut);
            line.push('…');
        }
        let rounds = decide.lines as f64 / lines.len() as f64;
        println!(
            "  {:>5.1}%  {:>7.1} µs  analysis {:>3.0}%  {:>2} inv  {line}",
            100.0 * decide.per_item[i].as_secs_f64() / total.as_secs_f64(),
            decide.per_item[i].as_secs_f64() * 1e6 / rounds,
            100.0 * (analysis.per_item[i].as_secs_f64() / analysis.lines as f64)
                / (decide.per_item[i].as_secs_f64() / decide.lines as f64),
            analysed[i].1.len(),
        );
    }
    let globbed: Vec<usize> = (0..lines.len())
        .filter(|&i| {
            analysed[i].1.iter().any(|inv| {
                inv.effects
                    .paths()
                    .any(|(_, p)| p.contains(['*', '?', '[', '{']))
            })
        })
        .collect();
    let share = |s: &Stats| {
        let all: Duration = s.per_item.iter().sum();
        let part: Duration = globbed.iter().map(|&i| s.per_item[i]).sum();
        100.0 * part.as_secs_f64() / all.as_secs_f64()
    };
    println!(
        "lines touching a globbed path (`src/*.rs`): {} of {}, {:.0}% of 200-rule decide time, \
         {:.0}% with the built-in policy, {:.0}% of analysis time",
        globbed.len(),
        lines.len(),
        share(&rows[0].1),
        share(&rows[1].1),
        share(&rows[2].1)
    );
    println!();
    let goal = 100_000.0;
    let got = rows[0].1.per_second;
    println!(
        "goal: >= {goal:.0} lines/s with the 200-rule policy: {} ({got:.0} lines/s, p99 {} µs)",
        if got >= goal { "met" } else { "NOT met" },
        micros(rows[0].1.p99)
    );
    println!("reproduce: {COMMAND}");
}
