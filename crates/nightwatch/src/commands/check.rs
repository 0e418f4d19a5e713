use crate::cli::CheckArgs;
use crate::report;
use nightwatch_core::{Action, Verdict};

pub fn run(args: CheckArgs) -> anyhow::Result<u8> {
    let (policy, origin) = super::load_policy(&args.source)?;
    // The paths' other names as a hook in this directory and environment would see them, so
    // that `check` and the hook agree.
    let places = crate::paths::places(&crate::environment::Environment::of_process());
    let facts = nightwatch_gate::LiveFacts::new(&places, None);
    let decision = policy.decide_with(&Action::exec(args.line.clone()), &facts);
    // The process exits next; dropping the compiled policy piece by piece only costs time.
    std::mem::forget(policy);
    if args.json {
        println!("{}", report::decision_json(&args.line, &decision, &origin)?);
    } else {
        print!("{}", report::decision_text(&args.line, &decision, &origin));
    }
    Ok(exit_status(decision.verdict))
}

/// 0 only for allow, so `nightwatch check LINE && LINE` is safe in scripts.
pub fn exit_status(verdict: Verdict) -> u8 {
    match verdict {
        Verdict::Allow => 0,
        Verdict::Deny => 2,
        Verdict::Ask => 3,
        Verdict::Halt => 4,
    }
}
