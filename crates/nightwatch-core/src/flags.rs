//! Flag normalisation: `-rf` is `-r -f`, `--recursive` is `-r` for `rm`, `-n 5` is one flag with
//! a value for `head`, and `--recur` is `--recursive` because getopt_long and git take any
//! unambiguous prefix of a long option. Policy patterns are normalised through the same tables, so
//! a rule written with either spelling matches both.

use crate::Arg;
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
    /// The program's other long options, separated by spaces, so that an abbreviation is read
    /// as the option it begins; a trailing `=` marks one that takes a value. With `aliases` and
    /// `valued` these are all its long options: one left out could make a prefix look unambiguous.
    longs: &'static str,
    /// Subcommands with long options of their own (git), spelled as `longs`: before the
    /// subcommand the program's own options must be spelled out, after it the subcommand's
    /// abbreviate.
    subcommands: &'static [(&'static str, &'static str)],
    /// Single-dash words are whole flags (`find -name`, `kill -KILL`), never bundles.
    single_dash_long: bool,
    /// Long options must be spelled out: the program's parser takes no abbreviations (cobra,
    /// jq, ripgrep, the interpreters and shells).
    exact_longs: bool,
    /// Subcommands (as positional words) whose next positional names an image or container
    /// and ends the program's options: what follows is the argv of a command run there
    /// (`docker run busybox sh -c ...`, whose `-c` is the shell's, not docker's `--context`).
    argv_after: &'static [&'static [&'static str]],
}

