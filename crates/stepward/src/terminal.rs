//! The one way the CLI writes to its terminal (sandbox review 3, finding 4). Text a step, a
//! model or a file chose must not drive the terminal (escape sequences set the title, move the
//! cursor, erase what was read, write the clipboard) or reorder what is read (bidirectional
//! controls), so everything printed goes through [`printable_text`]: every control character
//! but the line break and the tab, and every bidirectional control, is shown as `?`. Static text
//! has none of them, so it comes out as it is. JSON is written with the characters JSON leaves
//! raw (DEL, C1, bidirectional controls, line separators) as `\uXXXX`, so it reads back as it was.
//!
//! The macros mirror `println!`, `print!`, `eprintln!` and `eprint!`; nothing else in the binary
//! writes to stdout or stderr (a test in `tidy` holds it so).

use std::io::Write;

/// Whether `character` may never reach a terminal raw: a control character (C0, DEL, C1) or a
/// character that changes the direction text is shown in, or a line or paragraph separator.
pub fn drives_terminal(character: char) -> bool {
    // What a name may not hold (C0, DEL, C1, bidi controls), and the line separators.
    workspace::is_forbidden_in_names(character) || matches!(character, '\u{2028}' | '\u{2029}')
}

/// `text` as one line: a line break or a tab as a space, every other character that drives a
/// terminal as `?`.
pub fn printable(text: &str) -> String {
    text.chars()
        .map(|character| match character {
            '\n' | '\t' => ' ',
            _ if drives_terminal(character) => '?',
            _ => character,
        })
        .collect()
}

/// `text` as lines: like [`printable`], but line breaks (`\n`, `\r\n`) and tabs stay.
pub fn printable_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut characters = text.chars().peekable();
    while let Some(character) = characters.next() {
        let line_end = character == '\r' && characters.peek() == Some(&'\n');
        if line_end || matches!(character, '\n' | '\t') || !drives_terminal(character) {
            out.push(character);
        } else {
            out.push('?');
        }
    }
    out
}

/// Serialised JSON with every character JSON leaves raw that drives a terminal written as a
/// `\uXXXX` escape. Such characters only occur inside strings, where the escape reads back as
/// the same character.
pub fn json_for_terminal(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for character in json.chars() {
        // A line break outside a string is the layout; inside one JSON has escaped it.
        if drives_terminal(character) && character != '\n' {
            let mut units = [0u16; 2];
            for unit in character.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        } else {
            out.push(character);
        }
    }
    out
}

/// Where a write goes.
#[derive(Clone, Copy)]
pub enum Stream {
    Out,
    Err,
}

/// Writes `text`, made printable, to `stream`. Fails as `println!` does when stdout cannot
/// be written (the binary ends quietly on a closed one, see `main`); a failed write to stderr
/// has nowhere to be told.
pub fn write(stream: Stream, text: &str) {
    let text = printable_text(text);
    match stream {
        Stream::Out => write_stdout(&text),
        Stream::Err => {
            let _ = std::io::stderr().lock().write_all(text.as_bytes());
        }
    }
}

/// Writes serialised JSON and a line break to stdout, fit for a terminal.
pub fn write_json_line(json: &str) {
    let mut text = json_for_terminal(json);
    text.push('\n');
    write_stdout(&text);
}

fn write_stdout(text: &str) {
    let mut stdout = std::io::stdout().lock();
    if let Err(error) = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        // The message `println!` panics with, which `main` knows.
        panic!("failed printing to stdout: {error}");
    }
}

/// `println!` through [`printable_text`].
macro_rules! outln {
    () => { $crate::terminal::write($crate::terminal::Stream::Out, "\n") };
    ($($arg:tt)*) => {{
        let mut text = format!($($arg)*);
        text.push('\n');
        $crate::terminal::write($crate::terminal::Stream::Out, &text)
    }};
}

/// `print!` through [`printable_text`].
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::terminal::write($crate::terminal::Stream::Out, &format!($($arg)*))
    };
}

/// `eprintln!` through [`printable_text`].
macro_rules! errln {
    () => { $crate::terminal::write($crate::terminal::Stream::Err, "\n") };
    ($($arg:tt)*) => {{
        let mut text = format!($($arg)*);
        text.push('\n');
        $crate::terminal::write($crate::terminal::Stream::Err, &text)
    }};
}

/// `eprint!` through [`printable_text`].
macro_rules! err {
    ($($arg:tt)*) => {
        $crate::terminal::write($crate::terminal::Stream::Err, &format!($($arg)*))
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_driver_is_shown_as_a_question_mark_and_lines_stay() {
        let text = "a\u{1b}[2Kb\u{7}c\u{9b}d\u{202e}e\u{2066}f\rg\u{7f}h\u{2028}i\n\tj";
        assert_eq!(printable_text(text), "a?[2Kb?c?d?e?f?g?h?i\n\tj");
        assert_eq!(printable(text), "a?[2Kb?c?d?e?f?g?h?i  j");
        assert_eq!(
            printable("plain text, ünïcode 🦀"),
            "plain text, ünïcode 🦀"
        );
        assert_eq!(printable_text("a\r\nb\rc"), "a\r\nb?c");
    }

    #[test]
    fn json_escapes_what_it_leaves_raw_and_reads_back_the_same() {
        let value = serde_json::json!({"said": "x\u{9b}y\u{202e}z\u{7f}\u{1b}🦀"});
        let text = json_for_terminal(&serde_json::to_string_pretty(&value).unwrap());
        assert!(!text.chars().any(drives_terminal_but_layout), "{text:?}");
        assert!(text.contains("\\u009b") && text.contains("\\u202e") && text.contains("\\u007f"));
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, value);
    }

    fn drives_terminal_but_layout(character: char) -> bool {
        drives_terminal(character) && character != '\n'
    }
}
