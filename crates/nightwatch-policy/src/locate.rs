//! Best-effort positions in the policy text for errors found after reading it (a duplicate
//! rule id, a failing example), when the YAML reader can no longer say where. Handles the
//! block style the policy is written in; anything else gives None.

/// Line and column (from 1) of the `-` of item `index` of the top-level list `list_key`.
pub(crate) fn list_item(source: &str, list_key: &str, index: usize) -> Option<(usize, usize)> {
    list_items(source, list_key).get(index).copied()
}

/// Line and column (from 1) of the `-` of every item of the top-level list `list_key`, in one
/// pass (a policy with many examples is located once, not once per example).
pub(crate) fn list_items(source: &str, list_key: &str) -> Vec<(usize, usize)> {
    let mut lines = source.lines().enumerate();
    if !lines.any(|(_, line)| top_level_key(line) == Some(list_key)) {
        return Vec::new();
    }
    let mut item_indent = None;
    let mut items = Vec::new();
    for (number, line) in lines {
        let trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let indent = line.len() - trimmed.len();
        let is_item = trimmed == "-" || trimmed.starts_with("- ");
        if indent == 0 && !is_item {
            break;
        }
        if !is_item || *item_indent.get_or_insert(indent) != indent {
            continue;
        }
        items.push((number + 1, indent + 1));
    }
    items
}

/// Line and column of the value of `field:` inside item `index` of the list `list_key`.
pub(crate) fn item_field(
    source: &str,
    list_key: &str,
    index: usize,
    field: &str,
) -> Option<(usize, usize)> {
    let (item_line, item_column) = list_item(source, list_key, index)?;
    let item_indent = item_column - 1;
    // The column at which the item's own keys start: after `- ` on its first line.
    let mut field_indent = None;
    for (offset, line) in source.lines().skip(item_line - 1).enumerate() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        if offset > 0 && indent <= item_indent {
            break;
        }
        let (body, body_start) = match trimmed.strip_prefix("- ") {
            Some(rest) if offset == 0 => {
                let rest_trimmed = rest.trim_start();
                (rest_trimmed, line.len() - rest_trimmed.len())
            }
            _ => (trimmed, indent),
        };
        if *field_indent.get_or_insert(body_start) != body_start {
            continue;
        }
        if let Some(value) = body.strip_prefix(field).and_then(|r| r.strip_prefix(':')) {
            let value_trimmed = value.trim_start();
            let column = body_start + field.len() + 1 + (value.len() - value_trimmed.len());
            return Some((item_line + offset, column + 1));
        }
    }
    Some((item_line, item_column))
}

/// Line of the top-level key `key:`.
pub(crate) fn top_level(source: &str, key: &str) -> Option<usize> {
    source
        .lines()
        .position(|line| top_level_key(line) == Some(key))
        .map(|index| index + 1)
}

fn top_level_key(line: &str) -> Option<&str> {
    if line.starts_with([' ', '\t', '#', '-']) {
        return None;
    }
    let (key, _) = line.split_once(':')?;
    Some(key.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: &str = "\
version: 1
rules:
  # a comment
  - id: first
    verdict: allow
  - verdict: deny
    actor:
      id: nested
    id: second
    command:
      - rm -rf /
examples:
- command: ls
  expect: allow
- tool: read
  path: /etc/shadow
  expect: deny
";

    #[test]
    fn items_and_fields_are_found_in_block_style() {
        assert_eq!(list_item(SOURCE, "rules", 0), Some((4, 3)));
        assert_eq!(list_item(SOURCE, "rules", 1), Some((6, 3)));
        assert_eq!(list_item(SOURCE, "rules", 2), None);
        assert_eq!(item_field(SOURCE, "rules", 0, "id"), Some((4, 9)));
        assert_eq!(item_field(SOURCE, "rules", 1, "id"), Some((9, 9)));
        assert_eq!(list_item(SOURCE, "examples", 1), Some((15, 1)));
        assert_eq!(item_field(SOURCE, "examples", 1, "path"), Some((16, 9)));
        assert_eq!(list_item(SOURCE, "missing", 0), None);
    }
}
