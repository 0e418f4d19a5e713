//! Link options for the `nightwatch` binary.

fn main() {
    // The hook is a new process before every agent command. A position-independent executable
    // has every pointer in its tables relocated by the dynamic loader before `main` (35,000 of
    // them, with the janitor's Docker and git clients linked in), which costs about 0.3 ms a
    // call here. Linked at a fixed address, as Go links most operations tools, there is nothing
    // to relocate; the price is that the executable's own image is not randomised (libraries,
    // stack and heap still are). Build with NIGHTWATCH_PIE=1 to keep a PIE.
    println!("cargo::rerun-if-env-changed=NIGHTWATCH_PIE");
    let target = std::env::var("TARGET").unwrap_or_default();
    let keep_pie = std::env::var_os("NIGHTWATCH_PIE").is_some_and(|v| v == "1");
    if target.ends_with("linux-gnu") && !keep_pie {
        println!("cargo::rustc-link-arg-bins=-no-pie");
    }
}
