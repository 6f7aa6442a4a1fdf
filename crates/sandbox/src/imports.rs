//! The modules a step's source imports, read on the platform before any sandbox exists (G9).
//!
//! A step may import only its pinned standard library; one that imports anything else needs
//! repair, and nothing of it may run. The check used to run in the harness, on the syntax tree
//! of `compile(..., PyCF_ONLY_AST)`. An interpreter's first `compile()` call sets up the `ast`
//! module's node types (over a hundred classes), about 1.2 ms of every cold step on this class
//! of machine (issue 13): the harness now runs the step with `exec`, which skips that, and the
//! check runs here instead, so that a step which needs repair never gets a sandbox at all.
//!
//! It finds what the harness's walk of the tree found:
//! - `import a.b as c, d` (`a` and `d`), `from a.b import c` (`a`), and a relative
//!   `from ..a import b` (`..a`, never a standard module);
//! - every call of a name or attribute `__import__` or `import_module` whose first argument is
//!   a string literal (`importlib.import_module("numpy")`).
//!
//! It reads tokens, not a tree. `import` is a hard keyword, so every `import` token starts an
//! import statement or ends a `from` import's module; `from` starts one exactly where a
//! statement starts (`yield from` and `raise ... from` never do). Strings, comments and
//! f-strings (with PEP 701's nesting) are lexed as Python lexes them, so no word inside them
//! counts; the expressions inside an f-string's fields do. The differential test runs both
//! checks over the standard library's own source and requires the same answer.
//!
//! It reads names as Python does: a non-ASCII identifier in its NFKC form (`__ｉmport__` is
//! `__import__`, `import ｏs` imports `os`), a keyword only as written (`ｉmport os` does not
//! parse). A callee may be parenthesised (`(__import__)('x')`). A literal module name with a
//! `\N{...}` escape is not decoded (the reader carries no Unicode name table): it counts, as
//! written, as a module outside the standard library, so such a step needs repair.
//!
//! Source the reader cannot read needs repair too, and gets no sandbox: an unterminated
//! string or f-string, or f-strings nested deeper than Python's own limits (150 f-strings, 2
//! fields in format specs), which the reader refuses before it recurses without bound. Python
//! rejects all of that as well, so a step loses only Python's own wording of its syntax error;
//! and should the reader ever fail on source Python accepts, the step still does not run
//! unchecked (fail closed). Source that tokenizes but does not parse and imports a module
//! outside the standard library needs repair, where the harness used to report the syntax
//! error first: either way the step must be changed before it can run.

use std::borrow::Cow;

use unicode_normalization::UnicodeNormalization as _;

/// One import the source states.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Import {
    /// The top-level module (`os` for `import os.path`), or the dotted relative name.
    pub module: String,
    /// The line of the statement, or of the call's start (1-based).
    pub line: usize,
}

/// F-strings nested in f-strings (PEP 701) that the reader follows: more than Python's
/// tokenizer allows (150), so that only source Python rejects is refused.
const MAX_FSTRING_NESTING: usize = 160;

/// Fields nested in format specs (`f'{x:{y:{z}}}'`) within one f-string: more than Python
/// allows (3.11 one, 3.12 and later two).
const MAX_SPEC_NESTING: usize = 4;

/// Why the source could not be tokenized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unlexable {
    pub line: usize,
    pub what: &'static str,
}

/// Every import `code` states, in source order.
pub(crate) fn imports(code: &str) -> Result<Vec<Import>, Unlexable> {
    let mut lexer = Lexer {
        source: code,
        bytes: code.as_bytes(),
        position: 0,
        line: 1,
        depth: 0,
        fstrings: 0,
        tokens: Vec::new(),
    };
    lexer.tokens(false)?;
    Ok(find(&lexer.tokens))
}

