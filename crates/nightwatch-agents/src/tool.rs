//! Each agent's tool names and inputs mapped to the core [`Tool`].
//!
//! A known tool missing the input that decides it (a shell tool without a command) is an
//! error, so the call is refused rather than judged as something else. Unknown tools are
//! [`Tool::Named`] and decided by name.

use crate::{Agent, HookError, clip};
use nightwatch_core::Tool;
use serde_json::Value;

pub(crate) fn map_tool(
    agent: Agent,
    name: &str,
    inputs: &Value,
    cwd: Option<&str>,
) -> Result<Tool, HookError> {
    let input = Inputs {
        tool: name,
        inputs,
        cwd,
    };
    let mapped = match agent {
        Agent::Claude => claude(&input)?,
        Agent::Codex => codex(&input)?,
        Agent::Gemini => gemini(&input)?,
    };
    Ok(mapped.unwrap_or_else(|| mcp(name, inputs).unwrap_or_else(|| named(name))))
}

/// Claude Code's built-in tools.
fn claude(input: &Inputs<'_>) -> Result<Option<Tool>, HookError> {
    Ok(Some(match input.tool {
        "Bash" => Tool::Exec {
            line: input.line("command")?,
        },
        "Write" => Tool::Write {
            path: input.required("file_path")?,
        },
        "Edit" | "MultiEdit" => Tool::Edit {
            path: input.required("file_path")?,
        },
        "NotebookEdit" => Tool::Edit {
            path: input.required("notebook_path")?,
        },
        "Read" => Tool::Read {
            path: input.required("file_path")?,
        },
        "Glob" | "Grep" => Tool::Read {
            path: input.search_root(&["path"])?,
        },
        "LS" => Tool::Read {
            path: input.required("path")?,
        },
        "WebFetch" => Tool::Fetch {
            url: input.required("url")?,
        },
        _ => return Ok(None),
    }))
}

/// Codex: Claude Code's wire format with its own tool names. Shell tools may carry the command
/// as a line or as argv; `apply_patch` carries a patch naming the files it touches.
fn codex(input: &Inputs<'_>) -> Result<Option<Tool>, HookError> {
    Ok(Some(match input.tool {
        "Bash" | "shell" | "exec_command" | "local_shell" | "container.exec" | "shell_command" => {
            Tool::Exec {
                line: input.command_line()?,
            }
        }
        "apply_patch" => {
            let patch = ["command", "input", "patch"]
                .into_iter()
                .find_map(|key| input.string(key))
                .ok_or_else(|| input.missing("command"))?;
            patch_tool(patch)
        }
        _ => return claude(input),
    }))
}

/// Gemini CLI's built-in tools.
fn gemini(input: &Inputs<'_>) -> Result<Option<Tool>, HookError> {
    Ok(Some(match input.tool {
        "run_shell_command" => Tool::Exec {
            line: input.line("command")?,
        },
        "write_file" => Tool::Write {
            path: input.required("file_path")?,
        },
        "replace" | "edit" => Tool::Edit {
            path: input.required("file_path")?,
        },
        "read_file" => Tool::Read {
            path: input
                .string("absolute_path")
                .or_else(|| input.string("file_path"))
                .map(str::to_string)
                .ok_or_else(|| input.missing("absolute_path"))?,
        },
        "list_directory" | "ls" => Tool::Read {
            path: input.search_root(&["path", "dir_path"])?,
        },
        "glob" | "search_file_content" | "grep" | "grep_search" => Tool::Read {
            path: input.search_root(&["path", "dir_path"])?,
        },
        "read_many_files" => {
            // One path is one read; several (or include globs) cannot be judged as one file.
            let paths: Vec<&str> = match input.inputs.get("paths") {
                Some(Value::Array(paths)) => paths.iter().filter_map(Value::as_str).collect(),
                _ => Vec::new(),
            };
            let includes = input
                .inputs
                .get("include")
                .is_some_and(|include| include.as_array().is_none_or(|list| !list.is_empty()));
            match paths.as_slice() {
                [path] if !includes => Tool::Read {
                    path: path.to_string(),
                },
                _ => named(input.tool),
            }
        }
        "web_fetch" => {
            let urls = match input.string("url") {
                Some(url) => vec![url],
                None => urls_in(input.string("prompt").unwrap_or_default()),
            };
            match urls.as_slice() {
                [url] => Tool::Fetch {
                    url: url.to_string(),
                },
                _ => named(input.tool),
            }
        }
        _ => return Ok(None),
    }))
}

