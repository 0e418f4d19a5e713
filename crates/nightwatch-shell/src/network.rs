//! Network destinations named in a command's text, and network use the command name alone does
//! not show (package installs, inline programs that open sockets).
//!
//! Hosts are reported lowercased, without scheme, user, port or path, IPv6 without brackets.
//! A destination computed at runtime (`https://$HOST/`) is left out: `network` with no host
//! means the destination is unknown.

use crate::effects::is_remote_path;
use crate::effects::{has_flag, positionals_of};
use nightwatch_core::{Arg, Effects};

/// Text in an inline program that opens a connection (Python, Node, Perl, Ruby, PHP).
const CODE_NETWORK: &[&str] = &[
    "socket",
    "Socket",
    "urllib",
    "requests",
    "http.client",
    "httpx",
    "aiohttp",
    "smtplib",
    "ftplib",
    "telnetlib",
    "paramiko",
    "fetch(",
    "axios",
    "XMLHttpRequest",
    "WebSocket",
    "LWP",
    "HTTP::Tiny",
    "Net::",
    "open-uri",
    "URI.open",
    "fsockopen",
    "curl_",
    "stream_socket_client",
    "Deno.connect",
    "Bun.connect",
];
/// Node modules that talk to the network, as `require('http')` or `from "node:net"` name them.
const NODE_NETWORK_MODULES: &[&str] = &["http", "https", "net", "dgram", "tls", "http2", "undici"];

/// DNS record types and classes: `dig example.com MX` names no host `MX`.
const DNS_WORDS: &[&str] = &[
    "A", "AAAA", "ANY", "AXFR", "CAA", "CNAME", "DNSKEY", "DS", "HINFO", "HTTPS", "IXFR", "MX",
    "NAPTR", "NS", "NSEC", "PTR", "RRSIG", "SOA", "SPF", "SRV", "SSHFP", "SVCB", "TLSA", "TXT",
    "IN", "CH", "HS",
];

// Options that take the next word, for tools the flag tables do not spell.
const HTTPIE_VALUED: &[&str] = &[
    "-a",
    "--auth",
    "-A",
    "--auth-type",
    "-o",
    "--output",
    "-p",
    "--print",
    "-P",
    "--history-print",
    "-s",
    "--style",
    "--session",
    "--session-read-only",
    "--proxy",
    "--cert",
    "--cert-key",
    "--cert-key-pass",
    "--verify",
    "--ssl",
    "--ciphers",
    "--timeout",
    "--max-redirects",
    "--max-headers",
    "--pretty",
    "--format-options",
    "--response-charset",
    "--response-mime",
    "--boundary",
    "--default-scheme",
    "--bearer",
];
const NC_VALUED: &[&str] = &[
    "-I",
    "-i",
    "-M",
    "-m",
    "-O",
    "-P",
    "-p",
    "-q",
    "-s",
    "-T",
    "-V",
    "-w",
    "-X",
    "-x",
    "-e",
    "-c",
    "-g",
    "-G",
    "--proxy",
    "--proxy-type",
    "--proxy-auth",
    "--exec",
    "--sh-exec",
    "--lua-exec",
    "--source",
    "--source-port",
    "--wait",
    "--idle-timeout",
    "--output",
    "--hex-dump",
    "--allow",
    "--allowfile",
    "--deny",
    "--denyfile",
    "--max-conns",
    "--ssl-cert",
    "--ssl-key",
    "--ssl-trustfile",
    "--ssl-ciphers",
    "--ssl-servername",
    "--ssl-alpn",
];
const TELNET_VALUED: &[&str] = &["-l", "-n", "-e", "-b", "-k", "-X"];
const MOSH_VALUED: &[&str] = &["-p", "--port", "--ssh", "--server", "--predict", "--family"];
const PING_VALUED: &[&str] = &[
    "-c", "-s", "-i", "-t", "-W", "-w", "-I", "-m", "-l", "-p", "-Q", "-S", "-M", "-T", "-F",
];
const TRACEROUTE_VALUED: &[&str] = &[
    "-f", "-g", "-i", "-m", "-N", "-p", "-q", "-s", "-t", "-w", "-z", "-A", "-M", "-O",
];
const MTR_VALUED: &[&str] = &[
    "-c", "-i", "-s", "-a", "-f", "-m", "-P", "-L", "-B", "-Q", "-G", "-Z", "-M",
];
// `-x ADDR` (reverse lookup) and `-q NAME` are left as operands: they name what is looked up.
const DIG_VALUED: &[&str] = &["-b", "-c", "-f", "-k", "-p", "-t", "-y"];
const HOST_VALUED: &[&str] = &["-t", "-c", "-W", "-R", "-m", "-N"];

