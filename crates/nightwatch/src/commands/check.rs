use crate::cli::CheckArgs;
use crate::report;
use nightwatch_core::{Action, Verdict};

pub fn run(args: CheckArgs) -> anyhow::Result<u8> {
    let (policy, origin) = super::load_policy(&args.source)?;
    let decision = policy.decide(&Action::exec(args.line.clone()));
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
