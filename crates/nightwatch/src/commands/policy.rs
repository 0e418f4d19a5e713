use crate::cli::PolicyTestArgs;

pub fn test(args: PolicyTestArgs) -> anyhow::Result<u8> {
    // Compile without running the examples at load, so that every failing one is listed.
    let (policy, origin) =
        nightwatch_host::policies::load_for_test(super::policy_file(&args.source).as_deref())?;
    let outcomes = policy.run_examples();
    let failed = outcomes.iter().filter(|o| !o.passed).count();
    for outcome in &outcomes {
        if args.json {
            println!("{}", serde_json::to_string(outcome)?);
            continue;
        }
        let mark = if outcome.passed { "ok  " } else { "FAIL" };
        let line = outcome.line.map(|l| format!(":{l}")).unwrap_or_default();
        let rule = outcome.rule.as_deref().unwrap_or("(default)");
        if outcome.passed {
            println!(
                "{mark} {} -> {} by {rule}",
                outcome.description, outcome.actual
            );
        } else {
            println!(
                "{mark} {origin}{line}: {} expected {} but got {} by {rule}: {}",
                outcome.description, outcome.expected, outcome.actual, outcome.reason
            );
        }
    }
    if !args.json {
        println!("{} passed, {} failed", outcomes.len() - failed, failed);
    }
    Ok(if failed == 0 {
        0
    } else {
        crate::cli::EXIT_ERROR
    })
}
