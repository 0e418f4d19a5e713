//! Limits checked before the parser sees a line.
//!
//! brush-parser recurses once per nesting level and overflows its stack (aborting the process) on
//! deeply nested input. A cheap scan bounds the nesting before parsing; the parse itself then runs
//! on a stack segment large enough for the bound.

/// Longest line analysed; longer lines are opaque. Real agent lines are far shorter.
pub const MAX_INPUT_BYTES: usize = 64 * 1024;

/// Deepest nesting of brackets and compound keywords analysed.
pub const MAX_NESTING: usize = 64;

/// Deepest nesting of parentheses analysed. brush-parser 0.4 backtracks over `( ( ...; ) )`
/// (subshell or arithmetic?) in time that doubles with each level: 16 levels take about 1 ms,
/// 22 take 55 ms. Real lines rarely nest three.
pub const MAX_PAREN_NESTING: usize = 12;

/// How many times text may be re-parsed as a script inside a script (`bash -c "eval '...'"`).
pub const MAX_SCRIPT_DEPTH: usize = 12;

/// Most invocations reported for one line; more is treated as hostile.
pub const MAX_INVOCATIONS: usize = 2_000;

/// An upper bound on the nesting depth of `text`, counting every bracket and compound keyword,
/// quoted or not. Over-counting is harmless: it can only make a line opaque, never unsafe.
pub fn nesting_bound(text: &str) -> usize {
    let mut depth: usize = 0;
    let mut deepest: usize = 0;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match b {
            b'(' | b'{' | b'[' | b'`' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b')' | b'}' | b']' => depth = depth.saturating_sub(1),
            b'a'..=b'z' => {
                let start = i;
                while i < bytes.len() && bytes[i].is_ascii_lowercase() {
                    i += 1;
                }
                let before_ok = start == 0 || !is_word_byte(bytes[start - 1]);
                let after_ok = i >= bytes.len() || !is_word_byte(bytes[i]);
                if before_ok && after_ok {
                    match &text[start..i] {
                        "if" | "while" | "until" | "for" | "case" | "select" | "do" | "then"
                        | "function" | "coproc" => {
                            depth += 1;
                            deepest = deepest.max(depth);
                        }
                        "fi" | "done" | "esac" => depth = depth.saturating_sub(2),
                        _ => {}
                    }
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    deepest
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

/// The deepest nesting of parentheses in `text`, quoted or not.
pub fn paren_bound(text: &str) -> usize {
    let mut depth: usize = 0;
    let mut deepest: usize = 0;
    for b in text.bytes() {
        match b {
            b'(' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b')' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_counts_brackets_and_keywords() {
        assert_eq!(nesting_bound("ls"), 0);
        assert_eq!(nesting_bound("echo $(a $(b))"), 2);
        assert!(nesting_bound("if true; then if true; then ls; fi; fi") >= 2);
        assert!(nesting_bound(&"(".repeat(500)) >= 500);
        assert_eq!(nesting_bound("ifconfig; done_file"), 0);
    }
}