const fn spelling(programs: &'static [&'static str]) -> Spelling {
    Spelling {
        programs,
        valued: &[],
        attached: &[],
        aliases: &[],
        longs: "",
        subcommands: &[],
        single_dash_long: false,
        exact_longs: false,
        argv_after: &[],
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
        longs: "--one-file-system --no-preserve-root --preserve-root --help --version",
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
        longs: "--preserve --attributes-only --backup --copy-contents --no-dereference \
            --interactive --link --dereference --no-clobber --no-preserve= --parents --reflink \
            --remove-destination --sparse= --strip-trailing-slashes --symbolic-link \
            --no-target-directory --update --verbose --one-file-system --context --help --version",
        ..spelling(&["cp"])
    },
    Spelling {
        valued: &["-t", "-S"],
        aliases: &[
            ("--force", "-f"),
            ("--target-directory", "-t"),
            ("--suffix", "-S"),
        ],
        longs: "--backup --interactive --no-clobber --strip-trailing-slashes --no-target-directory \
            --update --verbose --context --help --version",
        ..spelling(&["mv"])
    },
    Spelling {
        valued: &["-t", "-S"],
        aliases: &[
            ("--force", "-f"),
            ("--target-directory", "-t"),
            ("--suffix", "-S"),
        ],
        longs: "--symbolic --backup --directory --interactive --logical --no-dereference \
            --physical --relative --no-target-directory --verbose --help --version",
        ..spelling(&["ln"])
    },
    Spelling {
        valued: &["-t", "-m", "-o", "-g", "-S"],
        aliases: &[
            ("--target-directory", "-t"),
            ("--mode", "-m"),
            ("--owner", "-o"),
            ("--group", "-g"),
        ],
        longs: "--backup --compare --directory --preserve-timestamps --strip --strip-program= \
            --suffix= --no-target-directory --verbose --preserve-context --context --help \
            --version",
        ..spelling(&["install"])
    },
    Spelling {
        aliases: &[("--recursive", "-R"), ("--verbose", "-v")],
        longs: "--reference= --changes --silent --quiet --no-preserve-root --preserve-root --help \
            --version",
        ..spelling(&["chmod"])
    },
    Spelling {
        aliases: &[("--recursive", "-R"), ("--verbose", "-v")],
        longs: "--reference= --changes --silent --quiet --dereference --no-dereference --from= \
            --no-preserve-root --preserve-root --help --version",
        ..spelling(&["chown", "chgrp"])
    },
    Spelling {
        valued: &["-n", "-s"],
        aliases: &[
            ("--iterations", "-n"),
            ("--size", "-s"),
            ("--remove", "-u"),
            ("--zero", "-z"),
        ],
        longs: "--force --random-source= --verbose --exact --help --version",
        ..spelling(&["shred"])
    },
    Spelling {
        valued: &["-s", "-r"],
        aliases: &[("--size", "-s"), ("--reference", "-r")],
        longs: "--no-create --io-blocks --help --version",
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
        longs: "--quiet --silent --debug --follow-symlinks --posix --regexp-extended --separate \
            --sandbox --unbuffered --null-data --help --version --zero-terminated --binary",
        ..spelling(&["sed", "gsed"])
    },
    Spelling {
        valued: &["-f", "-v", "-F"],
        aliases: &[
            ("--file", "-f"),
            ("--assign", "-v"),
            ("--field-separator", "-F"),
        ],
        longs: "--characters-as-bytes --traditional --copyright --debug --dump-variables --exec \
            --gen-pot --help --include --lint --lint-old --load --non-decimal-data --no-optimize \
            --optimize --posix --pretty-print --profile --re-interval --sandbox --source \
            --use-lc-numeric --version --bignum --csv",
        ..spelling(&["awk", "gawk", "mawk", "nawk"])
    },
    Spelling {
        valued: &["-n", "-c"],
        aliases: &[("--lines", "-n"), ("--bytes", "-c")],
        longs: "--quiet --silent --verbose --zero-terminated --help --version",
        ..spelling(&["head"])
    },
    Spelling {
        valued: &["-n", "-c", "-s"],
        aliases: &[("--lines", "-n"), ("--bytes", "-c"), ("--follow", "-f")],
        longs: "--retry --max-unchanged-stats= --pid= --quiet --silent --sleep-interval= --verbose \
            --zero-terminated --help --version",
        ..spelling(&["tail"])
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
        exact_longs: true,
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
        longs: "--extended-regexp --fixed-strings --basic-regexp --perl-regexp --no-ignore-case \
            --word-regexp --line-regexp --null-data --no-messages --invert-match --version --help \
            --byte-offset --line-number --line-buffered --with-filename --no-filename --label= \
            --only-matching --quiet --silent --binary-files= --text --directories= --devices= \
            --exclude-from= --files-without-match --files-with-matches --count --initial-tab \
            --null --group-separator= --no-group-separator --color --colour --binary",
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
        longs: "--files0-from= --ignore-leading-blanks --dictionary-order --ignore-case \
            --general-numeric-sort --ignore-nonprinting --month-sort --human-numeric-sort \
            --numeric-sort --random-sort --random-source= --reverse --sort= --version-sort \
            --batch-size= --check --compress-program= --debug --merge --stable --parallel= \
            --unique --zero-terminated --help --version",
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
        longs: "--complement --only-delimited --output-delimiter= --zero-terminated --help \
            --version",
        ..spelling(&["cut"])
    },
    Spelling {
        valued: &["-d", "-B", "-t", "-X", "--exclude", "--max-depth"],
        aliases: &[("--max-depth", "-d"), ("--block-size", "-B")],
        longs: "--files0-from= --null --all --apparent-size --bytes --total --dereference-args \
            --summarize --human-readable --inodes --dereference --count-links --no-dereference \
            --separate-dirs --si --threshold= --time --time-style= --exclude-from= \
            --one-file-system --help --version",
        ..spelling(&["du"])
    },
    Spelling {
        valued: &["-B", "-t", "-x"],
        aliases: &[("--block-size", "-B")],
        longs: "--all --human-readable --si --inodes --local --no-sync --output --portability \
            --sync --total --type= --print-type --exclude-type= --help --version",
        ..spelling(&["df"])
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
        longs: "--catenate --concatenate --delete --diff --compare --test-label --check-device \
            --listed-incremental= --incremental --hole-detection= --ignore-failed-read --level= \
            --no-check-device --no-seek --seek --occurrence --sparse-version= --sparse --add-file= \
            --exclude= --exclude-backups --exclude-caches --exclude-caches-all \
            --exclude-caches-under --exclude-ignore= --exclude-ignore-recursive= --exclude-tag= \
            --exclude-tag-all= --exclude-tag-under= --exclude-vcs --exclude-vcs-ignores --no-null \
            --null --no-recursion --no-unquote --no-verbatim-files-from --verbatim-files-from \
            --recursion --unquote --anchored --ignore-case --no-anchored --no-ignore-case \
            --no-wildcards --no-wildcards-match-slash --wildcards --wildcards-match-slash \
            --keep-directory-symlink --keep-newer-files --keep-old-files --no-overwrite-dir \
            --one-top-level --overwrite --overwrite-dir --recursive-unlink --remove-files \
            --skip-old-files --unlink-first --verify --ignore-command-error \
            --no-ignore-command-error --to-stdout --to-command= --atime-preserve --clamp-mtime \
            --mtime= --delay-directory-restore --group= --group-map= --mode= --touch \
            --no-delay-directory-restore --no-same-owner --no-same-permissions --numeric-owner \
            --owner= --owner-map= --preserve-permissions --same-permissions --same-owner --sort= \
            --preserve-order --same-order --acls --no-acls --no-selinux --no-xattrs --selinux \
            --xattrs --xattrs-exclude= --xattrs-include= --force-local --info-script= \
            --new-volume-script= --tape-length= --multi-volume --rmt-command= --rsh-command= \
            --volno-file= --blocking-factor= --read-full-records --ignore-zeros --record-size= \
            --format= --old-archive --portability --pax-option= --posix --label= --auto-compress \
            --lzip --lzma --lzop --no-auto-compress --zstd --gunzip --ungzip --compress \
            --uncompress --backup --hard-dereference --dereference --starting-file= --newer-mtime= \
            --newer= --after-date= --one-file-system --absolute-names --suffix= \
            --strip-components= --transform= --xform= --checkpoint --checkpoint-action= \
            --full-time --index-file= --check-links --no-quote-chars= --quote-chars= \
            --quoting-style= --block-number --show-defaults --show-omitted-dirs \
            --show-snapshot-field-ranges --show-transformed-names --show-stored-names --totals \
            --utc --warning= --interactive --confirmation --help --restrict --usage --version",
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
        longs: "--abstract-unix-socket= --alt-svc= --anyauth --append --aws-sigv4= --basic \
            --capath= --cert-status --cert-type= --ciphers= --compressed --compressed-ssh \
            --connect-to= --continue-at= --create-dirs --create-file-mode= --crlf --crlfile= \
            --curves= --delegation= --digest --disable --disable-eprt --disable-epsv \
            --disallow-username-in-url --dns-interface= --dns-ipv4-addr= --dns-ipv6-addr= \
            --dns-servers= --doh-cert-status --doh-insecure --doh-url= --dump-header= --egd-file= \
            --engine= --etag-compare= --etag-save= --expect100-timeout= --fail-early \
            --fail-with-body --false-start --form-escape --ftp-account= --ftp-alternative-to-user= \
            --ftp-create-dirs --ftp-method= --ftp-pasv --ftp-port= --ftp-pret --ftp-skip-pasv-ip \
            --ftp-ssl-ccc --ftp-ssl-ccc-mode= --ftp-ssl-control --get --globoff \
            --happy-eyeballs-timeout-ms= --haproxy-protocol --help --hostpubmd5= --hostpubsha256= \
            --hsts= --http0 --http1 --http2 --http2-prior-knowledge --http3 --http3-only \
            --ignore-content-length --interface= --ipv4 --ipv6 --junk-session-cookies \
            --keepalive-time= --key-type= --krb= --libcurl= --list-only --local-port= \
            --location-trusted --login-options= --mail-auth= --mail-from= --mail-rcpt= \
            --mail-rcpt-allowfails --manual --max-redirs= --metalink --negotiate --netrc \
            --netrc-file= --netrc-optional --next --no-alpn --no-buffer --no-clobber \
            --no-keepalive --no-npn --no-progress-meter --no-sessionid --noproxy= --ntlm --ntlm-wb \
            --oauth2-bearer= --output-dir= --parallel --parallel-immediate --parallel-max= --pass= \
            --path-as-is --pinnedpubkey= --post301 --post302 --post303 --preproxy= --progress-bar \
            --proto= --proto-default= --proto-redir= --proxy-anyauth --proxy-basic --proxy-cacert= \
            --proxy-capath= --proxy-cert= --proxy-cert-type= --proxy-ciphers= --proxy-crlfile= \
            --proxy-digest --proxy-header= --proxy-insecure --proxy-key= --proxy-key-type= \
            --proxy-negotiate --proxy-ntlm --proxy-pass= --proxy-pinnedpubkey= \
            --proxy-service-name= --proxy-ssl-allow-beast --proxy-ssl-auto-client-cert \
            --proxy-tls13-ciphers= --proxy-tlsauthtype= --proxy-tlspassword= --proxy-tlsuser= \
            --proxy-tlsv1 --proxy-user= --proxy1 --proxytunnel --pubkey= --quote= --random-file= \
            --range= --rate= --raw --remote-header-name --remote-name-all --remote-time \
            --remove-on-error --request-target= --retry-all-errors --retry-connrefused \
            --sasl-authzid= --sasl-ir --service-name= --socks4= --socks4a= --socks5= \
            --socks5-basic --socks5-gssapi --socks5-gssapi-nec --socks5-gssapi-service= \
            --socks5-hostname= --speed-limit= --speed-time= --ssl --ssl-allow-beast \
            --ssl-auto-client-cert --ssl-no-revoke --ssl-reqd --ssl-revoke-best-effort --sslv2 \
            --sslv3 --stderr= --styled-output --suppress-connect-headers --tcp-fastopen \
            --tcp-nodelay --telnet-option= --tftp-blksize= --tftp-no-options --time-cond= \
            --tls-max= --tls13-ciphers= --tlsauthtype= --tlspassword= --tlsuser= --tlsv1 \
            --tr-encoding --trace= --trace-ascii= --trace-time --unix-socket= --url-query= \
            --use-ascii --version --xattr --variable= --ca-native --proxy-ca-native --ip-tos= \
            --mptcp --vlan-priority= --skip-existing --proxy-http2 --haproxy-clientip= \
            --trace-config= --trace-ids --ssl-sessions= --ech= --knownhosts= --sigalgs= \
            --upload-flags= --out-null --follow --dump-ca-embed --tls-earlydata --expand-url= \
            --expand-data= --no-remote-name",
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
        longs: "--version --help --background --debug --verbose --no-verbose --report-speed= \
            --force-html --base= --config= --no-config --rejected-log= --retry-connrefused \
            --retry-on-http-error= --no-clobber --no-netrc --continue --start-pos= --progress= \
            --show-progress --timestamping --no-if-modified-since --no-use-server-timestamps \
            --server-response --spider --dns-timeout= --connect-timeout= --read-timeout= --wait= \
            --waitretry= --random-wait --no-proxy --quota= --bind-address= --limit-rate= \
            --no-dns-cache --restrict-file-names= --ignore-case --inet4-only --inet6-only \
            --prefer-family= --ask-password --use-askpass= --no-iri --local-encoding= \
            --remote-encoding= --unlink --xattr --no-directories --force-directories \
            --no-host-directories --protocol-directories --cut-dirs= --no-cache --default-page= \
            --adjust-extension --ignore-length --compression= --max-redirect= --proxy-user= \
            --proxy-password= --referer= --save-headers --no-http-keep-alive --no-cookies \
            --load-cookies= --save-cookies= --keep-session-cookies --content-disposition \
            --content-on-error --auth-no-challenge --secure-protocol= --https-only \
            --no-check-certificate --certificate= --certificate-type= --private-key= \
            --private-key-type= --ca-certificate= --ca-directory= --crl-file= --pinnedpubkey= \
            --ciphers= --no-hsts --hsts-file= --ftp-user= --ftp-password= --no-remove-listing \
            --no-glob --no-passive-ftp --preserve-permissions --retr-symlinks --ftps-implicit \
            --ftps-resume-ssl --ftps-clear-data-connection --ftps-fallback-to-ftp --warc-file= \
            --warc-header= --warc-max-size= --warc-cdx --warc-dedup= --no-warc-compression \
            --no-warc-digests --no-warc-keep-log --warc-tempdir= --level= --delete-after \
            --convert-links --convert-file-only --backups= --backup-converted --page-requisites \
            --strict-comments --accept= --reject= --accept-regex= --reject-regex= --regex-type= \
            --domains= --exclude-domains= --follow-ftp --follow-tags= --ignore-tags= --span-hosts \
            --relative --include-directories= --trust-server-names --exclude-directories= \
            --no-parent",
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
            ("--del", "--delete-during"),
        ],
        longs: "--info= --debug= --stderr= --quiet --no-motd --checksum --no-implied-dirs \
            --relative --backup --update --inplace --append --append-verify --dirs --old-dirs \
            --mkpath --links --copy-links --copy-unsafe-links --safe-links --munge-links \
            --copy-dirlinks --keep-dirlinks --hard-links --perms --executability --acls --xattrs \
            --owner --group --devices --copy-devices --write-devices --specials --times --atimes \
            --open-noatime --crtimes --omit-dir-times --omit-link-times --super --fake-super \
            --sparse --preallocate --dry-run --whole-file --checksum-choice= --cc= \
            --one-file-system --existing --ignore-existing --remove-source-files --delete \
            --delete-before --delete-delay --delete-after --delete-excluded --ignore-missing-args \
            --delete-missing-args --ignore-errors --force --max-delete= --max-alloc= --partial \
            --delay-updates --prune-empty-dirs --numeric-ids --usermap= --groupmap= --contimeout= \
            --ignore-times --size-only --modify-window= --fuzzy --compress-choice= --zc= \
            --compress-level= --zl= --skip-compress= --old-compress --new-compress --cvs-exclude \
            --from0 --old-args --secluded-args --protect-args --trust-sender --copy-as= --address= \
            --sockopts= --blocking-io --outbuf= --stats --8-bit-output --human-readable --progress \
            --itemize-changes --remote-option= --out-format= --log-format= --log-file-format= \
            --early-input= --list-only --stop-after= --stop-at= --fsync --write-batch= \
            --only-write-batch= --read-batch= --protocol= --iconv= --checksum-seed= --ipv4 --ipv6 \
            --version --help --daemon --config= --dparam= --no-detach",
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
        longs: "--replace --open-tty --show-limits --exit --help --version --eof",
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
        longs: "--bell --help --preserve-groups --remove-timestamp --reset-timestamp --validate \
            --version",
        ..spelling(&["sudo"])
    },
    Spelling {
        valued: &["-u", "-C"],
        ..spelling(&["doas"])
    },
    Spelling {
        valued: &["-u"],
        aliases: &[("--user", "-u")],
        exact_longs: true,
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
        longs: "--seccomp-bpf --env= --detach-on= --daemonize --follow-forks --output-separately \
            --interruptible= --trace= --signal= --status= --trace-path= --successful-only \
            --failed-only --columns= --abbrev= --verbose --raw= --read= --write= --quiet --kvm= \
            --decode-fds --instruction-pointer --stack-traces --syscall-number \
            --output-append-mode --relative-timestamps --string-limit= --absolute-timestamps \
            --syscall-times --no-abbrev --strings-in-hex --const-print-style= --decode-pids= \
            --summary-only --summary --summary-syscall-overhead= --summary-sort-by= \
            --summary-columns= --summary-wall-clock --inject= --fault= --debug --help --tips \
            --version --silent --silence --align= --config= --demangle --indent= --library= \
            --where= --no-signals",
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
        longs: "--fast --pty --help --version",
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
        longs: "--block-signal --default-signal --ignore-signal --list-signal-handling --debug \
            --help --version",
        ..spelling(&["env"])
    },
    Spelling {
        valued: &["-n"],
        aliases: &[("--adjustment", "-n")],
        longs: "--help --version",
        ..spelling(&["nice"])
    },
    Spelling {
        valued: &["-c", "-n", "-p", "-P", "-u"],
        aliases: &[("--class", "-c"), ("--classdata", "-n"), ("--pid", "-p")],
        longs: "--pgid= --ignore --uid= --help --version",
        ..spelling(&["ionice"])
    },
    Spelling {
        valued: &["-s", "-k"],
        aliases: &[("--signal", "-s"), ("--kill-after", "-k")],
        longs: "--preserve-status --foreground --verbose --help --version",
        ..spelling(&["timeout"])
    },
    Spelling {
        valued: &["-i", "-o", "-e"],
        aliases: &[("--input", "-i"), ("--output", "-o"), ("--error", "-e")],
        longs: "--help --version",
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
        longs: "--unlock --close --no-fork --verbose --help --version",
        ..spelling(&["flock"])
    },
    Spelling {
        valued: &["-n", "-q"],
        aliases: &[("--interval", "-n"), ("--exec", "-x")],
        longs: "--beep --color --differences --errexit --chgexit --equexit= --precise --no-title \
            --no-wrap --help --version",
        ..spelling(&["watch"])
    },
    Spelling {
        valued: &["-o", "-f"],
        aliases: &[("--output", "-o"), ("--format", "-f"), ("--append", "-a")],
        longs: "--portability --quiet --verbose --help --version",
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
        longs: "--queue= --echo --count --pgroup= --group= --ignore-case --newest --oldest \
            --older= --parent= --session= --terminal= --euid= --uid= --pidfile= --logpidfile \
            --runstates= --ignore-ancestors --cgroup= --help --version --delimiter= --list-name \
            --list-full --inverse --lightweight --list --process-group --younger-than= \
            --older-than= --interactive --quiet --regexp --user= --verbose --wait --context=",
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
        longs: "--check= --list-rules --new= --numeric --verbose --wait --wait-interval= --exact \
            --fragment --line-numbers --modprobe= --set-counters= --ipv4 --ipv6 --help --version \
            --src= --dst=",
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
        longs: "--help --version --system --user --failed --value --full --recursive --reverse \
            --with-dependencies --show-transaction --show-types --check-inhibitors= --what= --now \
            --dry-run --wait --no-block --no-wall --no-reload --legend= --no-pager \
            --no-ask-password --global --runtime --preset-mode= --image= --firmware-setup \
            --boot-loader-menu= --boot-loader-entry= --plain --timestamp= --read-only --mkdir \
            --marked",
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
        longs: "--system --user --merge --cursor-file= --case-sensitive --show-cursor --utc \
            --no-hostname --no-full --all --no-tail --interval= --verify-key= --force --setup-keys \
            --help --version --fields --list-boots --disk-usage --verify --sync --relinquish-var \
            --smart-relinquish-var --flush --rotate --header --list-catalog --dump-catalog \
            --update-catalog",
        ..spelling(&["journalctl"])
    },
    Spelling {
        valued: &["-F"],
        longs: "--alias --all-fqdns --boot --domain --fqdn --long --file= --ip-address \
            --all-ip-addresses --short --yp --nis --help --version --verbose",
        ..spelling(&["hostname"])
    },
    Spelling {
        valued: &["-N", "-f", "-A", "-F"],
        longs: "--kill --numeric --resolve --all --listening --options --extended --memory \
            --processes --threads --info --tos --cgroup --tipcinfo --summary --events --bpf \
            --context --contexts --net= --ipv4 --ipv6 --packet --tcp --udp --dccp --raw --unix \
            --sctp --vsock --xdp --mptcp --inet-sockets --family= --query= --socket= --diag= \
            --filter= --no-header --oneline --help --version",
        ..spelling(&["ss"])
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
        exact_longs: true,
        argv_after: &[
            &["run"],
            &["create"],
            &["exec"],
            &["container", "run"],
            &["container", "create"],
            &["container", "exec"],
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
        exact_longs: true,
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
            ("--stdin", "-i"),
            ("--tty", "-t"),
            ("--watch", "-w"),
            ("--recursive", "-R"),
        ],
        exact_longs: true,
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
            ("--config", "-c"),
            ("--quiet", "-q"),
            ("--verbose", "-v"),
        ],
        subcommands: &[
            (
                "add",
                "--dry-run --verbose --interactive --patch --edit --force --update --renormalize \
                    --intent-to-add --all --ignore-removal --refresh --ignore-errors \
                    --ignore-missing --sparse --chmod= --warn-embedded-repo --pathspec-from-file= \
                    --pathspec-file-nul",
            ),
            (
                "am",
                "--interactive --no-verify --binary --3way --quiet --signoff --utf8 --keep \
                    --keep-non-patch --message-id --keep-cr --scissors --quoted-cr= --whitespace= \
                    --ignore-space-change --ignore-whitespace --directory= --exclude= --include= \
                    --patch-format= --reject --resolvemsg= --continue --resolved --skip --abort \
                    --quit --show-current-patch --retry --allow-empty \
                    --committer-date-is-author-date --ignore-date --rerere-autoupdate --gpg-sign \
                    --empty= --rebasing --verify",
            ),
            (
                "apply",
                "--exclude= --include= --stat --allow-binary-replacement --binary --numstat \
                    --summary --check --index --intent-to-add --cached --unsafe-paths --apply \
                    --3way --ours --theirs --union --build-fake-ancestor= --whitespace= \
                    --ignore-space-change --ignore-whitespace --reverse --unidiff-zero --reject \
                    --allow-overlap --verbose --quiet --inaccurate-eof --recount --directory= \
                    --allow-empty --add",
            ),
            ("archive", "--output= --remote= --exec="),
            (
                "blame",
                "--incremental --root --show-stats --progress --score-debug --show-name \
                    --show-number --porcelain --line-porcelain --show-email --ignore-rev= \
                    --ignore-revs-file= --color-lines --color-by-age --minimal --contents= \
                    --abbrev",
            ),
            (
                "branch",
                "--verbose --quiet --track --set-upstream --set-upstream-to= --unset-upstream \
                    --color --remotes --contains --with --without --abbrev --all --delete --move \
                    --omit-empty --copy --list --show-current --create-reflog --edit-description \
                    --force --merged --column --sort= --points-at= --ignore-case \
                    --recurse-submodules --format=",
            ),
            (
                "bundle",
                "--quiet --progress --all-progress --all-progress-implied --version=",
            ),
            (
                "cat-file",
                "--allow-unknown-type --use-mailmap --mailmap --batch --batch-check \
                    --batch-command --batch-all-objects --buffer --follow-symlinks --unordered \
                    --textconv --filters --path=",
            ),
            (
                "checkout",
                "--guess --overlay --quiet --recurse-submodules --progress --merge --conflict= \
                    --detach --track --force --orphan= --overwrite-ignore --ignore-other-worktrees \
                    --ours --theirs --patch --ignore-skip-worktree-bits --pathspec-from-file= \
                    --pathspec-file-nul",
            ),
            (
                "checkout-index",
                "--all --ignore-skip-worktree-bits --force --quiet --index --stdin --temp \
                    --prefix= --stage= --create",
            ),
            (
                "cherry-pick",
                "--quit --continue --abort --skip --cleanup= --edit --signoff --mainline= \
                    --rerere-autoupdate --strategy= --strategy-option= --gpg-sign --ff \
                    --allow-empty --allow-empty-message --keep-redundant-commits --empty= --commit",
            ),
            (
                "clean",
                "--quiet --dry-run --force --interactive --exclude=",
            ),
            (
                "clone",
                "--verbose --quiet --progress --reject-shallow --bare --naked --mirror --local \
                    --shared --recurse-submodules --recursive --jobs= --template= --reference= \
                    --reference-if-able= --dissociate --origin= --branch= --upload-pack= --depth= \
                    --shallow-since= --shallow-exclude= --single-branch --shallow-submodules \
                    --separate-git-dir= --ref-format= --config= --server-option= --ipv4 --ipv6 \
                    --filter= --also-filter-submodules --remote-submodules --sparse --bundle-uri= \
                    --checkout --hardlinks --tags",
            ),
            (
                "commit",
                "--quiet --verbose --file= --author= --date= --message= --reedit-message= \
                    --reuse-message= --fixup= --squash= --reset-author --trailer= --signoff \
                    --template= --edit --cleanup= --status --gpg-sign --all --include \
                    --interactive --patch --only --no-verify --dry-run --short --branch \
                    --ahead-behind --porcelain --long --null --amend --untracked-files \
                    --pathspec-from-file= --pathspec-file-nul --allow-empty --allow-empty-message \
                    --verify --post-rewrite",
            ),
            (
                "config",
                "--global --system --local --worktree --file= --blob= --type= --bool --int \
                    --bool-or-int --bool-or-str --path --expiry-date --all --value= --fixed-value \
                    --comment= --append --regexp --url= --null --name-only --show-origin \
                    --show-scope --show-names --includes --default= --get --get-all --get-regexp \
                    --get-urlmatch --replace-all --add --unset --unset-all --rename-section \
                    --remove-section --list --edit --get-color --get-colorbool",
            ),
            (
                "describe",
                "--contains --debug --all --tags --long --first-parent --abbrev --exact-match \
                    --candidates= --match= --exclude= --always --dirty --broken",
            ),
            (
                "difftool",
                "--gui --dir-diff --prompt --symlinks --tool= --tool-help --trust-exit-code \
                    --extcmd= --index",
            ),
            (
                "fetch",
                "--verbose --quiet --all --set-upstream --append --atomic --upload-pack= --force \
                    --multiple --tags --jobs= --prefetch --prune --prune-tags --recurse-submodules \
                    --dry-run --porcelain --write-fetch-head --keep --update-head-ok --progress \
                    --depth= --shallow-since= --shallow-exclude= --deepen= --unshallow --refetch \
                    --submodule-prefix= --recurse-submodules-default= --update-shallow --refmap= \
                    --server-option= --ipv4 --ipv6 --negotiation-tip= --negotiate-only --filter= \
                    --auto-maintenance --auto-gc --show-forced-updates --write-commit-graph \
                    --stdin",
            ),
            (
                "format-patch",
                "--numbered --signoff --stdout --cover-letter --numbered-files --suffix= \
                    --start-number= --reroll-count= --filename-max-length= --rfc \
                    --cover-from-description= --description-file= --subject-prefix= \
                    --output-directory= --keep-subject --zero-commit --ignore-if-in-upstream \
                    --no-stat --add-header= --to= --cc= --from --in-reply-to= --attach --inline \
                    --thread --signature= --base= --signature-file= --quiet --progress \
                    --interdiff= --range-diff= --creation-factor= --force-in-body-from --binary",
            ),
            (
                "fsck",
                "--verbose --unreachable --dangling --tags --root --cache --reflogs --full \
                    --connectivity-only --strict --lost-found --progress --name-objects",
            ),
            (
                "gc",
                "--quiet --prune --cruft --max-cruft-size= --aggressive --auto --detach --force \
                    --keep-largest-pack",
            ),
            (
                "grep",
                "--cached --untracked --exclude-standard --recurse-submodules --invert-match \
                    --ignore-case --word-regexp --text --textconv --recursive --max-depth= \
                    --extended-regexp --basic-regexp --fixed-strings --perl-regexp --line-number \
                    --column --full-name --files-with-matches --name-only --files-without-match \
                    --null --only-matching --count --color --break --heading --context= \
                    --before-context= --after-context= --threads= --show-function \
                    --function-context --and --or --not --quiet --all-match --open-files-in-pager \
                    --ext-grep --max-count= --index",
            ),
            (
                "hash-object",
                "--stdin --stdin-paths --literally --path= --filters",
            ),
            (
                "init",
                "--template= --bare --shared --quiet --separate-git-dir= --initial-branch= \
                    --object-format= --ref-format=",
            ),
            (
                "ls-remote",
                "--quiet --upload-pack= --exec= --tags --branches --heads --refs --get-url --sort= \
                    --exit-code --symref --server-option=",
            ),
            ("maintenance", "--auto --detach --schedule= --quiet --task="),
            (
                "merge",
                "--stat --summary --log --squash --commit --edit --cleanup= --ff --ff-only \
                    --rerere-autoupdate --verify-signatures --strategy= --strategy-option= \
                    --message= --file --into-name= --verbose --quiet --abort --quit --continue \
                    --allow-unrelated-histories --progress --gpg-sign --autostash \
                    --overwrite-ignore --signoff --no-verify --verify",
            ),
            ("mv", "--verbose --dry-run --force --sparse"),
            ("notes", "--ref="),
            (
                "prune",
                "--dry-run --verbose --progress --expire= --exclude-promisor-objects",
            ),
            (
                "pull",
                "--verbose --quiet --progress --recurse-submodules --rebase --stat --summary --log \
                    --signoff --squash --commit --edit --cleanup= --ff --ff-only --verify \
                    --verify-signatures --autostash --strategy= --strategy-option= --gpg-sign \
                    --allow-unrelated-histories --all --append --upload-pack= --force --tags \
                    --prune --jobs --dry-run --keep --depth= --shallow-since= --shallow-exclude= \
                    --deepen= --unshallow --update-shallow --refmap= --server-option= --ipv4 \
                    --ipv6 --negotiation-tip= --show-forced-updates --set-upstream --no-verify",
            ),
            (
                "push",
                "--verbose --quiet --repo= --all --branches --mirror --delete --tags --dry-run \
                    --porcelain --force --force-with-lease --force-if-includes \
                    --recurse-submodules= --thin --receive-pack= --exec= --set-upstream --progress \
                    --prune --no-verify --follow-tags --signed --atomic --push-option= --ipv4 \
                    --ipv6 --verify",
            ),
            (
                "read-tree",
                "--super-prefix= --index-output= --empty --verbose --trivial --aggressive --reset \
                    --prefix= --exclude-per-directory= --dry-run --debug-unpack \
                    --recurse-submodules --quiet --sparse-checkout",
            ),
            (
                "rebase",
                "--onto= --keep-base --no-verify --quiet --verbose --signoff \
                    --committer-date-is-author-date --reset-author-date --ignore-date \
                    --ignore-whitespace --whitespace= --force-rebase --continue --skip --abort \
                    --quit --edit-todo --show-current-patch --apply --merge --interactive \
                    --preserve-merges --rerere-autoupdate --empty= --keep-empty --autosquash \
                    --update-refs --gpg-sign --autostash --exec= --allow-empty-message \
                    --rebase-merges --fork-point --strategy= --strategy-option= --root \
                    --reschedule-failed-exec --reapply-cherry-picks --verify --stat --ff",
            ),
            (
                "reflog",
                "--dry-run --rewrite --updateref --verbose --expire= --expire-unreachable= \
                    --stale-fix --all --single-worktree",
            ),
            (
                "remote",
                "--fetch --tags --track= --master= --mirror= --dry-run --push --add --delete \
                    --prune --progress --verbose",
            ),
            (
                "repack",
                "--cruft --cruft-expiration= --max-cruft-size= --quiet --local \
                    --write-bitmap-index --delta-islands --unpack-unreachable= --keep-unreachable \
                    --window= --window-memory= --depth= --threads= --max-pack-size= --filter= \
                    --pack-kept-objects --keep-pack= --geometric= --write-midx --expire-to= \
                    --filter-to=",
            ),
            (
                "replace",
                "--list --delete --edit --graft --convert-graft-file --force --raw --format=",
            ),
            (
                "reset",
                "--quiet --mixed --soft --hard --merge --keep --recurse-submodules --patch \
                    --intent-to-add --pathspec-from-file= --pathspec-file-nul --refresh",
            ),
            (
                "restore",
                "--source= --staged --worktree --ignore-unmerged --overlay --quiet \
                    --recurse-submodules --progress --merge --conflict= --ours --theirs --patch \
                    --ignore-skip-worktree-bits --pathspec-from-file= --pathspec-file-nul",
            ),
            (
                "revert",
                "--quit --continue --abort --skip --cleanup= --edit --signoff --mainline= \
                    --rerere-autoupdate --strategy= --strategy-option= --gpg-sign --reference \
                    --commit",
            ),
            (
                "rm",
                "--dry-run --quiet --cached --force --ignore-unmatch --sparse \
                    --pathspec-from-file= --pathspec-file-nul",
            ),
            (
                "sparse-checkout",
                "--cone --sparse-index --skip-checks --stdin",
            ),
            (
                "stash",
                "--keep-index --staged --patch --quiet --include-untracked --all --message= \
                    --pathspec-from-file= --pathspec-file-nul --index --only-untracked",
            ),
            (
                "submodule",
                "--quiet --cached --force --name= --reference= --depth= --recursive --init \
                    --filter= --remote --no-fetch --checkout --merge --rebase --recommend-shallow \
                    --no-recommend-shallow --single-branch --no-single-branch --jobs= --default \
                    --branch= --files --summary-limit= --all --progress --dissociate \
                    --require-init",
            ),
            (
                "switch",
                "--create= --force-create= --guess --discard-changes --quiet --recurse-submodules \
                    --progress --merge --conflict= --detach --track --force --orphan= \
                    --overwrite-ignore --ignore-other-worktrees",
            ),
            ("symbolic-ref", "--quiet --delete --short --recurse"),
            (
                "tag",
                "--list --delete --verify --annotate --message= --file= --trailer= --edit --sign \
                    --cleanup= --local-user= --force --create-reflog --column --contains --with \
                    --without --merged --omit-empty --sort= --points-at --format= --color \
                    --ignore-case",
            ),
            (
                "update-index",
                "--ignore-submodules --add --replace --remove --unmerged --refresh \
                    --really-refresh --cacheinfo --chmod= --assume-unchanged --skip-worktree \
                    --ignore-skip-worktree-entries --info-only --force-remove --stdin --index-info \
                    --unresolve --again --ignore-missing --verbose --clear-resolve-undo \
                    --index-version= --show-index-version --split-index --untracked-cache \
                    --test-untracked-cache --force-untracked-cache --force-write-index --fsmonitor \
                    --fsmonitor-valid",
            ),
            ("update-ref", "--stdin --create-reflog --deref"),
            (
                "worktree",
                "--force --orphan --detach --checkout --lock --reason= --quiet --track \
                    --guess-remote --dry-run --verbose --expire=",
            ),
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
        longs: "--list --version --no-psqlrc --single-transaction --help --echo-all --echo-errors \
            --echo-queries --echo-hidden --no-readline --quiet --single-step --single-line \
            --no-align --csv --html --tuples-only --table-attr= --expanded --field-separator-zero \
            --record-separator-zero --no-password --password",
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
        longs: "--auto-rehash --auto-vertical-output --batch --binary-as-hex --binary-mode \
            --bind-address= --character-sets-dir= --column-names --column-type-info --comments \
            --compress --connect-expired-password --connect-timeout= --debug --debug-check \
            --debug-info --default-auth= --default-character-set= --defaults-extra-file= \
            --defaults-file= --defaults-group-suffix= --delimiter= --enable-cleartext-plugin \
            --force --help --histignore= --html --ignore-spaces --init-command= --line-numbers \
            --local-infile --login-path= --max-allowed-packet= --max-join-size= --named-commands \
            --net-buffer-length= --no-auto-rehash --no-beep --no-defaults --one-database --pager \
            --plugin-dir= --print-defaults --protocol= --quick --raw --reconnect --safe-updates \
            --i-am-a-dummy --select-limit= --server-public-key-path= --show-warnings \
            --sigint-ignore --silent --skip-column-names --skip-line-numbers --skip-pager \
            --skip-reconnect --ssl --ssl-ca= --ssl-capath= --ssl-cert= --ssl-cipher= --ssl-key= \
            --ssl-mode= --table --tee= --no-tee --unbuffered --verbose --version --vertical --wait \
            --xml",
        ..spelling(&["mysql", "mariadb"])
    },
    Spelling {
        valued: &["-c", "-m", "-W", "-X", "-Q"],
        exact_longs: true,
        ..spelling(&["python", "python2", "python3", "pypy", "pypy3"])
    },
    Spelling {
        valued: &["-e", "-E", "-M", "-I", "-m", "-x"],
        attached: &['i', 'n', 'p', 'l', '0'],
        exact_longs: true,
        ..spelling(&["perl"])
    },
    Spelling {
        valued: &["-e", "-r", "-I", "-C", "-E"],
        exact_longs: true,
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
        exact_longs: true,
        ..spelling(&["node", "nodejs", "deno", "bun"])
    },
    Spelling {
        valued: &["-r", "-f", "-d", "-c", "-z"],
        exact_longs: true,
        ..spelling(&["php"])
    },
    Spelling {
        valued: &[
            "-c", "-S", "-u", "-U", "-i", "-t", "-w", "-W", "-s", "-T", "--cmd",
        ],
        exact_longs: true,
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
        longs: "--batch --chdir= --daemon --bg-daemon --fg-daemon --debug-init --display= \
            --no-desktop --no-init-file --no-site-file --no-site-lisp --no-splash --no-x-resources \
            --no-window-system --no-loadup --no-build-details --quick --script= --file= \
            --find-file= --visit= --insert= --kill --directory= --help --version --terminal= \
            --init-directory= --dump-file= --seccomp= --module-assertions --background-color= \
            --foreground-color= --font= --geometry= --fullscreen --maximized --name= --title= \
            --iconic --reverse-video --xrm= --border-width= --internal-border= --line-spacing= \
            --cursor-color= --mouse-color= --border-color= --vertical-scroll-bars --basic-display \
            --parent-id= --color --nw --tty --create-frame --alternate-editor= --socket-name= \
            --server-file= --no-wait --quiet --suppress-output --frame-parameters= --timeout= \
            --tramp= --reuse-frame --user=",
        ..spelling(&["emacs", "emacsclient"])
    },
    Spelling {
        valued: &["--userspec", "--groups"],
        longs: "--skip-chdir --help --version",
        ..spelling(&["chroot"])
    },
    Spelling {
        valued: &["-c", "-o", "-O", "+O", "+o", "--rcfile", "--init-file"],
        exact_longs: true,
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
        exact_longs: true,
        ..spelling(&["ps"])
    },
    Spelling {
        valued: &["-d", "-n", "-s", "-o", "-p", "-u", "-w", "-E"],
        aliases: &[("--delay", "-d"), ("--iterations", "-n"), ("--batch", "-b")],
        longs: "--batch-mode --cmdline-toggle --scale-summary-mem= --scale-task-mem= \
            --threads-show --idle-toggle --list-fields --sort-override= --pid= --accum-time-toggle \
            --secure-mode --filter-any-user= --filter-only-euser= --width --single-cpu-toggle \
            --help --version --no-color --filter= --highlight-changes --no-mouse --readonly \
            --sort-key= --tree --user --no-unicode --no-meters --max-iterations=",
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
        exact_longs: true,
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
        longs: "--always-make --debug --environment-overrides --eval= --help --ignore-errors \
            --include-dir= --keep-going --load-average --max-load --check-symlink-times \
            --just-print --dry-run --recon --old-file= --assume-old= --output-sync \
            --print-data-base --question --no-builtin-rules --no-builtin-variables --silent \
            --quiet --no-silent --no-keep-going --stop --touch --trace --version --print-directory \
            --no-print-directory --what-if= --new-file= --assume-new= --warn-undefined-variables",
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
        longs: "--universal --debug --iso-8601 --resolution --rfc-email --rfc-3339= --help \
            --version",
        ..spelling(&["date"])
    },
    Spelling {
        valued: &["-I", "-L", "-P", "-o", "--charset", "--filelimit", "--sort"],
        exact_longs: true,
        ..spelling(&["tree"])
    },
    Spelling {
        valued: &["-n", "-s", "-c", "-w"],
        aliases: &[("--seconds", "-s"), ("--count", "-c")],
        longs: "--bytes --kilo --mega --giga --tera --peta --kibi --mebi --gibi --tebi --pebi \
            --human --si --lohi --total --committed --wide --help --version",
        ..spelling(&["free"])
    },
    Spelling {
        valued: &[
            "-o", "-c", "-p", "-u", "-g", "-a", "-d", "-D", "-i", "-r", "-s", "-T",
        ],
        ..spelling(&["lsof"])
    },
    Spelling {
        valued: &["-o", "-x", "-e", "-I", "-E", "-w", "-Q"],
        aliases: &[("--output", "-o"), ("--exclude", "-e"), ("--include", "-I")],
        longs: "--noempty --discard --dedup= --json --merge --output-all --pairs --scsi --tree \
            --all --bytes --nodeps --fs --ascii --list --perms --noheadings --paths --raw \
            --inverse --topology --width= --sort= --shell --zoned --sysroot= --help --version",
        ..spelling(&["lsblk"])
    },
    Spelling {
        valued: &["-c", "-s", "-i", "-t", "-W", "-w", "-I", "-m"],
        ..spelling(&["ping", "ping6"])
    },
    Spelling {
        valued: &["-f", "-s", "-w"],
        longs: "--count --repeated --all-repeated --skip-fields= --group --ignore-case \
            --skip-chars= --unique --zero-terminated --check-chars= --help --version",
        ..spelling(&["uniq"])
    },
    Spelling {
        valued: &["-I", "-T", "-w"],
        longs: "--sort= --all --almost-all --author --escape --block-size= --ignore-backups \
            --color --directory --dired --classify --file-type --format= --full-time --time-style= \
            --group-directories-first --no-group --human-readable --si --dereference-command-line \
            --dereference-command-line-symlink-to-dir --hide= --hyperlink --indicator-style= \
            --inode --ignore= --kibibytes --dereference --numeric-uid-gid --literal \
            --hide-control-chars --show-control-chars --quote-name --quoting-style= --reverse \
            --recursive --size --time= --tabsize= --width= --context --zero --help --version",
        ..spelling(&["ls"])
    },
    Spelling {
        valued: &["-c"],
        longs: "--dereference --file-system --cached= --format= --printf= --terse --help --version",
        ..spelling(&["stat"])
    },
    Spelling {
        valued: &["-e", "-f", "-F", "-m", "-P"],
        longs: "--help --version --magic-file= --uncompress --uncompress-noreport --brief \
            --checking-printout --exclude= --exclude-quiet= --files-from= --separator= --mime \
            --mime-type --mime-encoding --apple --extension --keep-going --list --dereference \
            --no-dereference --no-buffer --no-pad --print0 --preserve-date --parameter --raw \
            --special-files --no-sandbox --compile --debug",
        ..spelling(&["file"])
    },
    Spelling {
        valued: &["-C", "-U", "-I", "-x", "-X", "-S", "-F", "-W", "-D"],
        longs: "--normal --brief --report-identical-files --context --unified --ed --rcs \
            --side-by-side --width= --left-column --suppress-common-lines --show-c-function \
            --show-function-line= --label= --expand-tabs --initial-tab --tabsize= \
            --suppress-blank-empty --paginate --recursive --no-dereference --new-file \
            --unidirectional-new-file --ignore-file-name-case --no-ignore-file-name-case \
            --exclude= --exclude-from= --starting-file= --from-file= --to-file= --ignore-case \
            --ignore-tab-expansion --ignore-trailing-space --ignore-space-change \
            --ignore-all-space --ignore-blank-lines --ignore-matching-lines= --text \
            --strip-trailing-cr --ifdef= --GTYPE-group-format= --line-format= --LTYPE-line-format= \
            --minimal --horizon-lines= --speed-large-files --color --palette= --help --version",
        ..spelling(&["diff"])
    },
    Spelling {
        valued: &["-i", "-n"],
        longs: "--print-bytes --ignore-initial= --verbose --bytes= --quiet --silent --help \
            --version",
        ..spelling(&["cmp"])
    },
    Spelling {
        valued: &["-f", "-s"],
        longs: "--format= --separator= --equal-width --help --version",
        ..spelling(&["seq"])
    },
    Spelling {
        longs: "--show-all --number-nonblank --show-ends --number --squeeze-blank --show-tabs \
            --show-nonprinting --help --version",
        ..spelling(&["cat"])
    },
    Spelling {
        longs: "--files0-from= --bytes --chars --lines --max-line-length --words --help --version",
        ..spelling(&["wc"])
    },
    Spelling {
        longs: "--complement --delete --squeeze-repeats --truncate-set1 --help --version",
        ..spelling(&["tr"])
    },
    Spelling {
        longs: "--append --ignore-interrupts --output-error --help --version",
        ..spelling(&["tee"])
    },
    Spelling {
        longs: "--binary --check --tag --text --zero --ignore-missing --quiet --status --strict \
            --warn --help --version",
        ..spelling(&[
            "md5sum",
            "sha1sum",
            "sha224sum",
            "sha256sum",
            "sha384sum",
            "sha512sum",
            "b2sum",
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

/// The long options a flag is read against.
#[derive(Clone, Copy)]
enum Scope {
    /// Everything the program knows: policy patterns and wrappers see no subcommand, and an
    /// unknown subcommand (a git alias) may be any of them.
    Program,
    /// Before the subcommand of a program that has them: its own options, spelled out (git
    /// refuses `--git-d`).
    Exact,
    /// After a known subcommand: that subcommand's options.
    Subcommand(&'static str),
}

impl Scope {
    fn start(spelling: &Spelling) -> Scope {
        if spelling.subcommands.is_empty() {
            Scope::Program
        } else {
            Scope::Exact
        }
    }

    fn after_subcommand(spelling: &'static Spelling, word: &str) -> Scope {
        match spelling.subcommands.iter().find(|(name, _)| *name == word) {
            Some((_, options)) => Scope::Subcommand(options),
            None => Scope::Program,
        }
    }
}

/// Whether `flag` (in any spelling) takes the next word as its value for `program`. The
/// wrappers read their own options with this, so one table says how every program is spelled.
pub fn takes_value(program: &str, flag: &str) -> bool {
    let spelling = spelling_of(program);
    takes_value_in(
        spelling,
        Scope::Program,
        resolve(spelling, Scope::Program, flag),
    )
}

/// The canonical name of `flag` for `program`: `("rm", "--recursive")` and `("rm", "--recur")`
/// are `-r`, `("git", "-f")` is `--force`. Unknown flags are returned as written.
pub fn normalise_flag<'a>(program: &str, flag: &'a str) -> Cow<'a, str> {
    let spelling = spelling_of(program);
    canonical(spelling, resolve(spelling, Scope::Program, flag))
}

fn canonical<'a>(spelling: &Spelling, flag: &'a str) -> Cow<'a, str> {
    match spelling.aliases.iter().find(|(alias, _)| *alias == flag) {
        Some((_, canonical)) => Cow::Borrowed(*canonical),
        None => Cow::Borrowed(flag),
    }
}