/// What the platform concludes from a step's source before any sandbox (G9).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Every import is of the standard library.
    Clean,
    /// The first import, in source order, of a module outside it.
    Foreign(Import),
    /// The source could not be read, so its imports are not known: it needs repair.
    Unread(Unlexable),
}

/// The verdict on `code` against `stdlib` (sorted, as `sys.stdlib_module_names` is kept).
pub(crate) fn verdict(code: &str, stdlib: &[String]) -> Verdict {
    let found = match imports(code) {
        Ok(found) => found,
        Err(unread) => return Verdict::Unread(unread),
    };
    found
        .into_iter()
        .find(|import| {
            stdlib
                .binary_search_by(|name| name.as_str().cmp(&import.module))
                .is_err()
        })
        .map_or(Verdict::Clean, Verdict::Foreign)
}

/// The needs-repair detail for source the reader could not read.
pub(crate) fn unread_detail(unread: &Unlexable) -> String {
    format!(
        "step.py:{}: {} (stepward reads a step's imports before any of it runs and could not \
         read this code; nothing of it ran)",
        unread.line, unread.what
    )
}

/// The needs-repair detail for `import`, worded as the harness worded it.
pub(crate) fn needs_repair_detail(import: &Import, python: crate::PythonPin) -> String {
    if import.module.contains("\\N{") {
        return format!(
            "step.py:{} imports a module named with a \\N{{...}} escape ({}), which stepward \
             does not decode: write the name out so that it can be checked against Python \
             {}.{}'s standard library",
            import.line,
            python_repr(&import.module),
            python.major,
            python.minor
        );
    }
    format!(
        "step.py:{} imports {}, which is not in Python {}.{}'s standard library",
        import.line,
        python_repr(&import.module),
        python.major,
        python.minor
    )
}

/// `repr()` of a module name as Python writes it (names are identifiers, but a literal given
/// to `__import__` may hold anything).
fn python_repr(text: &str) -> String {
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut written = String::with_capacity(text.len() + 2);
    written.push(quote);
    for character in text.chars() {
        match character {
            '\\' => written.push_str("\\\\"),
            '\n' => written.push_str("\\n"),
            '\r' => written.push_str("\\r"),
            '\t' => written.push_str("\\t"),
            _ if character == quote => {
                written.push('\\');
                written.push(character);
            }
            _ if character.is_control() => {
                let value = u32::from(character);
                if value < 0x100 {
                    written.push_str(&format!("\\x{value:02x}"));
                } else {
                    written.push_str(&format!("\\u{value:04x}"));
                }
            }
            _ => written.push(character),
        }
    }
    written.push(quote);
    written
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind<'a> {
    Name(&'a str),
    /// A string literal; `text` is its body between the quotes. `plain` for a `str` literal
    /// (not bytes, not an f-string), whose value is known.
    Str {
        text: &'a str,
        plain: bool,
        raw: bool,
    },
    Op(u8),
    /// The end of a logical line.
    Newline,
    Number,
    /// The start of an f-string's replacement field: what follows begins an expression.
    Field,
}

#[derive(Debug, Clone, Copy)]
struct Token<'a> {
    kind: Kind<'a>,
    line: usize,
}

/// A string literal's prefix.
#[derive(Debug, Clone, Copy, Default)]
struct Prefix {
    raw: bool,
    bytes: bool,
    formatted: bool,
}

impl Prefix {
    /// The prefix a word is, if it is one (`rb`, `F`, `u`, ...; `t` strings are PEP 750's).
    fn parse(word: &str) -> Option<Prefix> {
        let lower = word.to_ascii_lowercase();
        match lower.as_str() {
            "r" | "u" | "b" | "f" | "t" | "br" | "rb" | "fr" | "rf" | "tr" | "rt" => Some(Prefix {
                raw: lower.contains('r'),
                bytes: lower.contains('b'),
                formatted: lower.contains('f') || lower.contains('t'),
            }),
            _ => None,
        }
    }
}