/// Fills `hosts`, and `network` where the name alone does not tell, for one command. `argv`
/// starts with the command's bare name; `code` are the inline programs it runs.
pub fn network_effects(
    name: &str,
    argv: &[String],
    args: &[Arg],
    code: &[&str],
    effects: &mut Effects,
) {
    let may_install = installer_verbs(name).is_some()
        || matches!(name, "pacman" | "yay" | "paru")
        || name.starts_with("python")
        || name.starts_with("pypy");
    if !(names_destinations(name) || may_install || !code.is_empty()) {
        return;
    }
    let flag = |wanted: &str| has_flag(args, wanted);
    let values = |wanted: &'static str| {
        args.iter().filter_map(move |a| match a {
            Arg::Flag {
                name,
                value: Some(v),
            } if name == wanted => Some(v.as_str()),
            _ => None,
        })
    };
    let positionals: Vec<&str> = positionals_of(args).collect();

    match name {
        "curl" => {
            for target in positionals
                .iter()
                .copied()
                .chain(values("--url"))
                .chain(values("-x"))
            {
                add_host(&mut effects.hosts, host_of(target));
            }
        }
        "wget" | "aria2c" | "lynx" | "links" | "w3m" | "ftp" | "fetch" => {
            for target in &positionals {
                if name == "wget" || target.contains("://") {
                    add_host(&mut effects.hosts, host_of(target));
                }
            }
        }
        "http" | "https" | "xh" | "xhs" => {
            let operands = operands(argv, HTTPIE_VALUED);
            let method = |w: &&str| w.bytes().all(|b| b.is_ascii_uppercase());
            if let Some(url) = operands.iter().find(|w| !method(w)) {
                // `:3000/path` is httpie's shorthand for localhost.
                let host = if url.starts_with(':') {
                    Some("localhost".to_owned())
                } else {
                    host_of(url)
                };
                add_host(&mut effects.hosts, host);
            }
            if let Some(proxy) = option_values(argv, "--proxy").next() {
                add_host(
                    &mut effects.hosts,
                    proxy.split_once(':').and_then(|(_, p)| host_of(p)),
                );
            }
        }
        "ssh" | "scp" | "sftp" => {
            for target in &positionals {
                let host = match name {
                    "ssh" => host_of(target),
                    "sftp" if !target.contains(':') => host_of(target),
                    _ => remote_path_host(target),
                };
                add_host(&mut effects.hosts, host);
                if name == "ssh" {
                    // The rest is the remote command.
                    break;
                }
            }
            ssh_options(args, effects);
        }
        "rsync" => {
            for target in &positionals {
                add_host(&mut effects.hosts, remote_path_host(target));
            }
            // `-e` names the program that carries the transfer: anything but ssh is code.
            for shell in values("-e") {
                let program = shell.split_whitespace().next().unwrap_or("");
                let program = program.rsplit('/').next().unwrap_or(program);
                if !matches!(program, "ssh" | "rsh") || shell.contains("ProxyCommand") {
                    effects.runs_code = true;
                }
            }
        }
        "mosh" => {
            add_host(
                &mut effects.hosts,
                operands(argv, MOSH_VALUED).first().and_then(|h| host_of(h)),
            );
        }
        "nc" | "ncat" | "netcat" => {
            if let Some(first) = operands(argv, NC_VALUED).first()
                && !is_port(first)
            {
                add_host(&mut effects.hosts, host_of(first));
            }
            for proxy in option_values(argv, "-x").chain(option_values(argv, "--proxy")) {
                add_host(&mut effects.hosts, host_of(proxy));
            }
            // `nc -e /bin/sh host 4444`: a program wired to the socket.
            if argv.iter().skip(1).any(|w| {
                matches!(w.as_str(), "-e" | "-c")
                    || ["--exec", "--sh-exec", "--lua-exec"].iter().any(|o| {
                        w.strip_prefix(o)
                            .is_some_and(|r| r.is_empty() || r.starts_with('='))
                    })
            }) {
                effects.runs_code = true;
            }
        }
        "telnet" => {
            add_host(
                &mut effects.hosts,
                operands(argv, TELNET_VALUED)
                    .first()
                    .and_then(|h| host_of(h)),
            );
        }
        "socat" => {
            for address in operands(argv, &[]) {
                socat_address(address, effects);
            }
        }
        "openssl" => {
            for option in ["-connect", "-proxy", "-host"] {
                for target in option_values(argv, option) {
                    add_host(&mut effects.hosts, host_of(target));
                }
            }
        }
        "ping" | "ping6" | "traceroute" | "traceroute6" | "tracepath" | "mtr" | "dig" | "host"
        | "nslookup" | "whois" => {
            effects.network = true;
            let valued = match name {
                "ping" | "ping6" => PING_VALUED,
                "traceroute" | "traceroute6" | "tracepath" => TRACEROUTE_VALUED,
                "mtr" => MTR_VALUED,
                "dig" => DIG_VALUED,
                "host" => HOST_VALUED,
                _ => &[],
            };
            for operand in operands(argv, valued) {
                let operand = match operand.strip_prefix('@') {
                    Some(server) => server,
                    None if name == "dig"
                        && (operand.starts_with('+')
                            || DNS_WORDS.contains(&operand.to_ascii_uppercase().as_str())) =>
                    {
                        continue;
                    }
                    None => operand,
                };
                if operand != "-" && !is_port(operand) {
                    add_host(&mut effects.hosts, host_of(operand));
                }
            }
        }
        // git's table spells `-f` as `--force`.
        "git" => git_hosts(&positionals, flag("-f") || flag("--force"), effects),
        _ => {}
    }

    if installs_packages(name, args, &positionals) {
        effects.network = true;
    }
    for program in code {
        code_network(program, effects);
    }
}

