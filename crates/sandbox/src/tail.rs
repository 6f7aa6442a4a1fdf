//! The end of a sandbox's stderr that an error message quotes when the runtime died before
//! the step's code started.

/// How many bytes of stderr an error message may quote.
pub(crate) const STDERR_TAIL_BYTES: usize = 2048;

/// The last whole lines of `stderr` that fit in [`STDERR_TAIL_BYTES`] bytes, as text. A cut
/// never starts inside a line: the line the cut fell in is dropped and `…` says so, because
/// the engine scrubs whole forms, and a line cut in half could start with the second half of
/// a value (every line of a multi-line value is a form of its own).
pub(crate) fn stderr_tail(stderr: &[u8]) -> String {
    let start = stderr.len().saturating_sub(STDERR_TAIL_BYTES);
    if start == 0 {
        return String::from_utf8_lossy(stderr).into_owned();
    }
    let tail = stderr.get(start..).unwrap_or_default();
    match tail.iter().position(|byte| *byte == b'\n') {
        Some(newline) => format!(
            "…{}",
            String::from_utf8_lossy(tail.get(newline + 1..).unwrap_or_default())
        ),
        None => "… (its last line is too long to show)".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// G17 (review "credentials" A13): the engine scrubs whole forms; a tail that starts inside
    /// a value would keep its second half.
    #[test]
    fn g17_a_tail_never_starts_inside_a_line() {
        let value = "sk-live-tail-0123456789abcdefghij";
        let mut stderr = b"A".repeat(5000);
        stderr.extend_from_slice(value.as_bytes());
        stderr.push(b'\n');
        // The cut falls ten bytes into the value.
        stderr.extend(b"B".repeat(STDERR_TAIL_BYTES - (value.len() + 1 - 10)));
        assert_eq!(stderr.len() - STDERR_TAIL_BYTES, 5000 + 10);
        let tail = stderr_tail(&stderr);
        assert!(!tail.contains(&value[10..]), "{tail}");
        assert!(tail.starts_with('B') || tail.starts_with('…'), "{tail}");
        // A stderr that fits is quoted whole.
        assert_eq!(stderr_tail(b"short\nend"), "short\nend");
    }
}
