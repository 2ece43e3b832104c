//! The excerpt of a failing answer kept in a record: short, one line, with control
//! characters escaped so a hostile answer cannot forge log lines or terminal output.

/// Characters in an excerpt (after escaping), besides the `…` that marks a cut.
pub const EXCERPT_CHARS: usize = 160;

/// The start of `text` in at most [`EXCERPT_CHARS`] characters, control characters
/// escaped (`\n`, `\u{1b}`), with `…` when cut. The caller scrubs secrets first.
pub fn excerpt(text: &str) -> String {
    let mut out = String::new();
    let mut len = 0;
    for c in text.chars() {
        let piece: String = if c.is_control() {
            c.escape_default().collect()
        } else {
            c.to_string()
        };
        let n = piece.chars().count();
        if len + n > EXCERPT_CHARS {
            out.push('…');
            break;
        }
        out.push_str(&piece);
        len += n;
    }
    out
}
