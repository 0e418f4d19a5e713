//! Flag normalisation: `-rf` is `-r -f`, `--recursive` is `-r` for `rm`, `-n 5` is one flag with
//! a value for `head`. Policy patterns are normalised through the same tables, so a rule written
//! with either spelling matches both.

use nightwatch_core::Arg;
use std::borrow::Cow;

/// How one program spells its flags.
struct Spelling {
    programs: &'static [&'static str],
    /// Flags that take the next word as their value (when not written `--flag=value`).
    valued: &'static [&'static str],
    /// Short flags whose value, if any, is attached (`sed -i.bak`, `mysql -pSECRET`).
    attached: &'static [char],
    /// Other spellings folded to one canonical name.
    aliases: &'static [(&'static str, &'static str)],
    /// Single-dash words are whole flags (`find -name`, `kill -KILL`), never bundles.
    single_dash_long: bool,
}

const fn spelling(programs: &'static [&'static str]) -> Spelling {
    Spelling {
        programs,
        valued: &[],
        attached: &[],
        aliases: &[],
        single_dash_long: false,
    }
}

static SPELLINGS: &[Spelling] = &[
    Spelling {
        aliases: &[
            ("--recursive", "-r"),
            ("-R", "-r"),
            ("--force", "-f"),
            ("--dir", "-d"),
            ("--verbose", "-v"),
            ("--interactive", "-i"),
        ],
        ..spelling(&["rm"])
    },
    Spelling {
        valued: &["-t", "-S"],
        aliases: &[
            ("--recursive", "-r"),
            ("-R", "-r"),
            ("--force", "-f"),
            ("--archive", "-a"),
            ("--target-directory", "-t"),
            ("--suffix", "-S"),
        ],
        ..spelling(&["cp"])
    },
    Spelling {
        valued: &["-t", "-S"],
        aliases: &[
            ("--force", "-f"),
            ("--target-directory", "-t"),
            ("--suffix", "-S"),
        ],
        ..spelling(&["mv", "ln"])
    },
    Spelling {
        valued: &["-t", "-m", "-o", "-g", "-S"],
        aliases: &[
            ("--target-directory", "-t"),
            ("--mode", "-m"),
            ("--owner", "-o"),
            ("--group", "-g"),
        ],
        ..spelling(&["install"])
    },
    Spelling {
        aliases: &[("--recursive", "-R"), ("--verbose", "-v")],
        ..spelling(&["chmod", "chown", "chgrp"])
    },
    Spelling {
        valued: &["-n", "-s"],
        aliases: &[
            ("--iterations", "-n"),
            ("--size", "-s"),
            ("--remove", "-u"),
            ("--zero", "-z"),
        ],
        ..spelling(&["shred"])
    },
    Spelling {
        valued: &["-s", "-r"],
        aliases: &[("--size", "-s"), ("--reference", "-r")],
        ..spelling(&["truncate"])
    },
    Spelling {
        valued: &["-e", "-f", "-l"],
        attached: &['i'],
        aliases: &[
            ("--expression", "-e"),
            ("--file", "-f"),
            ("--in-place", "-i"),
            ("--line-length", "-l"),
        ],
        ..spelling(&["sed", "gsed"])
    },
    Spelling {
        valued: &["-f", "-v", "-F"],
        aliases: &[
            ("--file", "-f"),
            ("--assign", "-v"),
            ("--field-separator", "-F"),
        ],
        ..spelling(&["awk", "gawk", "mawk", "nawk"])
    },
    Spelling {
        valued: &["-n", "-c"],
        aliases: &[("--lines", "-n"), ("--bytes", "-c"), ("--follow", "-f")],
        ..spelling(&["head", "tail"])
    },
    Spelling {
        valued: &[
            "-e",
            "-f",
            "-m",
            "-A",
            "-B",
            "-C",
            "-g",
            "-t",
            "-T",
            "-E",
            "-j",
            "-M",
            "-r",
            "--include",
            "--exclude",
            "--exclude-dir",
            "--type-add",
            "--max-depth",
        ],
        aliases: &[
            ("--regexp", "-e"),
            ("--file", "-f"),
            ("--max-count", "-m"),
            ("--after-context", "-A"),
            ("--before-context", "-B"),
            ("--context", "-C"),
            ("--glob", "-g"),
            ("--type", "-t"),
            ("--type-not", "-T"),
            ("--encoding", "-E"),
            ("--threads", "-j"),
            ("--max-columns", "-M"),
            ("--replace", "-r"),
            ("--ignore-case", "-i"),
        ],
        ..spelling(&["rg"])
    },
    Spelling {
        valued: &[
            "-e",
            "-f",
            "-m",
            "-A",
            "-B",
            "-C",
            "-d",
            "-D",
            "--include",
            "--exclude",
            "--exclude-dir",
        ],
        aliases: &[
            ("--regexp", "-e"),
            ("--file", "-f"),
            ("--max-count", "-m"),
            ("--after-context", "-A"),
            ("--before-context", "-B"),
            ("--context", "-C"),
            ("--recursive", "-r"),
            ("--dereference-recursive", "-R"),
            ("--ignore-case", "-i"),
        ],
        ..spelling(&["grep", "egrep", "fgrep", "zgrep"])
    },
    Spelling {
        valued: &["-o", "-k", "-t", "-S", "-T"],
        aliases: &[
            ("--output", "-o"),
            ("--key", "-k"),
            ("--field-separator", "-t"),
            ("--buffer-size", "-S"),
            ("--temporary-directory", "-T"),
        ],
        ..spelling(&["sort"])
    },
    Spelling {
        valued: &["-d", "-f", "-c", "-b"],
        aliases: &[
            ("--delimiter", "-d"),
            ("--fields", "-f"),
            ("--characters", "-c"),
            ("--bytes", "-b"),
        ],
        ..spelling(&["cut"])
    },
    Spelling {
        valued: &["-d", "-B", "-t", "--exclude", "--max-depth"],
        aliases: &[("--max-depth", "-d"), ("--block-size", "-B")],
        ..spelling(&["du", "df"])
    },
    Spelling {
        valued: &["-f", "-C", "-T", "-X", "-b", "-H", "-I", "-K", "-N", "-V"],
        aliases: &[
            ("--file", "-f"),
            ("--directory", "-C"),
            ("--files-from", "-T"),
            ("--exclude-from", "-X"),
            ("--create", "-c"),
            ("--extract", "-x"),
            ("--get", "-x"),
            ("--list", "-t"),
            ("--append", "-r"),
            ("--update", "-u"),
            ("--gzip", "-z"),
            ("--bzip2", "-j"),
            ("--xz", "-J"),
            ("--verbose", "-v"),
            ("--use-compress-program", "-I"),
        ],
        ..spelling(&["tar"])
    },
    Spelling {
        valued: &[
            "-o",
            "-d",
            "-H",
            "-X",
            "-u",
            "-F",
            "-T",
            "-A",
            "-e",
            "-b",
            "-c",
            "-K",
            "-w",
            "-m",
            "-x",
            "-E",
            "-r",
            "-Y",
            "-y",
            "-z",
            "-U",
            "-C",
            "-t",
            "-P",
            "-Q",
            "--data-binary",
            "--data-raw",
            "--data-urlencode",
            "--connect-timeout",
            "--retry",
            "--cacert",
            "--cert",
            "--key",
            "--resolve",
            "--json",
            "--url",
            "--form-string",
            "--max-filesize",
            "--limit-rate",
            "--retry-delay",
            "--retry-max-time",
        ],
        aliases: &[
            ("--output", "-o"),
            ("--data", "-d"),
            ("--data-ascii", "-d"),
            ("--header", "-H"),
            ("--request", "-X"),
            ("--user", "-u"),
            ("--form", "-F"),
            ("--upload-file", "-T"),
            ("--user-agent", "-A"),
            ("--referer", "-e"),
            ("--cookie", "-b"),
            ("--cookie-jar", "-c"),
            ("--config", "-K"),
            ("--write-out", "-w"),
            ("--max-time", "-m"),
            ("--proxy", "-x"),
            ("--remote-name", "-O"),
            ("--silent", "-s"),
            ("--show-error", "-S"),
            ("--location", "-L"),
            ("--insecure", "-k"),
            ("--fail", "-f"),
            ("--include", "-i"),
            ("--head", "-I"),
            ("--verbose", "-v"),
        ],
        ..spelling(&["curl"])
    },
    Spelling {
        valued: &[
            "-O",
            "-o",
            "-a",
            "-P",
            "-U",
            "-t",
            "-T",
            "-i",
            "-e",
            "-w",
            "-Q",
            "-l",
            "-A",
            "-R",
            "-D",
            "-X",
            "-I",
            "--header",
            "--post-data",
            "--post-file",
            "--body-data",
            "--body-file",
            "--method",
            "--user",
            "--password",
            "--http-user",
            "--http-password",
        ],
        aliases: &[
            ("--output-document", "-O"),
            ("--output-file", "-o"),
            ("--append-output", "-a"),
            ("--directory-prefix", "-P"),
            ("--user-agent", "-U"),
            ("--tries", "-t"),
            ("--timeout", "-T"),
            ("--input-file", "-i"),
            ("--execute", "-e"),
            ("--quiet", "-q"),
            ("--recursive", "-r"),
            ("--mirror", "-m"),
        ],
        ..spelling(&["wget"])
    },
    Spelling {
        valued: &[
            "-p", "-i", "-l", "-o", "-F", "-J", "-L", "-R", "-D", "-b", "-c", "-E", "-e", "-I",
            "-m", "-O", "-Q", "-S", "-W", "-w", "-B",
        ],
        ..spelling(&["ssh"])
    },
    Spelling {
        valued: &["-P", "-i", "-o", "-F", "-l", "-c", "-J", "-S", "-D", "-X"],
        ..spelling(&["scp", "sftp"])
    },
    Spelling {
        valued: &[
            "-e",
            "-f",
            "-B",
            "-T",
            "--exclude",
            "--include",
            "--filter",
            "--exclude-from",
            "--include-from",
            "--files-from",
            "--port",
            "--log-file",
            "--backup-dir",
            "--chmod",
            "--chown",
            "--rsync-path",
            "--password-file",
            "--partial-dir",
            "--temp-dir",
            "--compare-dest",
            "--copy-dest",
            "--link-dest",
            "--max-size",
            "--min-size",
            "--timeout",
            "--bwlimit",
            "--suffix",
        ],
        aliases: &[
            ("--rsh", "-e"),
            ("--recursive", "-r"),
            ("--archive", "-a"),
            ("--verbose", "-v"),
            ("--compress", "-z"),
            ("--block-size", "-B"),
            ("--temp-dir", "-T"),
        ],
        ..spelling(&["rsync"])
    },
    Spelling {
        valued: &[
            "-d",
            "-E",
            "-I",
            "-L",
            "-n",
            "-P",
            "-s",
            "-a",
            "--eof",
            "--process-slot-var",
        ],
        attached: &['i', 'e', 'l'],
        aliases: &[
            ("--delimiter", "-d"),
            ("--max-lines", "-L"),
            ("--max-args", "-n"),
            ("--max-procs", "-P"),
            ("--max-chars", "-s"),
            ("--arg-file", "-a"),
            ("--null", "-0"),
            ("--no-run-if-empty", "-r"),
            ("--verbose", "-t"),
            ("--interactive", "-p"),
        ],
        ..spelling(&["xargs"])
    },
    Spelling {
        valued: &[
            "-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-T", "-U", "-R",
        ],
        aliases: &[
            ("--user", "-u"),
            ("--group", "-g"),
            ("--close-from", "-C"),
            ("--chdir", "-D"),
            ("--host", "-h"),
            ("--prompt", "-p"),
            ("--role", "-r"),
            ("--type", "-t"),
            ("--command-timeout", "-T"),
            ("--other-user", "-U"),
            ("--chroot", "-R"),
            ("--preserve-env", "-E"),
            ("--set-home", "-H"),
            ("--login", "-i"),
            ("--shell", "-s"),
            ("--non-interactive", "-n"),
            ("--background", "-b"),
            ("--askpass", "-A"),
            ("--stdin", "-S"),
            ("--edit", "-e"),
            ("--list", "-l"),
        ],
        ..spelling(&["sudo"])
    },
    Spelling {
        valued: &["-u", "-C"],
        ..spelling(&["doas"])
    },
    Spelling {
        valued: &["-u"],
        aliases: &[("--user", "-u")],
        ..spelling(&["pkexec"])
    },
    Spelling {
        valued: &["-a"],
        ..spelling(&["exec"])
    },
    Spelling {
        valued: &[
            "-o", "-e", "-p", "-s", "-u", "-E", "-P", "-a", "-b", "-I", "-O", "-S", "-X",
        ],
        aliases: &[
            ("--output", "-o"),
            ("--expr", "-e"),
            ("--attach", "-p"),
            ("--user", "-u"),
        ],
        ..spelling(&["strace", "ltrace"])
    },
    Spelling {
        valued: &["-c", "-s", "-g", "-G", "-w", "-C", "-u"],
        aliases: &[
            ("--user", "-u"),
            ("--command", "-c"),
            ("--shell", "-s"),
            ("--group", "-g"),
            ("--supp-group", "-G"),
            ("--whitelist-environment", "-w"),
            ("--session-command", "-C"),
            ("--login", "-l"),
            ("--preserve-environment", "-m"),
        ],
        ..spelling(&["su", "runuser"])
    },
    Spelling {
        valued: &["-u", "-C", "-S"],
        aliases: &[
            ("--unset", "-u"),
            ("--chdir", "-C"),
            ("--split-string", "-S"),
            ("--ignore-environment", "-i"),
            ("--null", "-0"),
        ],
        ..spelling(&["env"])
    },
    Spelling {
        valued: &["-n"],
        aliases: &[("--adjustment", "-n")],
        ..spelling(&["nice"])
    },
    Spelling {
        valued: &["-c", "-n", "-p", "-P", "-u"],
        aliases: &[("--class", "-c"), ("--classdata", "-n"), ("--pid", "-p")],
        ..spelling(&["ionice"])
    },
    Spelling {
        valued: &["-s", "-k"],
        aliases: &[("--signal", "-s"), ("--kill-after", "-k")],
        ..spelling(&["timeout"])
    },
    Spelling {
        valued: &["-i", "-o", "-e"],
        aliases: &[("--input", "-i"), ("--output", "-o"), ("--error", "-e")],
        ..spelling(&["stdbuf"])
    },
    Spelling {
        valued: &["-w", "-E", "-c"],
        aliases: &[
            ("--wait", "-w"),
            ("--timeout", "-w"),
            ("--conflict-exit-code", "-E"),
            ("--command", "-c"),
            ("--shared", "-s"),
            ("--exclusive", "-x"),
            ("--nonblock", "-n"),
        ],
        ..spelling(&["flock"])
    },
    Spelling {
        valued: &["-n", "-q"],
        aliases: &[("--interval", "-n"), ("--exec", "-x")],
        ..spelling(&["watch"])
    },
    Spelling {
        valued: &["-o", "-f"],
        aliases: &[("--output", "-o"), ("--format", "-f"), ("--append", "-a")],
        ..spelling(&["time"])
    },
    Spelling {
        valued: &["-s", "-n"],
        single_dash_long: true,
        ..spelling(&["kill"])
    },
    Spelling {
        valued: &[
            "-s", "-u", "-U", "-g", "-G", "-P", "-t", "-F", "--signal", "--ns", "--nslist",
        ],
        aliases: &[("--signal", "-s"), ("--full", "-f"), ("--exact", "-x")],
        single_dash_long: true,
        ..spelling(&["pkill", "pgrep", "killall"])
    },
    Spelling {
        valued: &["-u"],
        aliases: &[("--user", "-u")],
        ..spelling(&["crontab"])
    },
    Spelling {
        valued: &[
            "-t",
            "-A",
            "-D",
            "-I",
            "-R",
            "-N",
            "-X",
            "-P",
            "-E",
            "-Z",
            "-j",
            "-p",
            "-s",
            "-d",
            "-i",
            "-o",
            "-m",
            "-g",
            "--dport",
            "--sport",
            "--to-destination",
            "--to-source",
            "--state",
            "--ctstate",
            "--comment",
            "--set-mark",
        ],
        aliases: &[
            ("--flush", "-F"),
            ("--delete-chain", "-X"),
            ("--zero", "-Z"),
            ("--table", "-t"),
            ("--append", "-A"),
            ("--delete", "-D"),
            ("--insert", "-I"),
            ("--replace", "-R"),
            ("--list", "-L"),
            ("--new-chain", "-N"),
            ("--policy", "-P"),
            ("--rename-chain", "-E"),
            ("--jump", "-j"),
            ("--protocol", "-p"),
            ("--source", "-s"),
            ("--destination", "-d"),
            ("--in-interface", "-i"),
            ("--out-interface", "-o"),
            ("--match", "-m"),
            ("--goto", "-g"),
        ],
        ..spelling(&["iptables", "ip6tables", "iptables-legacy", "iptables-nft"])
    },
    Spelling {
        valued: &[
            "-H",
            "-M",
            "-t",
            "-p",
            "-n",
            "-o",
            "-s",
            "--state",
            "--root",
            "--kill-whom",
            "--signal",
            "--job-mode",
            "--since",
            "--until",
        ],
        aliases: &[
            ("--host", "-H"),
            ("--machine", "-M"),
            ("--type", "-t"),
            ("--property", "-p"),
            ("--lines", "-n"),
            ("--output", "-o"),
            ("--signal", "-s"),
            ("--all", "-a"),
            ("--quiet", "-q"),
            ("--force", "-f"),
        ],
        ..spelling(&["systemctl"])
    },
    Spelling {
        valued: &[
            "-u",
            "-n",
            "-p",
            "-S",
            "-U",
            "-t",
            "-o",
            "-D",
            "-g",
            "-M",
            "-F",
            "-T",
            "-I",
            "--user-unit",
            "--file",
            "--field",
            "--facility",
            "--cursor",
            "--after-cursor",
            "--vacuum-size",
            "--vacuum-time",
            "--vacuum-files",
            "--output-fields",
            "--root",
            "--image",
            "--namespace",
        ],
        aliases: &[
            ("--unit", "-u"),
            ("--lines", "-n"),
            ("--priority", "-p"),
            ("--since", "-S"),
            ("--until", "-U"),
            ("--identifier", "-t"),
            ("--output", "-o"),
            ("--directory", "-D"),
            ("--grep", "-g"),
            ("--machine", "-M"),
            ("--follow", "-f"),
            ("--reverse", "-r"),
            ("--catalog", "-x"),
            ("--pager-end", "-e"),
            ("--no-pager", "--no-pager"),
            ("--boot", "-b"),
            ("--dmesg", "-k"),
            ("--quiet", "-q"),
        ],
        ..spelling(&["journalctl"])
    },
    Spelling {
        valued: &[
            "-H",
            "-c",
            "-l",
            "-e",
            "-u",
            "-w",
            "-v",
            "-p",
            "-n",
            "-m",
            "--host",
            "--context",
            "--config",
            "--log-level",
            "--tail",
            "--format",
            "--filter",
            "--env",
            "--env-file",
            "--user",
            "--workdir",
            "--name",
            "--volume",
            "--publish",
            "--network",
            "--entrypoint",
            "--since",
            "--until",
            "--label",
            "--mount",
            "--memory",
            "--cpus",
            "--restart",
            "--hostname",
            "--add-host",
            "--detach-keys",
            "--platform",
            "--pull",
            "--project-name",
            "--profile",
            "--file",
            "--signal",
            "--time",
            "--index",
        ],
        aliases: &[
            ("--env", "-e"),
            ("--user", "-u"),
            ("--workdir", "-w"),
            ("--volume", "-v"),
            ("--publish", "-p"),
            ("--interactive", "-i"),
            ("--tty", "-t"),
            ("--detach", "-d"),
            ("--all", "-a"),
            ("--quiet", "-q"),
            ("--force", "-f"),
            ("--follow", "-f"),
            ("--host", "-H"),
            ("--project-name", "-p"),
        ],
        ..spelling(&["docker", "podman"])
    },
    Spelling {
        valued: &[
            "-f",
            "-p",
            "--file",
            "--project-name",
            "--profile",
            "--env-file",
            "--project-directory",
            "--ansi",
            "--progress",
        ],
        aliases: &[("--file", "-f"), ("--project-name", "-p")],
        ..spelling(&["docker-compose"])
    },
    Spelling {
        valued: &[
            "-n",
            "-o",
            "-l",
            "-c",
            "-f",
            "-p",
            "--namespace",
            "--output",
            "--selector",
            "--container",
            "--context",
            "--cluster",
            "--kubeconfig",
            "--filename",
            "--since",
            "--tail",
            "--field-selector",
            "--sort-by",
            "--template",
            "--user",
            "--server",
            "--token",
            "--as",
            "--type",
            "--image",
            "--replicas",
            "--timeout",
            "--grace-period",
            "--pod-running-timeout",
        ],
        aliases: &[
            ("--namespace", "-n"),
            ("--output", "-o"),
            ("--selector", "-l"),
            ("--container", "-c"),
            ("--filename", "-f"),
            ("--all-namespaces", "-A"),
            ("--follow", "-f"),
            ("--stdin", "-i"),
            ("--tty", "-t"),
            ("--watch", "-w"),
            ("--recursive", "-R"),
        ],
        ..spelling(&["kubectl", "oc"])
    },
    Spelling {
        valued: &[
            "-C",
            "-c",
            "-m",
            "-F",
            "-n",
            "-b",
            "-B",
            "-o",
            "-X",
            "-S",
            "-t",
            "--git-dir",
            "--work-tree",
            "--namespace",
            "--exec-path",
            "--author",
            "--date",
            "--format",
            "--pretty",
            "--since",
            "--until",
            "--grep",
            "--message",
            "--file",
            "--branch",
            "--depth",
            "--upstream",
            "--onto",
            "--strategy",
            "--strategy-option",
            "--reference",
            "--origin",
            "--template",
            "--max-count",
            "--push-option",
            "--receive-pack",
            "--upload-pack",
            "--exec",
        ],
        aliases: &[
            ("-f", "--force"),
            ("--message", "-m"),
            ("--file", "-F"),
            ("--max-count", "-n"),
            ("--all", "--all"),
            ("--delete", "-d"),
            ("--force-with-lease", "--force-with-lease"),
            ("--push-option", "-o"),
            ("--quiet", "-q"),
            ("--verbose", "-v"),
        ],
        ..spelling(&["git"])
    },
    Spelling {
        valued: &[
            "-c", "-d", "-h", "-p", "-U", "-f", "-v", "-o", "-F", "-R", "-P", "-T", "-L",
        ],
        aliases: &[
            ("--command", "-c"),
            ("--dbname", "-d"),
            ("--host", "-h"),
            ("--port", "-p"),
            ("--username", "-U"),
            ("--file", "-f"),
            ("--set", "-v"),
            ("--variable", "-v"),
            ("--output", "-o"),
            ("--field-separator", "-F"),
            ("--record-separator", "-R"),
            ("--pset", "-P"),
            ("--log-file", "-L"),
        ],
        ..spelling(&["psql"])
    },
    Spelling {
        valued: &["-e", "-u", "-h", "-P", "-D", "-S"],
        attached: &['p'],
        aliases: &[
            ("--execute", "-e"),
            ("--user", "-u"),
            ("--host", "-h"),
            ("--port", "-P"),
            ("--database", "-D"),
            ("--socket", "-S"),
            ("--password", "-p"),
        ],
        ..spelling(&["mysql", "mariadb"])
    },
    Spelling {
        valued: &["-c", "-m", "-W", "-X", "-Q"],
        ..spelling(&["python", "python2", "python3", "pypy", "pypy3"])
    },
    Spelling {
        valued: &["-e", "-E", "-M", "-I", "-m", "-x"],
        attached: &['i', 'n', 'p', 'l', '0'],
        ..spelling(&["perl"])
    },
    Spelling {
        valued: &["-e", "-r", "-I", "-C", "-E"],
        ..spelling(&["ruby"])
    },
    Spelling {
        valued: &[
            "-e",
            "-p",
            "-r",
            "--eval",
            "--print",
            "--require",
            "--import",
            "--input-type",
        ],
        aliases: &[("--eval", "-e"), ("--print", "-p"), ("--require", "-r")],
        ..spelling(&["node", "nodejs", "deno", "bun"])
    },
    Spelling {
        valued: &["-r", "-f", "-d", "-c", "-z"],
        ..spelling(&["php"])
    },
    Spelling {
        valued: &[
            "-c", "-S", "-u", "-U", "-i", "-t", "-w", "-W", "-s", "-T", "--cmd",
        ],
        ..spelling(&["vi", "vim", "nvim", "view", "gvim", "rvim"])
    },
    Spelling {
        valued: &[
            "-f",
            "-l",
            "-L",
            "-u",
            "--eval",
            "--load",
            "--funcall",
            "--execute",
        ],
        aliases: &[("--eval", "--eval"), ("--load", "-l"), ("--funcall", "-f")],
        ..spelling(&["emacs", "emacsclient"])
    },
    Spelling {
        valued: &["--userspec", "--groups"],
        ..spelling(&["chroot"])
    },
    Spelling {
        valued: &["-c", "-o", "-O", "+O", "+o", "--rcfile", "--init-file"],
        ..spelling(&[
            "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "fish", "busybox",
        ])
    },
    Spelling {
        valued: &[
            "-t", "-L", "-b", "-N", "-O", "-E", "-m", "-U", "-c", "-l", "-T", "-C", "-i", "-I",
        ],
        ..spelling(&[
            "mkfs",
            "mke2fs",
            "mkfs.ext2",
            "mkfs.ext3",
            "mkfs.ext4",
            "mkfs.xfs",
            "mkfs.btrfs",
            "mkfs.vfat",
            "mkfs.fat",
            "mkswap",
        ])
    },
    Spelling {
        valued: &[
            "-name",
            "-iname",
            "-path",
            "-ipath",
            "-wholename",
            "-iwholename",
            "-regex",
            "-iregex",
            "-type",
            "-xtype",
            "-mtime",
            "-mmin",
            "-atime",
            "-amin",
            "-ctime",
            "-cmin",
            "-size",
            "-user",
            "-group",
            "-uid",
            "-gid",
            "-perm",
            "-newer",
            "-anewer",
            "-cnewer",
            "-maxdepth",
            "-mindepth",
            "-fprint",
            "-fprint0",
            "-fls",
            "-printf",
            "-links",
            "-inum",
            "-samefile",
            "-fstype",
            "-context",
            "-lname",
            "-ilname",
            "-used",
            "-regextype",
            "-D",
        ],
        single_dash_long: true,
        ..spelling(&["find"])
    },
    Spelling {
        single_dash_long: true,
        ..spelling(&["java", "dd", "ip"])
    },
    Spelling {
        valued: &[
            "-o", "-O", "-C", "-n", "-l", "-u", "-p", "-U", "-G", "-g", "-t", "-s", "-k",
            "--format", "--sort", "--pid", "--ppid", "--user",
        ],
        aliases: &[("--format", "-o")],
        ..spelling(&["ps"])
    },
    Spelling {
        valued: &["-d", "-n", "-s", "-o", "-p", "-u", "-w", "-E"],
        aliases: &[("--delay", "-d"), ("--iterations", "-n"), ("--batch", "-b")],
        ..spelling(&["top", "htop"])
    },
    Spelling {
        valued: &[
            "--arg",
            "--argjson",
            "--slurpfile",
            "--rawfile",
            "--indent",
            "-f",
            "-L",
        ],
        aliases: &[
            ("--from-file", "-f"),
            ("--raw-output", "-r"),
            ("--compact-output", "-c"),
            ("--slurp", "-s"),
        ],
        ..spelling(&["jq", "yq"])
    },
    Spelling {
        valued: &["-C", "-f", "-I", "-o", "-W", "-j", "-l"],
        aliases: &[
            ("--directory", "-C"),
            ("--file", "-f"),
            ("--makefile", "-f"),
            ("--jobs", "-j"),
        ],
        ..spelling(&["make", "gmake"])
    },
    Spelling {
        valued: &[
            "-d",
            "-s",
            "-r",
            "-f",
            "-I",
            "--date",
            "--set",
            "--reference",
            "--file",
        ],
        aliases: &[
            ("--date", "-d"),
            ("--set", "-s"),
            ("--reference", "-r"),
            ("--utc", "-u"),
        ],
        ..spelling(&["date"])
    },
    Spelling {
        valued: &["-I", "-L", "-P", "-o", "--charset", "--filelimit", "--sort"],
        ..spelling(&["tree"])
    },
    Spelling {
        valued: &["-n", "-s", "-c", "-w"],
        aliases: &[("--seconds", "-s"), ("--count", "-c")],
        ..spelling(&["free"])
    },
    Spelling {
        valued: &[
            "-o", "-c", "-p", "-u", "-g", "-a", "-d", "-D", "-i", "-r", "-s", "-T",
        ],
        ..spelling(&["lsof"])
    },
    Spelling {
        valued: &["-o", "-x", "-n", "-L", "-I"],
        aliases: &[("--output", "-o"), ("--exclude", "-e"), ("--include", "-I")],
        ..spelling(&["lsblk"])
    },
    Spelling {
        valued: &["-c", "-s", "-i", "-t", "-W", "-w", "-I", "-m"],
        ..spelling(&["ping", "ping6"])
    },
    Spelling {
        valued: &["-e", "-s"],
        aliases: &[("--regexp", "-e")],
        ..spelling(&[
            "uniq",
            "wc",
            "tr",
            "cat",
            "ls",
            "stat",
            "file",
            "diff",
            "cmp",
            "md5sum",
            "sha256sum",
            "sha1sum",
            "seq",
            "tee",
        ])
    },
];