struct Lexer<'a> {
    source: &'a str,
    bytes: &'a [u8],
    position: usize,
    line: usize,
    /// Bracket depth outside f-string fields: no logical line ends inside brackets.
    depth: usize,
    /// F-strings open around the position.
    fstrings: usize,
    tokens: Vec<Token<'a>>,
}

fn is_identifier_start(byte: u8) -> bool {
    byte.is_ascii_alphabetic() || byte == b'_' || byte >= 0x80
}

fn is_identifier_continue(byte: u8) -> bool {
    is_identifier_start(byte) || byte.is_ascii_digit()
}

impl<'a> Lexer<'a> {
    fn peek(&self, offset: usize) -> Option<u8> {
        self.bytes.get(self.position + offset).copied()
    }

    fn push(&mut self, kind: Kind<'a>, line: usize) {
        self.tokens.push(Token { kind, line });
    }

    /// Steps over one line end (`\n`, `\r\n` or `\r`, as Python's tokenizer translates them).
    fn line_end(&mut self) {
        if self.peek(0) == Some(b'\r') && self.peek(1) == Some(b'\n') {
            self.position += 1;
        }
        self.position += 1;
        self.line += 1;
    }

    /// Lexes to the end of the source or, inside an f-string's replacement field, up to the
    /// `}`, `:` or `!` that ends the field's expression (returned, not consumed).
    fn tokens(&mut self, in_field: bool) -> Result<Option<u8>, Unlexable> {
        // Brackets opened inside this field.
        let mut field_depth = 0usize;
        while let Some(byte) = self.peek(0) {
            let line = self.line;
            match byte {
                b' ' | b'\t' | b'\x0c' => self.position += 1,
                b'#' => {
                    while !matches!(self.peek(0), None | Some(b'\n' | b'\r')) {
                        self.position += 1;
                    }
                }
                b'\\' if matches!(self.peek(1), Some(b'\n' | b'\r')) => {
                    self.position += 1;
                    self.line_end();
                }
                b'\n' | b'\r' => {
                    self.line_end();
                    if !in_field && self.depth == 0 {
                        self.push(Kind::Newline, line);
                    }
                }
                b'(' | b'[' | b'{' => {
                    if in_field {
                        field_depth += 1;
                    } else {
                        self.depth += 1;
                    }
                    self.position += 1;
                    self.push(Kind::Op(byte), line);
                }
                b')' | b']' | b'}' => {
                    if in_field {
                        if field_depth == 0 {
                            if byte == b'}' {
                                return Ok(Some(byte));
                            }
                            return Err(Unlexable {
                                line,
                                what: "f-string: unmatched bracket",
                            });
                        }
                        field_depth -= 1;
                    } else {
                        self.depth = self.depth.saturating_sub(1);
                    }
                    self.position += 1;
                    self.push(Kind::Op(byte), line);
                }
                b':' if in_field && field_depth == 0 => return Ok(Some(byte)),
                b'!' if in_field && field_depth == 0 && self.peek(1) != Some(b'=') => {
                    return Ok(Some(byte));
                }
                b'\'' | b'"' => self.string(Prefix::default())?,
                b'0'..=b'9' => self.number(),
                b'.' if self.peek(1).is_some_and(|next| next.is_ascii_digit()) => self.number(),
                _ if is_identifier_start(byte) => {
                    let start = self.position;
                    while self.peek(0).is_some_and(is_identifier_continue) {
                        self.position += 1;
                    }
                    let word = &self.source[start..self.position];
                    match Prefix::parse(word) {
                        Some(prefix) if matches!(self.peek(0), Some(b'\'' | b'"')) => {
                            self.string(prefix)?;
                        }
                        _ => self.push(Kind::Name(word), line),
                    }
                }
                _ => {
                    self.position += 1;
                    self.push(Kind::Op(byte), line);
                }
            }
        }
        if in_field {
            return Err(Unlexable {
                line: self.line,
                what: "f-string: expecting '}'",
            });
        }
        Ok(None)
    }

