//! Diagnostics: what is wrong, where (file, line, column), and what would be right (G5).

use std::fmt;

/// One problem found in a workflow or agent file.
///
/// `line` and `column` are 1-based; the column counts characters, not bytes. `code` is a stable
/// kebab-case rule id (for example `missing-explain`) that tests and tools can match on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub file: String,
    pub line: u32,
    pub column: u32,
    pub code: &'static str,
    pub message: String,
    pub help: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: error[{}]: {}",
            self.file, self.line, self.column, self.code, self.message
        )?;
        if !self.help.is_empty() {
            write!(f, "\n  = help: {}", self.help)?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostic {}

impl Diagnostic {
    /// Renders the diagnostic like rustc does, with the offending line of `text` and a caret
    /// under the column. `text` should be the file the diagnostic was made from; a line that
    /// does not exist in it is simply left out.
    pub fn render_with_source(&self, text: &str) -> String {
        let line_number = self.line.to_string();
        let gutter = " ".repeat(line_number.len());
        let mut rendered = format!(
            "error[{}]: {}\n{gutter}--> {}:{}:{}\n",
            self.code, self.message, self.file, self.line, self.column
        );
        let source_line = usize::try_from(self.line)
            .ok()
            .and_then(|line| line.checked_sub(1))
            .and_then(|index| text.split('\n').nth(index));
        if let Some(source_line) = source_line {
            let source_line = source_line.strip_suffix('\r').unwrap_or(source_line);
            // Tabs before the column are copied so the caret lines up however tabs render.
            let padding: String = source_line
                .chars()
                .take(usize::try_from(self.column.saturating_sub(1)).unwrap_or(0))
                .map(|character| if character == '\t' { '\t' } else { ' ' })
                .collect();
            rendered.push_str(&format!("{gutter} |\n"));
            rendered.push_str(&format!("{line_number} | {source_line}\n"));
            rendered.push_str(&format!("{gutter} | {padding}^\n"));
        }
        if !self.help.is_empty() {
            rendered.push_str(&format!("{gutter} = help: {}\n", self.help));
        }
        rendered
    }
}

/// A 1-based position in a file, the column counted in characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Position {
    pub(crate) line: u32,
    pub(crate) column: u32,
}

impl Position {
    pub(crate) const START: Position = Position { line: 1, column: 1 };
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}", self.line, self.column)
    }
}

/// The most characters [`report_unshowable`] names, one diagnostic each.
const MAX_UNSHOWABLE_REPORTED: usize = 5;

/// Reports every character of `text` (up to [`MAX_UNSHOWABLE_REPORTED`]) that would show a
/// reader something other than what runs: a bidirectional control, which reorders how the text
/// around it is shown ("Trojan Source"), or a control character other than the tab and the
/// line break, which drives a terminal. A definition is read by people before it runs; it holds
/// none of them. Whether any was found.
pub(crate) fn report_unshowable(text: &str, diagnostics: &mut Diagnostics) -> bool {
    if text.len() > crate::yaml::MAX_INPUT_BYTES {
        // Refused for its size first; not read through.
        return false;
    }
    let mut found = 0;
    let mut line = 1u32;
    let mut column = 1u32;
    let mut characters = text.chars().peekable();
    while let Some(character) = characters.next() {
        let line_end = character == '\n' || (character == '\r' && characters.peek() == Some(&'\n'));
        let reorders = matches!(
            character,
            '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
        );
        let drives = !line_end
            && character != '\t'
            && (character.is_control() || matches!(character, '\u{2028}' | '\u{2029}'));
        if reorders || drives {
            found += 1;
            if found <= MAX_UNSHOWABLE_REPORTED {
                let code = u32::from(character);
                let (kind, why) = if reorders {
                    (
                        "bidi-control",
                        "a bidirectional control, which changes the order the text around it is \
                         shown in, so a reader would see something other than what runs",
                    )
                } else {
                    (
                        "control-character",
                        "a control character, which a terminal or a page does not show as it is",
                    )
                };
                diagnostics.report(
                    Position { line, column },
                    kind,
                    format!("U+{code:04X} is {why}"),
                    "remove it: a definition holds text a person reads as it runs (write a \
                     character a program needs as an escape in its code, such as \"\\u202e\")",
                );
            }
        }
        if character == '\n' {
            line = line.saturating_add(1);
            column = 1;
        } else if !(character == '\r' && line_end) {
            column = column.saturating_add(1);
        }
    }
    found > 0
}

/// Collects diagnostics for one file, so every rule reports and none stops the others.
pub(crate) struct Diagnostics {
    file: String,
    found: Vec<Diagnostic>,
}

impl Diagnostics {
    pub(crate) fn new(file: &str) -> Diagnostics {
        Diagnostics {
            file: file.to_string(),
            found: Vec::new(),
        }
    }

    pub(crate) fn report(
        &mut self,
        at: Position,
        code: &'static str,
        message: impl Into<String>,
        help: impl Into<String>,
    ) {
        self.found.push(Diagnostic {
            file: self.file.clone(),
            line: at.line,
            column: at.column,
            code,
            message: message.into(),
            help: help.into(),
        });
    }

    /// Whether a "did you mean" is still worth computing. Suggestions weigh many candidates;
    /// past the first hundred problems a file is not a typo away from right, and computing
    /// them would let a hostile file make parsing slow.
    pub(crate) fn wants_suggestions(&self) -> bool {
        self.found.len() < 100
    }

    pub(crate) fn len(&self) -> usize {
        self.found.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.found.is_empty()
    }

    /// Hands back the diagnostics in file order, each position clamped into `text` so that no
    /// caller ever gets a location outside the file (a parser bug must not become a bad span).
    pub(crate) fn finish(self, text: &str) -> Vec<Diagnostic> {
        let line_lengths: Vec<u32> = text
            .split('\n')
            .map(|line| {
                let line = line.strip_suffix('\r').unwrap_or(line);
                u32::try_from(line.chars().count()).unwrap_or(u32::MAX)
            })
            .collect();
        let mut found = self.found;
        for diagnostic in &mut found {
            let last_line = u32::try_from(line_lengths.len()).unwrap_or(u32::MAX).max(1);
            diagnostic.line = diagnostic.line.clamp(1, last_line);
            let length = usize::try_from(diagnostic.line - 1)
                .ok()
                .and_then(|index| line_lengths.get(index))
                .copied()
                .unwrap_or(0);
            diagnostic.column = diagnostic.column.clamp(1, length.saturating_add(1));
        }
        // A stable sort keeps rules that report at the same place in the order they ran.
        found.sort_by_key(|diagnostic| (diagnostic.line, diagnostic.column));
        found
    }
}