static DEFAULT_SPELLING: Spelling = spelling(&[]);

fn spelling_of(program: &str) -> &'static Spelling {
    SPELLINGS
        .iter()
        .find(|s| s.programs.contains(&program))
        .unwrap_or(&DEFAULT_SPELLING)
}

/// Whether `flag` (in any spelling) takes the next word as its value for `program`. The
/// wrappers read their own options with this, so one table says how every program is spelled.
pub(crate) fn takes_value(program: &str, flag: &str) -> bool {
    let spelling = spelling_of(program);
    spelling.valued.contains(&flag)
        || spelling
            .valued
            .contains(&canonical(spelling, flag).as_ref())
}

/// The canonical name of `flag` for `program`: `("rm", "--recursive")` is `-r`,
/// `("git", "-f")` is `--force`. Unknown flags are returned as written.
pub fn normalise_flag<'a>(program: &str, flag: &'a str) -> Cow<'a, str> {
    canonical(spelling_of(program), flag)
}

fn canonical<'a>(spelling: &Spelling, flag: &'a str) -> Cow<'a, str> {
    match spelling.aliases.iter().find(|(alias, _)| *alias == flag) {
        Some((_, canonical)) => Cow::Borrowed(*canonical),
        None => Cow::Borrowed(flag),
    }
}