    /// A number, read as Python reads one: a letter that cannot continue it (`1if`, `0else`)
    /// starts the next token.
    fn number(&mut self) {
        let line = self.line;
        let digits = |lexer: &mut Self, valid: fn(u8) -> bool| {
            while lexer
                .peek(0)
                .is_some_and(|byte| valid(byte) || byte == b'_')
            {
                lexer.position += 1;
            }
        };
        let radix: Option<fn(u8) -> bool> = match (
            self.peek(0),
            self.peek(1).map(|byte| byte.to_ascii_lowercase()),
        ) {
            (Some(b'0'), Some(b'x')) => Some(|byte| byte.is_ascii_hexdigit()),
            (Some(b'0'), Some(b'o')) => Some(|byte| (b'0'..=b'7').contains(&byte)),
            (Some(b'0'), Some(b'b')) => Some(|byte| byte == b'0' || byte == b'1'),
            _ => None,
        };
        if let Some(valid) = radix {
            self.position += 2;
            digits(self, valid);
            self.push(Kind::Number, line);
            return;
        }
        let decimal = |byte: u8| byte.is_ascii_digit();
        digits(self, decimal);
        if self.peek(0) == Some(b'.') {
            self.position += 1;
            digits(self, decimal);
        }
        if matches!(self.peek(0), Some(b'e' | b'E')) {
            let signed = usize::from(matches!(self.peek(1), Some(b'+' | b'-')));
            if self
                .peek(1 + signed)
                .is_some_and(|byte| byte.is_ascii_digit())
            {
                self.position += 1 + signed;
                digits(self, decimal);
            }
        }
        if matches!(self.peek(0), Some(b'j' | b'J')) {
            self.position += 1;
        }
        self.push(Kind::Number, line);
    }

    /// Whether a string opened with `quote` (three of them when `triple`) closes here.
    fn closes(&self, quote: u8, triple: bool) -> bool {
        self.peek(0) == Some(quote)
            && (!triple || (self.peek(1) == Some(quote) && self.peek(2) == Some(quote)))
    }

    /// A string literal, the position at its opening quote.
    fn string(&mut self, prefix: Prefix) -> Result<(), Unlexable> {
        let line = self.line;
        let Some(quote) = self.peek(0) else {
            return Err(Unlexable {
                line,
                what: "a string prefix at the end of the code",
            });
        };
        let triple = self.peek(1) == Some(quote) && self.peek(2) == Some(quote);
        let width = if triple { 3 } else { 1 };
        self.position += width;
        let unterminated = |line| Unlexable {
            line,
            what: "unterminated string literal",
        };
        if prefix.formatted {
            if self.fstrings >= MAX_FSTRING_NESTING {
                return Err(Unlexable {
                    line,
                    what: "too many nested f-strings",
                });
            }
            self.fstrings += 1;
            let body = self.formatted_body(quote, triple, prefix.raw, line);
            self.fstrings -= 1;
            body?;
            self.push(
                Kind::Str {
                    text: "",
                    plain: false,
                    raw: prefix.raw,
                },
                line,
            );
            return Ok(());
        }
        let start = self.position;
        loop {
            match self.peek(0) {
                None => return Err(unterminated(line)),
                // A backslash keeps the next character in the string, in raw strings too.
                Some(b'\\') => {
                    self.position += 1;
                    match self.peek(0) {
                        None => return Err(unterminated(line)),
                        Some(b'\n' | b'\r') => self.line_end(),
                        Some(_) => self.position += 1,
                    }
                }
                Some(_) if self.closes(quote, triple) => break,
                Some(b'\n' | b'\r') if !triple => return Err(unterminated(line)),
                Some(b'\n' | b'\r') => self.line_end(),
                Some(_) => self.position += 1,
            }
        }
        let text = &self.source[start..self.position];
        self.position += width;
        self.push(
            Kind::Str {
                text,
                plain: !prefix.bytes,
                raw: prefix.raw,
            },
            line,
        );
        Ok(())
    }