/// ssh's `-J jump`, `-o ProxyJump=h`, `-o HostName=h`, `-W host:port`; `-o ProxyCommand=...`
/// (and `LocalCommand`, `KnownHostsCommand`) run a local command.
fn ssh_options(args: &[Arg], effects: &mut Effects) {
    for arg in args {
        let Arg::Flag {
            name,
            value: Some(value),
        } = arg
        else {
            continue;
        };
        match name.as_str() {
            "-J" => {
                for jump in value.split(',') {
                    add_host(&mut effects.hosts, host_of(jump));
                }
            }
            "-W" => add_host(&mut effects.hosts, host_of(value)),
            "-o" => {
                let (key, setting) = value
                    .split_once(['=', ' ', '\t'])
                    .map_or((value.as_str(), ""), |(k, v)| (k, v.trim()));
                match key.to_ascii_lowercase().as_str() {
                    "proxycommand" | "localcommand" | "knownhostscommand" => {
                        effects.runs_code = true
                    }
                    "proxyjump" => {
                        for jump in setting.split(',') {
                            add_host(&mut effects.hosts, host_of(jump));
                        }
                    }
                    "hostname" => add_host(&mut effects.hosts, host_of(setting)),
                    _ => {}
                }
            }
            _ => {}
        }
    }
}

/// `git clone URL`, `git fetch|pull|push|ls-remote URL|REMOTE`, `git remote add NAME URL`,
/// `git submodule add URL`: the host of a URL or `user@host:path`; a remote's name leaves it
/// unknown.
fn git_hosts(positionals: &[&str], fetch_now: bool, effects: &mut Effects) {
    let repository = match positionals {
        // A value the flag tables do not know of (`-b main`) may come first; clone's other
        // operand is a local directory.
        ["clone", operands @ ..] => operands
            .iter()
            .copied()
            .find(|o| remote_path_host(o).is_some()),
        // After these, the repository comes first; refspecs (`main:prod`) follow.
        ["fetch" | "pull" | "push" | "ls-remote", repository, ..] => Some(*repository),
        ["remote", "add" | "set-url", _, url, ..] => {
            effects.network |= fetch_now && positionals[1] == "add";
            Some(*url)
        }
        ["submodule", "add", url, ..] => {
            effects.network = true;
            Some(*url)
        }
        _ => None,
    };
    if let Some(repository) = repository {
        add_host(&mut effects.hosts, remote_path_host(repository));
    }
}

