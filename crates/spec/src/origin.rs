//! Where a value of a definition was written, so a tool that reads the value further (the
//! Python of a code step, the script a custom tool names) can report at the file's own line
//! and column.

use crate::diagnostic::Position;
use crate::yaml::{Node, NodeValue};

/// Where a value starts in its file (1-based line and column, columns in characters), and
/// whether its text maps onto the file line for line: a literal block (`code: |`) does, each
/// of its lines at the block's indentation; any other style (plain, quoted, folded) does not,
/// and every place inside it is reported at the value's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Origin {
    pub line: u32,
    pub column: u32,
    pub line_for_line: bool,
}

impl Origin {
    /// The file's line and column of `line` and `column` (1-based) of the value's own text.
    pub fn locate(&self, line: u32, column: u32) -> (u32, u32) {
        if self.line_for_line {
            (
                self.line.saturating_add(line.saturating_sub(1)),
                self.column.saturating_add(column.saturating_sub(1)),
            )
        } else {
            (self.line, self.column)
        }
    }
}

/// The origin of `node` in `text`, whose positions are offset by `first_line` lines (an
/// agent file's front matter starts after its `---` line).
pub(crate) fn origin_of(node: &Node, text: &str, first_line: u32) -> Origin {
    let Position { line, column } = node.position;
    let at_value = Origin {
        line,
        column,
        line_for_line: false,
    };
    let NodeValue::Scalar(scalar) = &node.value else {
        return at_value;
    };
    if !scalar.literal {
        return at_value;
    }
    let lines: Vec<&str> = text.split('\n').collect();
    let index = |line: u32| usize::try_from(line.saturating_sub(first_line + 1)).ok();
    let indicator_here = index(line).and_then(|at| lines.get(at)).and_then(|text| {
        text.chars()
            .nth(usize::try_from(column.saturating_sub(1)).ok()?)
    }) == Some('|');
    // The block's lines start on the line after its `|` indicator.
    let content_line = if indicator_here { line + 1 } else { line };
    let Some(start) = index(content_line) else {
        return at_value;
    };
    let indent = lines
        .iter()
        .skip(start)
        .find(|text| !text.trim().is_empty())
        .map(|text| {
            text.chars()
                .take_while(|character| *character == ' ')
                .count()
        });
    match indent.and_then(|indent| u32::try_from(indent).ok()) {
        Some(indent) => Origin {
            line: content_line,
            column: indent + 1,
            line_for_line: true,
        },
        None => at_value,
    }
}