    /// An f-string's literal text and fields, up to and including its closing quote.
    fn formatted_body(
        &mut self,
        quote: u8,
        triple: bool,
        raw: bool,
        line: usize,
    ) -> Result<(), Unlexable> {
        let width = if triple { 3 } else { 1 };
        loop {
            match self.peek(0) {
                None => {
                    return Err(Unlexable {
                        line,
                        what: "unterminated f-string literal",
                    });
                }
                Some(b'\\') => self.formatted_escape(raw, line)?,
                Some(b'{') if self.peek(1) == Some(b'{') => self.position += 2,
                Some(b'}') if self.peek(1) == Some(b'}') => self.position += 2,
                Some(b'{') => {
                    self.position += 1;
                    self.field(quote, triple, raw, line, 0)?;
                }
                Some(_) if self.closes(quote, triple) => {
                    self.position += width;
                    return Ok(());
                }
                Some(b'\n' | b'\r') if !triple => {
                    return Err(Unlexable {
                        line,
                        what: "unterminated f-string literal",
                    });
                }
                Some(b'\n' | b'\r') => self.line_end(),
                Some(_) => self.position += 1,
            }
        }
    }

    /// A backslash in an f-string's literal text: `\N{...}` is one escape (its braces open no
    /// field), a brace after it is read as a brace, anything else stays in the text.
    fn formatted_escape(&mut self, raw: bool, line: usize) -> Result<(), Unlexable> {
        if !raw && self.peek(1) == Some(b'N') && self.peek(2) == Some(b'{') {
            while self.peek(0).is_some_and(|byte| byte != b'}') {
                self.position += 1;
            }
            if self.peek(0).is_none() {
                return Err(Unlexable {
                    line,
                    what: "an unterminated \\N{...} escape",
                });
            }
            self.position += 1;
            return Ok(());
        }
        self.position += 1;
        match self.peek(0) {
            None => Err(Unlexable {
                line,
                what: "unterminated f-string literal",
            }),
            Some(b'{' | b'}') => Ok(()),
            Some(b'\n' | b'\r') => {
                self.line_end();
                Ok(())
            }
            Some(_) => {
                self.position += 1;
                Ok(())
            }
        }
    }

    /// A replacement field, after its `{`: the expression's tokens join the stream, then a
    /// conversion (`!r`) and a format spec (which may hold fields of its own), up to and
    /// including the closing `}`. `spec_depth` counts the format specs around the field.
    fn field(
        &mut self,
        quote: u8,
        triple: bool,
        raw: bool,
        line: usize,
        spec_depth: usize,
    ) -> Result<(), Unlexable> {
        if spec_depth > MAX_SPEC_NESTING {
            return Err(Unlexable {
                line,
                what: "f-string: expressions nested too deeply",
            });
        }
        let unterminated = Unlexable {
            line,
            what: "f-string: expecting '}'",
        };
        self.push(Kind::Field, self.line);
        let mut end = self.tokens(true)?;
        if end == Some(b'!') {
            self.position += 1;
            while self
                .peek(0)
                .is_some_and(|byte| byte.is_ascii_alphanumeric())
            {
                self.position += 1;
            }
            // Python 3.12 allows space between the conversion and what ends it.
            loop {
                match self.peek(0) {
                    Some(b' ' | b'\t' | b'\x0c') => self.position += 1,
                    Some(b'\n' | b'\r') if triple => self.line_end(),
                    _ => break,
                }
            }
            end = self.peek(0);
        }
        if end == Some(b':') {
            self.position += 1;
            loop {
                match self.peek(0) {
                    None => return Err(unterminated),
                    Some(b'}') => break,
                    Some(b'{') => {
                        self.position += 1;
                        self.field(quote, triple, raw, line, spec_depth + 1)?;
                    }
                    Some(b'\\') => self.formatted_escape(raw, line)?,
                    Some(_) if self.closes(quote, triple) => return Err(unterminated),
                    Some(b'\n' | b'\r') if !triple => return Err(unterminated),
                    Some(b'\n' | b'\r') => self.line_end(),
                    Some(_) => self.position += 1,
                }
            }
        }
        if self.peek(0) != Some(b'}') {
            return Err(unterminated);
        }
        self.position += 1;
        Ok(())
    }
}