/// Commands whose arguments name network destinations.
fn names_destinations(name: &str) -> bool {
    matches!(
        name,
        "curl"
            | "wget"
            | "aria2c"
            | "lynx"
            | "links"
            | "w3m"
            | "ftp"
            | "fetch"
            | "http"
            | "https"
            | "xh"
            | "xhs"
            | "ssh"
            | "scp"
            | "sftp"
            | "rsync"
            | "mosh"
            | "nc"
            | "ncat"
            | "netcat"
            | "telnet"
            | "socat"
            | "openssl"
            | "ping"
            | "ping6"
            | "traceroute"
            | "traceroute6"
            | "tracepath"
            | "mtr"
            | "dig"
            | "host"
            | "nslookup"
            | "whois"
            | "git"
    )
}

/// One socat address: `TCP:host:port`, `OPENSSL:host:port,verify=0`, `SOCKS4:proxy:host:port`;
/// `EXEC:` and `SYSTEM:` run a program.
fn socat_address(address: &str, effects: &mut Effects) {
    let Some((kind, rest)) = address.split_once(':') else {
        return;
    };
    let kind = kind.to_ascii_uppercase();
    let rest = rest.split(',').next().unwrap_or("");
    let connects = matches!(
        kind.as_str(),
        "TCP"
            | "TCP4"
            | "TCP6"
            | "TCP-CONNECT"
            | "TCP4-CONNECT"
            | "TCP6-CONNECT"
            | "UDP"
            | "UDP4"
            | "UDP6"
            | "UDP-CONNECT"
            | "UDP4-CONNECT"
            | "UDP6-CONNECT"
            | "UDP-SENDTO"
            | "UDP4-SENDTO"
            | "UDP6-SENDTO"
            | "SCTP-CONNECT"
            | "OPENSSL"
            | "OPENSSL-CONNECT"
            | "SSL"
            | "DTLS"
    );
    let proxies = matches!(
        kind.as_str(),
        "SOCKS4" | "SOCKS4A" | "SOCKS5" | "SOCKS5-CONNECT" | "PROXY" | "PROXY-CONNECT"
    );
    if connects {
        add_host(&mut effects.hosts, host_port_host(rest));
    } else if proxies {
        let mut parts = split_host_port(rest);
        add_host(&mut effects.hosts, parts.next().and_then(host_of));
        add_host(&mut effects.hosts, parts.next().and_then(host_of));
    } else if matches!(kind.as_str(), "EXEC" | "SYSTEM") {
        effects.runs_code = true;
    }
}

/// The host of `host:port` or `[v6]:port`.
fn host_port_host(text: &str) -> Option<String> {
    split_host_port(text).next().and_then(host_of)
}

/// `a:b:c` split at colons outside brackets (`[::1]:80` is `[::1]`, `80`).
fn split_host_port(text: &str) -> impl Iterator<Item = &str> {
    let mut depth = 0usize;
    text.split(move |c: char| {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        c == ':' && depth == 0
    })
}

