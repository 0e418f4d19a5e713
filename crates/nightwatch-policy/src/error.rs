//! Why a policy file was refused, with the line and column to look at.

use nightwatch_core::Verdict;

/// A policy that cannot be used. Display gives `LINE:COLUMN: message`; the caller puts the
/// file's name in front (`policy.yaml:12:5: unknown verdict "maybe" ...`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// The text is not YAML.
    #[error("{line}:{column}: {message}")]
    Syntax {
        line: usize,
        column: usize,
        message: String,
    },
    /// The YAML does not describe a policy: an unknown key or verdict, a bad glob, a duplicate
    /// rule id.
    #[error("{line}:{column}: {message}")]
    Invalid {
        line: usize,
        column: usize,
        message: String,
    },
    /// An example's action got another verdict than the one it expects.
    #[error("{}example {} ({description}) expects {expected} but policy says {actual} ({})",
        location_prefix(*.line, *.column), .index + 1, decided_by(.rule.as_deref()))]
    ExampleFailed {
        /// Position of the example in `examples:`, from 0.
        index: usize,
        /// Where the example starts, when it could be found in the text.
        line: Option<usize>,
        column: Option<usize>,
        /// The example's command line, or its tool and path.
        description: String,
        expected: Verdict,
        actual: Verdict,
        /// The rule that decided, or None when the default did.
        rule: Option<String>,
    },
}

impl PolicyError {
    /// Line and column, from 1, when known.
    pub fn location(&self) -> Option<(usize, usize)> {
        match self {
            PolicyError::Syntax { line, column, .. }
            | PolicyError::Invalid { line, column, .. } => Some((*line, *column)),
            PolicyError::ExampleFailed { line, column, .. } => {
                Some(((*line)?, column.unwrap_or(1)))
            }
        }
    }

    /// A `yaml_serde` error as ours: its location moved to the front, and its field path
    /// (`rules[3].verdict: `) left out since the line and column already say where.
    pub(crate) fn from_yaml(error: &yaml_serde::Error, syntax: bool) -> PolicyError {
        let (line, column) = error
            .location()
            .map(|l| (l.line(), l.column()))
            .unwrap_or((1, 1));
        let mut message = error.to_string();
        let suffix = format!(" at line {line} column {column}");
        if let Some(at) = message.find(&suffix) {
            message.replace_range(at..at + suffix.len(), "");
        }
        if !syntax {
            message = strip_field_path(&message).to_owned();
        }
        if syntax {
            PolicyError::Syntax {
                line,
                column,
                message,
            }
        } else {
            PolicyError::Invalid {
                line,
                column,
                message,
            }
        }
    }
}

fn location_prefix(line: Option<usize>, column: Option<usize>) -> String {
    match line {
        Some(line) => format!("{line}:{}: ", column.unwrap_or(1)),
        None => String::new(),
    }
}

fn decided_by(rule: Option<&str>) -> String {
    match rule {
        Some(rule) => format!("rule {rule}"),
        None => "no rule matched".to_owned(),
    }
}

/// `rules[3].verdict: unknown verdict` → `unknown verdict`. A path is made of field names,
/// indices and dots only, without spaces, which no message's first words are.
fn strip_field_path(message: &str) -> &str {
    match message.split_once(": ") {
        Some((path, rest))
            if !path.is_empty()
                && path.chars().all(|c| {
                    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '[' | ']' | '?')
                }) =>
        {
            rest
        }
        _ => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_paths_are_left_out_but_messages_kept() {
        assert_eq!(
            strip_field_path("rules[3].verdict: unknown verdict \"x\""),
            "unknown verdict \"x\""
        );
        assert_eq!(
            strip_field_path("rules[0]: missing field `id`"),
            "missing field `id`"
        );
        assert_eq!(
            strip_field_path("invalid type: string, expected a map"),
            "invalid type: string, expected a map"
        );
        assert_eq!(strip_field_path("unknown field `x`"), "unknown field `x`");
        assert_eq!(
            strip_field_path("default: unknown verdict"),
            "unknown verdict"
        );
    }
}