/// The value of a plain string literal's body, or `None` where it holds a `\N{...}` escape
/// (a character named by its Unicode name, which this module does not carry).
fn decoded(text: &str, raw: bool) -> Option<String> {
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    if raw {
        return Some(text);
    }
    let mut value = String::with_capacity(text.len());
    let mut characters = text.chars().peekable();
    while let Some(character) = characters.next() {
        if character != '\\' {
            value.push(character);
            continue;
        }
        let escaped = characters.next()?;
        let mut hex = |digits: usize| -> Option<char> {
            let mut number = 0u32;
            for _ in 0..digits {
                number = number * 16 + characters.next()?.to_digit(16)?;
            }
            char::from_u32(number)
        };
        match escaped {
            '\n' => {}
            '\\' | '\'' | '"' => value.push(escaped),
            'a' => value.push('\x07'),
            'b' => value.push('\x08'),
            'f' => value.push('\x0c'),
            'n' => value.push('\n'),
            'r' => value.push('\r'),
            't' => value.push('\t'),
            'v' => value.push('\x0b'),
            'x' => value.push(hex(2)?),
            'u' => value.push(hex(4)?),
            'U' => value.push(hex(8)?),
            'N' => return None,
            '0'..='7' => {
                let mut number = escaped.to_digit(8)?;
                for _ in 0..2 {
                    match characters.peek().and_then(|next| next.to_digit(8)) {
                        Some(digit) => {
                            number = number * 8 + digit;
                            characters.next();
                        }
                        None => break,
                    }
                }
                value.push(char::from_u32(number)?);
            }
            // An unknown escape stays as written.
            other => {
                value.push('\\');
                value.push(other);
            }
        }
    }
    Some(value)
}

/// The name at `index` as written: how Python matches a keyword.
fn word_at<'a>(tokens: &[Token<'a>], index: usize) -> Option<&'a str> {
    match tokens.get(index)?.kind {
        Kind::Name(name) => Some(name),
        _ => None,
    }
}

/// The identifier at `index` as Python reads it: NFKC-normalised when not ASCII.
fn name_at<'a>(tokens: &[Token<'a>], index: usize) -> Option<Cow<'a, str>> {
    let word = word_at(tokens, index)?;
    if word.is_ascii() {
        return Some(Cow::Borrowed(word));
    }
    Some(Cow::Owned(word.nfkc().collect()))
}

/// Python's hard keywords and the soft keyword `match`: a `(` after one opens a group, after
/// any other name a call (`match(x)` may be either; read as a group, it fails closed).
const KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "match", "nonlocal", "not", "or", "pass", "raise", "return", "try",
    "while", "with", "yield",
];