/// Package managers and the verbs that download (`""`: the command alone, as `yarn`; none:
/// whatever it is asked, as `npx`).
fn installer_verbs(name: &str) -> Option<&'static [&'static str]> {
    Some(match name {
        "pip" | "pip3" => &["install", "download", "wheel"],
        "pipx" => &["install", "run", "upgrade", "upgrade-all", "inject"],
        "npm" => &[
            "install", "i", "ci", "add", "update", "upgrade", "up", "exec", "x", "create",
            "publish",
        ],
        "pnpm" => &["install", "i", "add", "update", "up", "dlx", "create"],
        "yarn" => &["", "install", "add", "up", "upgrade", "dlx", "create"],
        "bun" => &["install", "i", "add", "update", "x", "create"],
        "npx" | "pnpx" | "bunx" | "uvx" => &[],
        "cargo" => &["install", "add", "fetch", "update", "search", "publish"],
        "gem" => &["install", "update", "fetch"],
        "bundle" => &["", "install", "update"],
        "go" => &["get", "install"],
        "apt" | "apt-get" => &[
            "install",
            "update",
            "upgrade",
            "full-upgrade",
            "dist-upgrade",
            "source",
            "download",
        ],
        "dnf" | "yum" => &["install", "update", "upgrade", "makecache", "download"],
        "apk" => &["add", "update", "upgrade", "fetch"],
        "brew" => &["install", "upgrade", "update", "tap", "fetch", "reinstall"],
        "composer" => &["require", "install", "update", "create-project"],
        "uv" => &["add", "sync", "lock"],
        "poetry" => &["add", "install", "update", "lock"],
        "zypper" => &["install", "in", "update", "up", "refresh", "ref"],
        "snap" => &["install", "refresh"],
        "conda" => &["install", "create", "update"],
        _ => return None,
    })
}

fn installs_packages(name: &str, args: &[Arg], positionals: &[&str]) -> bool {
    let verb = positionals.first().copied().unwrap_or("");
    let python = name.starts_with("python") || name.starts_with("pypy");
    let module = args.iter().find_map(|a| match a {
        Arg::Flag {
            name,
            value: Some(v),
        } if name == "-m" => Some(v.as_str()),
        _ => None,
    });
    if python {
        return module == Some("pip") && matches!(verb, "install" | "download" | "wheel");
    }
    match (name, positionals) {
        ("uv", ["pip" | "tool", "install", ..]) => return true,
        ("go", ["mod", "download", ..]) => return true,
        ("pacman" | "yay" | "paru", _) => {
            return args
                .iter()
                .any(|a| matches!(a, Arg::Flag { name, .. } if name == "-S" || name == "--sync"));
        }
        _ => {}
    }
    installer_verbs(name).is_some_and(|verbs| verbs.is_empty() || verbs.contains(&verb))
}

/// An inline program that opens connections is network; the hosts of the URLs it names are
/// its destinations.
fn code_network(code: &str, effects: &mut Effects) {
    let node_module = NODE_NETWORK_MODULES.iter().any(|module| {
        ['\'', '"'].iter().any(|quote| {
            code.contains(&format!("{quote}{module}{quote}"))
                || code.contains(&format!("{quote}node:{module}{quote}"))
        })
    });
    let php_url = (code.contains("file_get_contents") || code.contains("fopen"))
        && (code.contains("http://") || code.contains("https://"));
    if !(node_module || php_url || CODE_NETWORK.iter().any(|m| code.contains(m))) {
        return;
    }
    effects.network = true;
    for scheme in ["http://", "https://"] {
        for (at, _) in code.match_indices(scheme) {
            let url = &code[at..];
            let end = url
                .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '`' | ')' | '>'))
                .unwrap_or(url.len());
            add_host(&mut effects.hosts, host_of(&url[..end]));
        }
    }
}

/// The host of a URL (`https://user@h:8/p`), a `user@host`, a `host:port` or a bare
/// `host/path`, lowercased; `None` for what names no host or is only known at runtime.
pub fn host_of(target: &str) -> Option<String> {
    let rest = target.find("://").map_or(target, |at| &target[at + 3..]);
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    // A runtime value anywhere up to the path can move the host (`https://$U@good.example/`
    // with `U=evil.example/`): then it is unknown.
    let head = &target[..target.len() - rest.len() + authority.len()];
    if head.contains(['$', '`']) {
        return None;
    }
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(inner) = authority.strip_prefix('[') {
        &inner[..inner.find(']')?]
    } else if authority.matches(':').count() == 1 {
        authority.split_once(':').map_or(authority, |(h, _)| h)
    } else {
        authority
    };
    let host = host.trim_end_matches('.');
    let valid = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b':' | b'%'));
    valid.then(|| host.to_ascii_lowercase())
}

