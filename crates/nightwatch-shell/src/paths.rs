//! Lexical path normalisation for effects: what policy's path globs match against.

/// Normalises a path as written, without touching the filesystem: `$HOME` and `${HOME}` become
/// `~`, `./` prefixes and repeated or trailing slashes go, and `..` is folded where the text allows.
/// Relative paths stay relative.
pub fn normalise_path(path: &str) -> String {
    let path = home_to_tilde(path);
    let absolute = path.starts_with('/');
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
        (false, false) => joined,
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
        ];
        for (input, expected) in cases {
            assert_eq!(normalise_path(input), expected, "{input}");
        }
    }
}