/// The long option `flag` abbreviates, as getopt_long and git read it: a whole option is itself
/// (`--delete` beside `--delete-after`), a prefix of exactly one option is that option. A prefix
/// of several is ambiguous and stays as written, unless every candidate begins with the shortest
/// or all mean the same flag: then it is the shortest, so `git push --for`, which git refuses,
/// still reads as the `--force` a rule looks for.
fn resolve<'a>(spelling: &'static Spelling, scope: Scope, flag: &'a str) -> &'a str {
    if spelling.exact_longs
        || matches!(scope, Scope::Exact)
        || flag.len() <= 2
        || !flag.starts_with("--")
        // A policy's `--force*` is a glob over names, not an abbreviation.
        || flag.contains(['*', '?', '['])
    {
        return flag;
    }
    // A whole option, the common case, is found by a search of the lists' text rather than a
    // walk over every option (policies name hundreds of flags when they load).
    if names_whole_option(spelling, scope, flag) {
        return flag;
    }
    let mut shortest: Option<&'static str> = None;
    for option in long_options(spelling, scope) {
        if option == flag {
            return flag;
        }
        if option.starts_with(flag) && shortest.is_none_or(|s| option.len() < s.len()) {
            shortest = Some(option);
        }
    }
    let Some(shortest) = shortest else {
        return flag;
    };
    let one_reading = long_options(spelling, scope)
        .filter(|option| option.starts_with(flag))
        .all(|option| {
            option.starts_with(shortest)
                || canonical(spelling, option) == canonical(spelling, shortest)
        });
    if one_reading { shortest } else { flag }
}