/// The host of a remote path (`user@host:path`, `[v6]:path`, `host::module`,
/// `rsync://host/module`, `ssh://host/repo`); `None` for a local path.
pub fn remote_path_host(path: &str) -> Option<String> {
    if path.contains("://") {
        return host_of(path);
    }
    if !is_remote_path(path) {
        return None;
    }
    let colon = path.find(':')?;
    if let Some(open) = path.find('[')
        && open < colon
    {
        let close = path[open..].find(']')?;
        return host_of(&path[open..=open + close]);
    }
    let before = &path[..colon];
    host_of(before.rsplit_once('@').map_or(before, |(_, h)| h))
}

fn add_host(hosts: &mut Vec<String>, host: Option<String>) {
    if let Some(host) = host
        && !hosts.contains(&host)
    {
        hosts.push(host);
    }
}

/// A port or port range (`80`, `20-80`), which names no host.
fn is_port(word: &str) -> bool {
    !word.is_empty() && word.bytes().all(|b| b.is_ascii_digit() || b == b'-')
}

/// The operands of a command whose options `valued` says which take the next word, read the
/// way getopt does (`-w 3`, `-w3`, `-zw 3`, `--wait 3`, `--wait=3`, `--` ending them).
fn operands<'a>(argv: &'a [String], valued: &[&str]) -> Vec<&'a str> {
    let mut found = Vec::new();
    let mut index = 1;
    while index < argv.len() {
        let word = argv[index].as_str();
        index += 1;
        if word == "--" {
            found.extend(argv[index..].iter().map(String::as_str));
            break;
        }
        if !word.starts_with('-') || word.len() < 2 {
            found.push(word);
            continue;
        }
        if word.starts_with("--") || valued.contains(&word) {
            if !word.contains('=') && valued.contains(&word) {
                index += 1;
            }
            continue;
        }
        for (offset, c) in word[1..].char_indices() {
            let mut short = [0u8; 4];
            let letter = c.encode_utf8(&mut short);
            let wants_value = valued.iter().any(|v| v.strip_prefix('-') == Some(letter));
            if wants_value {
                if offset + c.len_utf8() == word.len() - 1 {
                    index += 1;
                }
                break;
            }
        }
    }
    found
}

/// The values of `option` wherever it appears: `-x VALUE`, `--proxy=VALUE`.
fn option_values<'a>(argv: &'a [String], option: &'a str) -> impl Iterator<Item = &'a str> {
    argv.iter()
        .enumerate()
        .skip(1)
        .filter_map(move |(i, word)| {
            if word == option {
                return argv.get(i + 1).map(String::as_str);
            }
            word.strip_prefix(option)
                .and_then(|rest| rest.strip_prefix('='))
        })
}

#[cfg(test)]
mod tests {
    use super::{host_of, remote_path_host};

    #[test]
    fn hosts_are_read_from_every_spelling() {
        let cases: &[(&str, Option<&str>)] = &[
            ("https://user@H.Example:8/p?q#f", Some("h.example")),
            ("h.example/x", Some("h.example")),
            ("localhost:8080", Some("localhost")),
            ("http://[::1]:80/", Some("::1")),
            ("[fe80::1]", Some("fe80::1")),
            ("fe80::1", Some("fe80::1")),
            ("user@host", Some("host")),
            ("example.com.", Some("example.com")),
            ("https://$HOST/x", None),
            ("https://h.example/?t=$T", Some("h.example")),
            ("https://${H}.evil/", None),
            ("user@$(hostname)", None),
            ("https://$U@good.example/", None),
            ("https://good.example:$PORT/", None),
            ("file:///etc/passwd", None),
            ("", None),
        ];
        for (target, expected) in cases {
            assert_eq!(host_of(target).as_deref(), *expected, "{target}");
        }
        let remote: &[(&str, Option<&str>)] = &[
            ("git@github.com:org/r.git", Some("github.com")),
            ("user@[::1]:/srv", Some("::1")),
            ("backup::module/x", Some("backup")),
            ("rsync://Mirror.example/pub", Some("mirror.example")),
            ("ssh://git@h:2222/r", Some("h")),
            ("host:dir/file", Some("host")),
            ("./a:b", None),
            ("/srv/repo.git", None),
            ("origin", None),
        ];
        for (target, expected) in remote {
            assert_eq!(remote_path_host(target).as_deref(), *expected, "{target}");
        }
    }
}
