//! The end of a sandbox's stderr that an error message quotes when the runtime died before
//! the step's code started.

/// How many bytes of stderr an error message may quote.
pub(crate) const STDERR_TAIL_BYTES: usize = 2048;

/// The last [`STDERR_TAIL_BYTES`] bytes of `stderr`, as text.
pub(crate) fn stderr_tail(stderr: &[u8]) -> String {
    String::from_utf8_lossy(&stderr[stderr.len().saturating_sub(STDERR_TAIL_BYTES)..]).into_owned()
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
