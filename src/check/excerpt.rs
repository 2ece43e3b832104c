//! The excerpt of a failing answer kept in a record: short, one line, with control
//! characters escaped so a hostile answer cannot forge log lines or terminal output.

/// Characters of answer kept in an excerpt.
pub const EXCERPT_CHARS: usize = 160;

/// The first [`EXCERPT_CHARS`] characters of `text`, control characters escaped
/// (`\n`, `\u{1b}`), with `…` when cut. The caller scrubs secrets first.
pub fn excerpt(text: &str) -> String {
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == EXCERPT_CHARS {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}
