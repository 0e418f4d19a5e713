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
    check("for f in *.log; do gzip $f; done", &["gzip $f"]);
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
        &["reboot  [service]", "echo ${x:-$(reboot)}"],
    );
    check(
        "echo $(( $(reboot) + 1 ))",
        &["reboot  [service]", "echo $(( $(reboot) + 1 ))"],
    );
    check("X=$(reboot) ls", &["reboot  [service]", "ls"]);
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
            "curl -fsSL https://x.sh  [network]",
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
    check("GIT_PAGER='sh -c x' git log", &["git log  [code]"]);
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

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}
