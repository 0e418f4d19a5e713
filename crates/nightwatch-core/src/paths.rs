//! Lexical path normalisation for effects: what policy's path globs match against.

/// Normalises a path as written, without touching the filesystem: `$HOME` and `${HOME}` become
/// `~`, `~root` and `~NAME` become `/root` and `/home/NAME` (a lexical stand-in for the password
/// database), `./` prefixes and repeated or trailing slashes go, and `..` is folded where the text
/// allows. Relative paths stay relative, and a directory named `~` in the working directory
/// keeps its `./` (`./~/x` is not the home directory).
pub fn normalise_path(path: &str) -> String {
    let path = home_to_tilde(path);
    let path = user_home(&path);
    let absolute = path.starts_with('/');
    let tilde_written = path.starts_with('~');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => match parts.last() {
                Some(&last) if last != ".." && last != "~" => {
                    parts.pop();
                }
                _ if absolute => {}
                _ => parts.push(".."),
            },
            _ => parts.push(part),
        }
    }
    let joined = parts.join("/");
    match (absolute, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_owned(),
        // `./~` is a file named `~` here; without its `./` it would read as the home directory.
        (false, false) if !tilde_written && joined.starts_with('~') => format!("./{joined}"),
        (false, false) => joined,
    }
}

/// True for a path that names a place relative to the working directory (not `/...`, not a
/// home directory, not a runtime expansion).
pub fn is_relative(path: &str) -> bool {
    !(path.starts_with('/') || path.starts_with('~') || path.starts_with('$'))
}

/// `~root/x` is `/root/x`, `~NAME/x` is `/home/NAME/x` and `~+/x` is `x` in the working
/// directory; `~`, `~-` and the directory stack (`~+1`) stay as written.
fn user_home(path: &str) -> std::borrow::Cow<'_, str> {
    let Some(rest) = path.strip_prefix('~') else {
        return path.into();
    };
    let (user, tail) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    if user == "+" {
        return format!(".{tail}").into();
    }
    let is_name = !user.is_empty()
        && !user.starts_with(['-', '+'])
        && user
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    match user {
        _ if !is_name => path.into(),
        "root" => format!("/root{tail}").into(),
        _ => format!("/home/{user}{tail}").into(),
    }
}

fn home_to_tilde(path: &str) -> std::borrow::Cow<'_, str> {
    for prefix in ["${HOME}", "$HOME"] {
        if let Some(rest) = path.strip_prefix(prefix)
            && (rest.is_empty() || rest.starts_with('/'))
        {
            return format!("~{rest}").into();
        }
    }
    path.into()
}

#[cfg(test)]
mod tests {
    use super::normalise_path;

    #[test]
    fn normalises_lexically() {
        let cases = [
            ("/etc/../etc/shadow", "/etc/shadow"),
            ("./.env", ".env"),
            ("//", "/"),
            ("/", "/"),
            ("/etc/", "/etc"),
            ("$HOME/.ssh/id_rsa", "~/.ssh/id_rsa"),
            ("${HOME}", "~"),
            ("$HOMEDIR/x", "$HOMEDIR/x"),
            ("../x", "../x"),
            ("a/../../b", "../b"),
            ("/../..", "/"),
            ("~/../x", "~/../x"),
            (".", "."),
            ("./~", "./~"),
            ("./~/x", "./~/x"),
            ("a/../~/x", "./~/x"),
            ("/srv/./~/x", "/srv/~/x"),
            ("~", "~"),
            ("~/x", "~/x"),
            ("~root/.ssh", "/root/.ssh"),
            ("~alice/.ssh/id_rsa", "/home/alice/.ssh/id_rsa"),
            ("~alice", "/home/alice"),
            ("~+/x", "x"),
            ("~-/x", "~-/x"),
            ("~+1", "~+1"),
            ("~$USER/x", "~$USER/x"),
        ];
        for (input, expected) in cases {
            assert_eq!(normalise_path(input), expected, "{input}");
        }
    }
}