/// `mcp__server__tool`: split on the first `__` after the prefix, so server names may hold
/// single underscores. Anything else is not an MCP name. Its paths are the file paths among
/// its inputs ([`mcp_paths`]).
pub(crate) fn mcp(name: &str, inputs: &Value) -> Option<Tool> {
    let rest = name.strip_prefix("mcp__")?;
    let (server, tool) = rest.split_once("__")?;
    (!server.is_empty() && !tool.is_empty()).then(|| Tool::Mcp {
        server: server.to_string(),
        tool: tool.to_string(),
        paths: mcp_paths(inputs),
    })
}

/// Input keys that name one path (or a list of them), compared without case, `_` or `-`
/// (`file_path`, `filePath`, `FilePath`).
const PATH_KEYS: &[&str] = &[
    "path",
    "filepath",
    "filename",
    "file",
    "source",
    "destination",
    "target",
    "dir",
    "directory",
    "dirpath",
    "absolutepath",
    "notebookpath",
    "root",
    "cwd",
    "oldpath",
    "newpath",
    "src",
    "dst",
];
/// Input keys that hold a list of paths.
const PATH_LIST_KEYS: &[&str] = &["paths", "files", "sources"];

/// The file paths among an MCP tool's inputs: the strings under keys that name a path, at the
/// top level and in objects one level down (`{"edits": [{"path": ...}]}`), in order, once
/// each. A `file://` URL is its path; other URLs are not paths.
pub(crate) fn mcp_paths(inputs: &Value) -> Vec<String> {
    let mut paths = Vec::new();
    let Some(top) = inputs.as_object() else {
        return paths;
    };
    collect_paths(top, &mut paths);
    for value in top.values() {
        match value {
            Value::Object(nested) => collect_paths(nested, &mut paths),
            Value::Array(items) => {
                for item in items {
                    if let Value::Object(nested) = item {
                        collect_paths(nested, &mut paths);
                    }
                }
            }
            _ => {}
        }
    }
    paths
}