fn op_at(tokens: &[Token<'_>], index: usize, byte: u8) -> bool {
    tokens
        .get(index)
        .is_some_and(|token| token.kind == Kind::Op(byte))
}

/// Whether the token at `index` is the first of a statement.
fn starts_statement(tokens: &[Token<'_>], index: usize) -> bool {
    index == 0
        || matches!(
            tokens[index - 1].kind,
            Kind::Newline | Kind::Op(b';') | Kind::Op(b':')
        )
}

fn top_level(module: &str) -> String {
    module.split('.').next().unwrap_or(module).to_owned()
}

/// For each `)` token, the index of the `(` it closes (`NO_MATCH` for any other token, or a
/// `)` that closes nothing: source Python rejects).
fn matching_openers(tokens: &[Token<'_>]) -> Vec<usize> {
    let mut openers = vec![NO_MATCH; tokens.len()];
    let mut open = Vec::new();
    for (index, token) in tokens.iter().enumerate() {
        match token.kind {
            Kind::Op(b'(' | b'[' | b'{') => open.push(index),
            Kind::Op(closing @ (b')' | b']' | b'}')) => {
                if let Some(opener) = open.pop()
                    && closing == b')'
                    && tokens[opener].kind == Kind::Op(b'(')
                {
                    openers[index] = opener;
                }
            }
            _ => {}
        }
    }
    openers
}

const NO_MATCH: usize = usize::MAX;

fn find(tokens: &[Token<'_>]) -> Vec<Import> {
    let openers = matching_openers(tokens);
    let mut found = Vec::new();
    let mut index = 0;
    while index < tokens.len() {
        let token = tokens[index];
        match token.kind {
            Kind::Name("import") => {
                index = plain_import(tokens, index + 1, token.line, &mut found);
                continue;
            }
            Kind::Name("from") if starts_statement(tokens, index) => {
                index = from_import(tokens, index + 1, token.line, &mut found);
                continue;
            }
            Kind::Name(_)
                if matches!(
                    name_at(tokens, index).as_deref(),
                    Some("__import__" | "import_module")
                ) =>
            {
                if let Some((module, line)) = call_of_literal(tokens, &openers, index) {
                    found.push(Import {
                        module: top_level(&module),
                        line,
                    });
                }
            }
            _ => {}
        }
        index += 1;
    }
    found
}

/// `import a.b as c, d`, after `import`: records each name's first part; returns the index
/// of the first token after the statement's names.
fn plain_import(
    tokens: &[Token<'_>],
    mut index: usize,
    line: usize,
    found: &mut Vec<Import>,
) -> usize {
    while let Some(first) = name_at(tokens, index) {
        found.push(Import {
            module: first.into_owned(),
            line,
        });
        index += 1;
        while op_at(tokens, index, b'.') && word_at(tokens, index + 1).is_some() {
            index += 2;
        }
        if word_at(tokens, index) == Some("as") && word_at(tokens, index + 1).is_some() {
            index += 2;
        }
        if !op_at(tokens, index, b',') {
            break;
        }
        index += 1;
    }
    index
}

/// `from ..a.b import c`, after `from`: records the module; returns the index after the
/// statement (its imported names hold no import).
fn from_import(
    tokens: &[Token<'_>],
    mut index: usize,
    line: usize,
    found: &mut Vec<Import>,
) -> usize {
    let mut level = 0;
    while op_at(tokens, index, b'.') {
        level += 1;
        index += 1;
    }
    let mut parts = Vec::new();
    while word_at(tokens, index).is_some_and(|word| word != "import") {
        parts.push(name_at(tokens, index).unwrap_or_default());
        index += 1;
        if !op_at(tokens, index, b'.') {
            break;
        }
        index += 1;
    }
    if word_at(tokens, index) != Some("import") || (level == 0 && parts.is_empty()) {
        // Not an import after all (a syntax error the harness reports).
        return index;
    }
    let module = if level > 0 {
        format!("{}{}", ".".repeat(level), parts.join("."))
    } else {
        parts[0].clone().into_owned()
    };
    found.push(Import { module, line });
    index += 1;
    while index < tokens.len() && !matches!(tokens[index].kind, Kind::Newline | Kind::Op(b';')) {
        index += 1;
    }
    index
}

/// The module and line of a call of `__import__` or `import_module` (the name at `index`,
/// perhaps the last of a dotted chain, perhaps the last of a parenthesised callee:
/// `(importlib.import_module)`, `(x().__import__)`) whose whole first argument is string
/// literals, implicitly joined, perhaps in parentheses.
fn call_of_literal(
    tokens: &[Token<'_>],
    openers: &[usize],
    index: usize,
) -> Option<(String, usize)> {
    let mut at = index + 1;
    let mut group = None;
    while op_at(tokens, at, b')') {
        let opener = openers[at];
        if opener == NO_MATCH || !opens_group(tokens, opener) {
            return None;
        }
        group = Some(opener);
        at += 1;
    }
    let module = literal_argument(tokens, at)?;
    // The syntax tree places a call where its callee starts: the outermost group's `(`, or
    // the first name of a dotted chain (walked back only for a call found, so linear).
    let start = group.unwrap_or_else(|| {
        let mut start = index;
        while start >= 2 && op_at(tokens, start - 1, b'.') && word_at(tokens, start - 2).is_some() {
            start -= 2;
        }
        start
    });
    Some((module, tokens[start].line))
}

/// Whether the `(` at `index` opens a group rather than a call's arguments or a subscript.
fn opens_group(tokens: &[Token<'_>], index: usize) -> bool {
    if index == 0 {
        return true;
    }
    match tokens[index - 1].kind {
        Kind::Name(word) => KEYWORDS.contains(&word),
        Kind::Op(b')' | b']') | Kind::Str { .. } | Kind::Number => false,
        Kind::Op(_) | Kind::Newline | Kind::Field => true,
    }
}

/// The value of the string literals that make the whole first argument of a call whose `(` is
/// at `at`. A literal with a `\N{...}` escape gives its text as written (see the module's
/// documentation).
fn literal_argument(tokens: &[Token<'_>], mut at: usize) -> Option<String> {
    if !op_at(tokens, at, b'(') {
        return None;
    }
    at += 1;
    let mut parentheses = 0;
    while op_at(tokens, at, b'(') {
        parentheses += 1;
        at += 1;
    }
    let mut value = String::new();
    let mut written = String::new();
    let mut undecoded = false;
    let mut literals = 0;
    while let Some(Kind::Str { text, plain, raw }) = tokens.get(at).map(|token| token.kind) {
        if !plain {
            return None;
        }
        match decoded(text, raw) {
            Some(decoded) => value.push_str(&decoded),
            None => undecoded = true,
        }
        written.push_str(text);
        literals += 1;
        at += 1;
    }
    if literals == 0 {
        return None;
    }
    for _ in 0..parentheses {
        if !op_at(tokens, at, b')') {
            return None;
        }
        at += 1;
    }
    let module = if undecoded { written } else { value };
    (op_at(tokens, at, b',') || op_at(tokens, at, b')')).then_some(module)
}

#[cfg(test)]
#[path = "imports_tests.rs"]
mod tests;

/// What the platform's import reader finds wrong with a step's code before any sandbox (G9),
/// for `stepward check` to report where the code is: the line of the code, and the same
/// words the run would record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportProblem {
    /// The line of the code (1-based).
    pub line: usize,
    /// The module outside the standard library; empty when the imports could not be read.
    pub module: String,
    /// What the run records as the step's reason for needing repair.
    pub detail: String,
}

/// The first import of `code` outside `stdlib` (`sys.stdlib_module_names` of the pinned
/// interpreter), or why its imports cannot be read: what the run refuses before any sandbox.
pub fn import_problem(
    code: &str,
    stdlib: &[String],
    python: crate::PythonPin,
) -> Option<ImportProblem> {
    match verdict(code, stdlib) {
        Verdict::Clean => None,
        Verdict::Foreign(import) => Some(ImportProblem {
            line: import.line,
            detail: needs_repair_detail(&import, python),
            module: import.module,
        }),
        Verdict::Unread(unread) => Some(ImportProblem {
            line: unread.line,
            module: String::new(),
            detail: unread_detail(&unread),
        }),
    }
}