/// Splits words after the command name into flags and positionals.
pub fn split_args(program: &str, words: &[String]) -> Vec<Arg> {
    let spelling = spelling_of(program);
    let mut args = Vec::with_capacity(words.len());
    let mut index = 0;
    let mut options_ended = false;
    while index < words.len() {
        let word = &words[index];
        index += 1;
        if options_ended || word == "-" || !word.starts_with('-') || word.len() < 2 {
            args.push(Arg::Positional(word.clone()));
            continue;
        }
        if word == "--" {
            options_ended = true;
            continue;
        }
        if let Some(long) = word.strip_prefix("--") {
            let (name, value) = match long.split_once('=') {
                Some((name, value)) => (format!("--{name}"), Some(value.to_owned())),
                None => (word.clone(), None),
            };
            let value = value.or_else(|| take_value(spelling, &name, words, &mut index));
            let name = canonical(spelling, &name).into_owned();
            args.push(Arg::Flag { name, value });
            continue;
        }
        let body = &word[1..];
        if spelling.single_dash_long || body.bytes().all(|b| b.is_ascii_digit()) {
            let (name, value) = match body.split_once('=') {
                Some((name, value)) if spelling.single_dash_long => {
                    (format!("-{name}"), Some(value.to_owned()))
                }
                _ => (word.clone(), None),
            };
            let value = value.or_else(|| take_value(spelling, &name, words, &mut index));
            let name = canonical(spelling, &name).into_owned();
            args.push(Arg::Flag { name, value });
            continue;
        }
        // A bundle of short flags: `-rf`, `-n5`, `-i.bak`.
        for (offset, c) in body.char_indices() {
            let name = format!("-{c}");
            let rest = &body[offset + c.len_utf8()..];
            let takes_value = spelling.valued.contains(&name.as_str());
            if spelling.attached.contains(&c) {
                let value = (!rest.is_empty()).then(|| rest.to_owned());
                let name = canonical(spelling, &name).into_owned();
                args.push(Arg::Flag { name, value });
                break;
            }
            if takes_value {
                let value = if rest.is_empty() {
                    take_value(spelling, &name, words, &mut index)
                } else {
                    Some(rest.to_owned())
                };
                let name = canonical(spelling, &name).into_owned();
                args.push(Arg::Flag { name, value });
                break;
            }
            let name = canonical(spelling, &name).into_owned();
            args.push(Arg::Flag { name, value: None });
        }
    }
    args
}