/// `https`, `s3`, `git+ssh`: a URL's scheme, not a directory name.
fn is_scheme(text: &str) -> bool {
    text.starts_with(|c: char| c.is_ascii_alphabetic())
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

fn collect_paths(fields: &serde_json::Map<String, Value>, paths: &mut Vec<String>) {
    for (key, value) in fields {
        let key: String = key
            .chars()
            .filter(|c| !matches!(c, '_' | '-'))
            .flat_map(char::to_lowercase)
            .collect();
        if !PATH_KEYS.contains(&key.as_str()) && !PATH_LIST_KEYS.contains(&key.as_str()) {
            continue;
        }
        let strings: Vec<&str> = match value {
            Value::String(one) => vec![one.as_str()],
            Value::Array(list) => list.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        for text in strings {
            let path = match text.split_once("://") {
                Some((scheme, rest)) if scheme.eq_ignore_ascii_case("file") => rest,
                Some((scheme, _)) if is_scheme(scheme) => continue,
                _ => text,
            };
            if !path.trim().is_empty() && !paths.iter().any(|known| known == path) {
                paths.push(path.to_string());
            }
        }
    }
}

fn named(name: &str) -> Tool {
    Tool::Named {
        name: name.to_string(),
    }
}

/// The files a Codex patch touches (`*** Add File: p`, `*** Update File: p`,
/// `*** Delete File: p`, `*** Move to: p`). One file is a write (added) or an edit; several
/// are decided by the tool's name.
pub(crate) fn patch_tool(patch: &str) -> Tool {
    let mut added = false;
    let mut paths: Vec<&str> = Vec::new();
    for line in patch.lines() {
        let line = line.trim();
        let (is_add, path) = if let Some(path) = line.strip_prefix("*** Add File:") {
            (true, path)
        } else if let Some(path) = line
            .strip_prefix("*** Update File:")
            .or_else(|| line.strip_prefix("*** Delete File:"))
            .or_else(|| line.strip_prefix("*** Move to:"))
        {
            (false, path)
        } else {
            continue;
        };
        let path = path.trim();
        if !path.is_empty() && !paths.contains(&path) {
            paths.push(path);
        }
        added |= is_add;
    }
    match paths.as_slice() {
        [path] if added => Tool::Write {
            path: path.to_string(),
        },
        [path] => Tool::Edit {
            path: path.to_string(),
        },
        _ => named("apply_patch"),
    }
}

/// The distinct http(s) URLs in a text, in order.
pub(crate) fn urls_in(text: &str) -> Vec<&str> {
    // Lowercasing ASCII keeps byte offsets, so positions found in `lower` index `text`.
    let lower = text.to_ascii_lowercase();
    let mut urls: Vec<&str> = Vec::new();
    let mut from = 0;
    while let Some(start) = next_scheme(&lower, from) {
        let tail = &text[start..];
        let end = tail
            .find(|c: char| c.is_whitespace() || "\"'<>`()[]{}".contains(c))
            .unwrap_or(tail.len());
        let url = tail[..end].trim_end_matches(['.', ',', ';', ':', '!', '?']);
        if url.len() > "https://".len() && !urls.contains(&url) {
            urls.push(url);
        }
        from = start + end.max(1);
    }
    urls
}

fn next_scheme(lower: &str, from: usize) -> Option<usize> {
    let rest = lower.get(from..)?;
    [rest.find("http://"), rest.find("https://")]
        .into_iter()
        .flatten()
        .min()
        .map(|at| from + at)
}

/// A tool's inputs, with the lookups the mappings share.
struct Inputs<'a> {
    tool: &'a str,
    inputs: &'a Value,
    cwd: Option<&'a str>,
}

impl<'a> Inputs<'a> {
    fn string(&self, key: &str) -> Option<&'a str> {
        self.inputs.get(key).and_then(Value::as_str)
    }

    fn missing(&self, field: &'static str) -> HookError {
        HookError::MissingInput {
            tool: clip(self.tool),
            field,
        }
    }

    /// A shell line: present is enough, a blank one is a line that runs nothing (policy
    /// decides it as `nightwatch check ''` does); absent is an error.
    fn line(&self, key: &'static str) -> Result<String, HookError> {
        self.string(key)
            .map(str::to_string)
            .ok_or_else(|| self.missing(key))
    }

    fn required(&self, key: &'static str) -> Result<String, HookError> {
        match self.string(key) {
            Some(text) if !text.trim().is_empty() => Ok(text.to_string()),
            _ => Err(self.missing(key)),
        }
    }

    /// Where a search or listing reads: its directory, else the session's directory, else the
    /// pattern itself.
    fn search_root(&self, keys: &[&'static str]) -> Result<String, HookError> {
        keys.iter()
            .find_map(|key| self.string(key))
            .or(self.cwd)
            .or_else(|| self.string("pattern"))
            .filter(|path| !path.trim().is_empty())
            .map(str::to_string)
            .ok_or_else(|| self.missing(keys.first().copied().unwrap_or("path")))
    }

    /// A shell tool's command: a line, or argv joined with shell quoting. A blank line or an
    /// empty argv runs nothing and is decided as such; no command at all is an error.
    fn command_line(&self) -> Result<String, HookError> {
        let command = self
            .inputs
            .get("command")
            .or_else(|| self.inputs.get("cmd"));
        match command {
            Some(Value::String(line)) => Ok(line.clone()),
            Some(Value::Array(argv)) => {
                let words: Option<Vec<&str>> = argv.iter().map(Value::as_str).collect();
                Ok(words
                    .ok_or_else(|| self.missing("command"))?
                    .into_iter()
                    .map(shell_quote)
                    .collect::<Vec<_>>()
                    .join(" "))
            }
            _ => Err(self.missing("command")),
        }
    }
}

/// One word as bash would read it back: bare when it holds only safe characters, else in
/// single quotes (a `'` inside becomes `'\''`).
pub(crate) fn shell_quote(word: &str) -> String {
    let safe = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c));
    if safe {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}