/// Whether `flag` is one of the long options `scope` knows, as a whole.
fn names_whole_option(spelling: &'static Spelling, scope: Scope, flag: &str) -> bool {
    let in_text = |text: &str| {
        text.match_indices(flag).any(|(at, _)| {
            let before = text[..at].chars().next_back();
            let after = text[at + flag.len()..].chars().next();
            before.is_none_or(char::is_whitespace)
                && after.is_none_or(|c| c.is_whitespace() || c == '=')
        })
    };
    match scope {
        Scope::Exact => false,
        Scope::Subcommand(options) => in_text(options),
        Scope::Program => {
            spelling
                .aliases
                .iter()
                .any(|&(alias, canonical)| alias == flag || canonical == flag)
                || spelling.valued.contains(&flag)
                || in_text(spelling.longs)
                || spelling
                    .subcommands
                    .iter()
                    .any(|(_, options)| in_text(options))
        }
    }
}

/// Every long option `scope` knows, without value marks.
fn long_options(spelling: &'static Spelling, scope: Scope) -> impl Iterator<Item = &'static str> {
    let (program_wide, subcommand) = match scope {
        Scope::Program => (true, ""),
        Scope::Exact => (false, ""),
        Scope::Subcommand(options) => (false, options),
    };
    let program_wide = program_wide
        .then(|| {
            spelling
                .aliases
                .iter()
                .flat_map(|&(alias, canonical)| [alias, canonical])
                .chain(spelling.valued.iter().copied())
                .chain(spelling.longs.split_ascii_whitespace())
                .chain(
                    spelling
                        .subcommands
                        .iter()
                        .flat_map(|(_, options)| options.split_ascii_whitespace()),
                )
        })
        .into_iter()
        .flatten();
    program_wide
        .chain(subcommand.split_ascii_whitespace())
        .filter(|option| option.starts_with("--"))
        .map(|option| option.strip_suffix('=').unwrap_or(option))
}

/// Whether the flag `name`, as resolved, takes the next word as its value.
fn takes_value_in(spelling: &Spelling, scope: Scope, name: &str) -> bool {
    let marked = |options: &str| {
        options
            .split_ascii_whitespace()
            .any(|o| o.strip_suffix('=') == Some(name))
    };
    spelling.valued.contains(&name)
        || spelling
            .valued
            .contains(&canonical(spelling, name).as_ref())
        || marked(spelling.longs)
        || match scope {
            Scope::Program => spelling
                .subcommands
                .iter()
                .any(|(_, options)| marked(options)),
            Scope::Exact => false,
            Scope::Subcommand(options) => marked(options),
        }
}

/// Splits words after the command name into flags and positionals.
pub fn split_args(program: &str, words: &[String]) -> Vec<Arg> {
    let spelling = spelling_of(program);
    let mut scope = Scope::start(spelling);
    let mut args = Vec::with_capacity(words.len());
    let mut index = 0;
    let mut options_ended = false;
    // The positionals so far, while they could still lead to an `argv_after` subcommand.
    let mut leading: Vec<&str> = Vec::new();
    while index < words.len() {
        let word = &words[index];
        index += 1;
        if options_ended || word == "-" || !word.starts_with('-') || word.len() < 2 {
            if matches!(scope, Scope::Exact) {
                scope = Scope::after_subcommand(spelling, word);
            }
            if !options_ended && !spelling.argv_after.is_empty() {
                // This word is the image or container after such a subcommand: the rest is
                // the argv run there.
                options_ended = spelling.argv_after.contains(&leading.as_slice());
                if leading.len() < 3 {
                    leading.push(word);
                }
            }
            args.push(Arg::Positional(word.clone()));
            continue;
        }
        if word == "--" {
            options_ended = true;
            continue;
        }
        if let Some(long) = word.strip_prefix("--") {
            let (written, value) = match long.find('=') {
                Some(eq) => (&word[..eq + 2], Some(word[eq + 3..].to_owned())),
                None => (word.as_str(), None),
            };
            let name = resolve(spelling, scope, written);
            let value = match value {
                None if takes_value_in(spelling, scope, name) => next_word(words, &mut index),
                value => value,
            };
            let name = canonical(spelling, name).into_owned();
            args.push(Arg::Flag { name, value });
            continue;
        }
        let body = &word[1..];
        if spelling.single_dash_long || body.bytes().all(|b| b.is_ascii_digit()) {
            let (name, value) = match body.split_once('=') {
                Some((name, value)) if spelling.single_dash_long => {
                    (&word[..name.len() + 1], Some(value.to_owned()))
                }
                _ => (word.as_str(), None),
            };
            let value = match value {
                None if takes_value_in(spelling, scope, name) => next_word(words, &mut index),
                value => value,
            };
            let name = canonical(spelling, name).into_owned();
            args.push(Arg::Flag { name, value });
            continue;
        }
        // A bundle of short flags: `-rf`, `-n5`, `-i.bak`.
        for (offset, c) in body.char_indices() {
            let name = format!("-{c}");
            let rest = &body[offset + c.len_utf8()..];
            if spelling.attached.contains(&c) {
                let value = (!rest.is_empty()).then(|| rest.to_owned());
                let name = canonical(spelling, &name).into_owned();
                args.push(Arg::Flag { name, value });
                break;
            }
            if spelling.valued.contains(&name.as_str()) {
                let value = if rest.is_empty() {
                    next_word(words, &mut index)
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

fn next_word(words: &[String], index: &mut usize) -> Option<String> {
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

    #[test]
    fn long_options_abbreviate() {
        let cases: &[(&str, &str, &[&str])] = &[
            // A prefix of one option is that option, then canonical as usual.
            ("rm", "--recur --forc /", &["-r", "-f", "'/'"]),
            ("rm", "--no-pres /", &["--no-preserve-root", "'/'"]),
            ("rm", "--d x", &["-d", "'x'"]),
            ("cp", "--recur a b", &["-r", "'a'", "'b'"]),
            ("cp", "--target /d a", &["-t=/d", "'a'"]),
            ("mv", "--no-c a b", &["--no-clobber", "'a'", "'b'"]),
            ("ln", "--sym a b", &["--symbolic", "'a'", "'b'"]),
            ("chmod", "--recur 777 /", &["-R", "'777'", "'/'"]),
            ("chown", "--fr=a:b c d", &["--from=a:b", "'c'", "'d'"]),
            ("shred", "--rem f", &["-u", "'f'"]),
            ("truncate", "--si 0 f", &["-s=0", "'f'"]),
            ("sed", "--in-pl s/a/b/ f", &["-i", "'s/a/b/'", "'f'"]),
            (
                "sed",
                "--in-place=.bak s/a/b/ f",
                &["-i=.bak", "'s/a/b/'", "'f'"],
            ),
            ("sed", "--expr s/a/b/ f", &["-e=s/a/b/", "'f'"]),
            ("head", "--lin 5 f", &["-n=5", "'f'"]),
            ("tail", "--fol f", &["-f", "'f'"]),
            ("grep", "--recur x .", &["-r", "'x'", "'.'"]),
            (
                "grep",
                "--excl-dir .git x .",
                &["--excl-dir", "'.git'", "'x'", "'.'"],
            ),
            (
                "grep",
                "--exclude-d .git x .",
                &["--exclude-dir=.git", "'x'", "'.'"],
            ),
            (
                "sort",
                "--compress-prog=sh f",
                &["--compress-program=sh", "'f'"],
            ),
            (
                "sort",
                "--compress-p sh f",
                &["--compress-program=sh", "'f'"],
            ),
            ("sort", "--out sorted f", &["-o=sorted", "'f'"]),
            ("du", "--max-d 1 /", &["-d=1", "'/'"]),
            ("tar", "--to-c=sh -xf a", &["--to-command=sh", "-x", "-f=a"]),
            (
                "tar",
                "--use-comp sh -cf a .",
                &["-I=sh", "-c", "-f=a", "'.'"],
            ),
            (
                "tar",
                "--checkpoint-a=exec=sh -cf a",
                &["--checkpoint-action=exec=sh", "-c", "-f=a"],
            ),
            ("tar", "--extr --fi a", &["-x", "-f=a"]),
            ("curl", "--outp f http://h", &["-o=f", "'http://h'"]),
            // `--out-null` as well as `--output`.
            ("curl", "--out f http://h", &["--out", "'f'", "'http://h'"]),
            ("curl", "--upload-fi f http://h", &["-T=f", "'http://h'"]),
            (
                "curl",
                "--data-b @f http://h",
                &["--data-binary=@f", "'http://h'"],
            ),
            ("curl", "--head http://h", &["-I", "'http://h'"]),
            (
                "wget",
                "--post-f f http://h",
                &["--post-file=f", "'http://h'"],
            ),
            (
                "rsync",
                "--remove-s a h:b",
                &["--remove-source-files", "'a'", "'h:b'"],
            ),
            ("rsync", "--delete-a a b", &["--delete-after", "'a'", "'b'"]),
            ("xargs", "--max-a 1 rm", &["-n=1", "'rm'"]),
            ("sudo", "--us root id", &["-u=root", "'id'"]),
            ("env", "--chd /tmp id", &["-C=/tmp", "'id'"]),
            ("timeout", "--sig KILL 5 id", &["-s=KILL", "'5'", "'id'"]),
            ("nice", "--adj 5 id", &["-n=5", "'id'"]),
            ("pkill", "--sig 9 x", &["-s=9", "'x'"]),
            ("iptables", "--flu", &["-F"]),
            ("systemctl", "--forc stop x", &["-f", "'stop'", "'x'"]),
            ("journalctl", "--vacuum-t=2d", &["--vacuum-time=2d"]),
            ("journalctl", "--vacuum-s 1G", &["--vacuum-size=1G"]),
            ("journalctl", "--rot", &["--rotate"]),
            ("psql", "--comm x", &["-c=x"]),
            ("mysql", "--exec x", &["-e=x"]),
            ("make", "--dir /x", &["-C=/x"]),
            // A whole option is itself even when it begins longer ones.
            ("rsync", "--delete a b", &["--delete", "'a'", "'b'"]),
            ("rsync", "--del a b", &["--delete-during", "'a'", "'b'"]),
            ("grep", "--null x", &["--null", "'x'"]),
            ("curl", "--data x http://h", &["-d=x", "'http://h'"]),
            // Candidates that all begin with the shortest read as the shortest.
            ("rsync", "--dele a b", &["--delete", "'a'", "'b'"]),
            // Ambiguous prefixes stay as written, and take no value.
            ("rm", "--ver x", &["--ver", "'x'"]),
            ("tar", "--to x", &["--to", "'x'"]),
            ("tar", "--del x", &["--del", "'x'"]),
            ("journalctl", "--vac 1G", &["--vac", "'1G'"]),
            ("sort", "--c f", &["--c", "'f'"]),
            // An option whose value is optional takes one only after `=`.
            ("sort", "--check f", &["--check", "'f'"]),
            ("xargs", "--eof rm", &["--eof", "'rm'"]),
            ("tail", "--follow=name f", &["-f=name", "'f'"]),
            // Unknown options stay as written.
            ("rm", "--frobnicate x", &["--frobnicate", "'x'"]),
            ("unknown-tool", "--recur x", &["--recur", "'x'"]),
            // Single-dash words are never abbreviations.
            ("find", "/ -del", &["'/'", "-del"]),
            ("find", "/ -na x", &["'/'", "-na", "'x'"]),
            ("find", "/ --del", &["'/'", "--del"]),
            ("java", "-cp x -jar y", &["-cp", "'x'", "-jar", "'y'"]),
            ("dd", "if=a of=b", &["'if=a'", "'of=b'"]),
            // Programs whose parsers take no abbreviations.
            ("docker", "run --priv x", &["'run'", "--priv", "'x'"]),
            // After the image or container, the words are the argv run there, not docker's.
            (
                "docker",
                "run --rm -e A=1 busybox sh -c x",
                &[
                    "'run'",
                    "--rm",
                    "-e=A=1",
                    "'busybox'",
                    "'sh'",
                    "'-c'",
                    "'x'",
                ],
            ),
            (
                "docker",
                "-H tcp://h container exec -it web ls -l",
                &[
                    "-H=tcp://h",
                    "'container'",
                    "'exec'",
                    "-i",
                    "-t",
                    "'web'",
                    "'ls'",
                    "'-l'",
                ],
            ),
            ("docker", "ps -a", &["'ps'", "-a"]),
            (
                "kubectl",
                "delete --all-n x",
                &["'delete'", "--all-n", "'x'"],
            ),
            ("rg", "--pre-g x y", &["--pre-g", "'x'", "'y'"]),
            ("bash", "--rcf x", &["--rcf", "'x'"]),
            ("jq", "--raw .", &["--raw", "'.'"]),
            // Reading a file is not a value: `cat -s` squeezes blank lines.
            ("cat", "-s f", &["-s", "'f'"]),
            ("cat", "-e f", &["-e", "'f'"]),
            ("ls", "-s f", &["-s", "'f'"]),
            ("uniq", "-s 3 f", &["-s=3", "'f'"]),
            (
                "kubectl",
                "logs --follow pod",
                &["'logs'", "--follow", "'pod'"],
            ),
        ];
        for (program, line, expected) in cases {
            assert_eq!(split(program, line), *expected, "{program} {line}");
        }
    }

    #[test]
    fn git_abbreviations_follow_the_subcommand() {
        let cases: &[(&str, &[&str])] = &[
            (
                "push --forc origin main",
                &["'push'", "--force", "'origin'", "'main'"],
            ),
            // git refuses `--for` (force, force-with-lease, force-if-includes); read as force.
            (
                "push --for origin main",
                &["'push'", "--force", "'origin'", "'main'"],
            ),
            (
                "push --force-w origin",
                &["'push'", "--force-with-lease", "'origin'"],
            ),
            (
                "push --force-with-lease=main origin",
                &["'push'", "--force-with-lease=main", "'origin'"],
            ),
            (
                "push --del origin main",
                &["'push'", "-d", "'origin'", "'main'"],
            ),
            ("push --mir origin", &["'push'", "--mirror", "'origin'"]),
            (
                "push --no-ver origin",
                &["'push'", "--no-verify", "'origin'"],
            ),
            ("push --rep x main", &["'push'", "--repo=x", "'main'"]),
            ("push --exe=x origin", &["'push'", "--exec=x", "'origin'"]),
            ("push --s origin", &["'push'", "--s", "'origin'"]),
            (
                "-C repo clean --forc -d",
                &["-C=repo", "'clean'", "--force", "-d"],
            ),
            ("-c a=b push --forc", &["-c=a=b", "'push'", "--force"]),
            ("reset --ha HEAD~1", &["'reset'", "--hard", "'HEAD~1'"]),
            ("branch --forc x", &["'branch'", "--force", "'x'"]),
            ("branch --fo x", &["'branch'", "--fo", "'x'"]),
            (
                "commit --no-ver --mess x",
                &["'commit'", "--no-verify", "-m=x"],
            ),
            (
                "clone --conf core.sshCommand=x url",
                &["'clone'", "-c=core.sshCommand=x", "'url'"],
            ),
            ("stash push --mess x", &["'stash'", "'push'", "-m=x"]),
            (
                "worktree remove --forc x",
                &["'worktree'", "'remove'", "--force", "'x'"],
            ),
            (
                "reflog expire --expire-unr=now --all",
                &["'reflog'", "'expire'", "--expire-unreachable=now", "--all"],
            ),
            // git's own options, before the subcommand, are spelled out.
            ("--git-d x status", &["--git-d", "'x'", "'status'"]),
            ("--git-dir x status", &["--git-dir=x", "'status'"]),
            // A subcommand git does not ship (an alias) is read against all of them.
            (
                "p --forc origin main",
                &["'p'", "--force", "'origin'", "'main'"],
            ),
        ];
        for (line, expected) in cases {
            assert_eq!(split("git", line), *expected, "git {line}");
        }
    }

    #[test]
    fn patterns_read_abbreviations_like_the_analyser() {
        let cases = [
            ("rm", "--recur", "-r"),
            ("rm", "--recursive", "-r"),
            ("rm", "--ver", "--ver"),
            ("sort", "--compress-prog", "--compress-program"),
            ("sort", "--out", "-o"),
            ("rsync", "--del", "--delete-during"),
            ("rsync", "--delete", "--delete"),
            ("journalctl", "--vacuum-t", "--vacuum-time"),
            ("git", "-f", "--force"),
            ("git", "--forc", "--force"),
            ("git", "--mir", "--mirror"),
            ("find", "-del", "-del"),
            ("docker", "--priv", "--priv"),
        ];
        for (program, flag, expected) in cases {
            assert_eq!(normalise_flag(program, flag), expected, "{program} {flag}");
            let line = if program == "git" {
                format!("push {flag}")
            } else {
                flag.to_owned()
            };
            assert!(
                split(program, &line).iter().any(|word| word == expected),
                "split_args disagrees on {program} {line}"
            );
        }
    }

    #[test]
    fn wrappers_read_abbreviated_options() {
        let cases = [
            ("sudo", "--us", true),
            ("sudo", "--user", true),
            ("sudo", "--log", false),
            ("env", "--chd", true),
            ("timeout", "--kill-a", true),
            ("xargs", "--eof", false),
            ("xargs", "--arg", true),
            ("nice", "--adj", true),
            ("flock", "--comm", true),
            ("docker", "--us", false),
        ];
        for (program, flag, expected) in cases {
            assert_eq!(takes_value(program, flag), expected, "{program} {flag}");
        }
    }

    #[test]
    fn long_option_tables_are_tidy() {
        for spelling in SPELLINGS {
            let program = spelling.programs[0];
            let lists =
                std::iter::once(("", spelling.longs)).chain(spelling.subcommands.iter().copied());
            for (subcommand, options) in lists {
                let mut seen = Vec::new();
                for option in options.split_ascii_whitespace() {
                    let name = option.strip_suffix('=').unwrap_or(option);
                    assert!(
                        name.starts_with("--") && name.len() > 2 && !name.contains('='),
                        "{program} {subcommand}: {option}"
                    );
                    assert!(
                        !seen.contains(&name),
                        "{program} {subcommand}: {name} twice"
                    );
                    seen.push(name);
                    if subcommand.is_empty() {
                        assert!(
                            !spelling.valued.contains(&name)
                                && !spelling.aliases.iter().any(|(alias, _)| *alias == name),
                            "{program}: {name} is already in valued or aliases"
                        );
                    }
                }
            }
        }
    }
}