fn take_value(
    spelling: &Spelling,
    name: &str,
    words: &[String],
    index: &mut usize,
) -> Option<String> {
    if !spelling.valued.contains(&name) {
        return None;
    }
    let value = words.get(*index)?.clone();
    *index += 1;
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(program: &str, line: &str) -> Vec<String> {
        let words: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
        split_args(program, &words)
            .into_iter()
            .map(|arg| match arg {
                Arg::Flag { name, value: None } => name,
                Arg::Flag {
                    name,
                    value: Some(v),
                } => format!("{name}={v}"),
                Arg::Positional(p) => format!("'{p}'"),
            })
            .collect()
    }

    #[test]
    fn flags_normalise() {
        let cases: &[(&str, &str, &[&str])] = &[
            ("rm", "-rf /", &["-r", "-f", "'/'"]),
            ("rm", "-fR /", &["-f", "-r", "'/'"]),
            ("rm", "--recursive --force -- -x", &["-r", "-f", "'-x'"]),
            ("head", "-n 5 file", &["-n=5", "'file'"]),
            ("head", "-n5 file", &["-n=5", "'file'"]),
            ("head", "-20 file", &["-20", "'file'"]),
            ("git", "-C repo status", &["-C=repo", "'status'"]),
            (
                "git",
                "push -f origin main",
                &["'push'", "--force", "'origin'", "'main'"],
            ),
            ("sed", "-i.bak s/a/b/ f", &["-i=.bak", "'s/a/b/'", "'f'"]),
            ("find", "/ -name x -delete", &["'/'", "-name=x", "-delete"]),
            ("kill", "-KILL 1", &["-KILL", "'1'"]),
            ("curl", "--output=x http://h", &["-o=x", "'http://h'"]),
            ("iptables", "--flush", &["-F"]),
            ("psql", "-c 'DROP", &["-c='DROP"]),
            ("ls", "-", &["'-'"]),
        ];
        for (program, line, expected) in cases {
            assert_eq!(split(program, line), *expected, "{program} {line}");
        }
    }
}
