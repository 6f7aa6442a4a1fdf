//! The file tools (Read, Write, Edit, Glob, Grep) over the agent's tree (G22).
//!
//! Every path goes through [`workspace::confine_suggesting`] (components, never prefixes; no
//! `..`; never absolute) and then [`workspace::Tree`] (`openat2` beneath the root, no link of
//! any kind, `fstat` before reading). Every write is held to [`workspace::StepWriterRules`] in
//! workspace coordinates ([`workspace::AgentView`]), matched by pattern, so a protected file
//! that does not exist yet is refused too. This code runs in the file-tool helper process
//! ([`crate::helper`]), never in the platform's.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use workspace::{AgentView, RelPath, StepWriterRules, Tree, TreeError, is_protected};

use crate::catalogue::ToolKind;
use crate::looping::{PathRefusal, ToolReply};

/// The root every path the model sees is relative to.
pub const TREE_ROOT: &str = "/work";
/// Lines a Read returns at most.
pub const MAX_READ_LINES: u64 = 2000;
/// Bytes a Read returns at most.
pub const MAX_READ_BYTES: u64 = 256 * 1024;
/// The largest file Write or Edit writes.
pub const MAX_WRITE_BYTES: usize = 4 * 1024 * 1024;
/// Paths a Glob returns at most.
pub const MAX_GLOB_MATCHES: usize = 200;
/// Lines a Grep returns at most.
pub const MAX_GREP_MATCHES: usize = 100;
/// Bytes a Grep reads at most, all files together.
pub const MAX_GREP_BYTES: u64 = 32 * 1024 * 1024;
/// How long a Grep or a Glob may take.
pub const MAX_SEARCH_TIME: Duration = Duration::from_secs(5);
/// Entries a walk visits at most.
pub const MAX_WALK_ENTRIES: usize = 20_000;

/// The most bytes of a path a refusal or a message names: a model may send a path of any
/// length, and what is refused goes into the record and back to the model on every turn.
pub const MAX_SHOWN_PATH_BYTES: usize = 1024;

/// `text` cut to [`MAX_SHOWN_PATH_BYTES`] at a character boundary, marked `…` when cut.
fn shown(text: &str) -> String {
    if text.len() <= MAX_SHOWN_PATH_BYTES {
        return text.to_owned();
    }
    let mut end = MAX_SHOWN_PATH_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes in all)", &text[..end], text.len())
}

/// The file tools of one agent step.
pub struct FileTools {
    tree: Tree,
    view: AgentView,
    rules: StepWriterRules,
    writable: bool,
}

fn text_argument<'a>(arguments: &'a Map<String, Value>, name: &str) -> &'a str {
    arguments.get(name).and_then(Value::as_str).unwrap_or("")
}

fn number_argument(arguments: &Map<String, Value>, name: &str) -> Option<u64> {
    arguments.get(name).and_then(Value::as_u64)
}

impl FileTools {
    pub fn new(
        root: &Path,
        agent: &str,
        rules: StepWriterRules,
        writable: bool,
    ) -> Result<FileTools, TreeError> {
        Ok(FileTools {
            tree: Tree::open(root)?,
            view: AgentView::new(agent),
            rules,
            writable,
        })
    }

    /// Runs one checked call of a file tool.
    pub fn call(&self, kind: &ToolKind, arguments: &Map<String, Value>) -> ToolReply {
        match kind {
            ToolKind::Read => self.read(arguments),
            ToolKind::Write => self.write(arguments),
            ToolKind::Edit => self.edit(arguments),
            ToolKind::Glob => self.glob(arguments),
            ToolKind::Grep => self.grep(arguments),
            ToolKind::Run | ToolKind::Consult | ToolKind::Custom { .. } => {
                ToolReply::error("this tool is not a file tool")
            }
        }
    }

    /// Every file of the tree, for suggestions.
    fn listing(&self) -> Vec<String> {
        self.tree
            .walk(None, MAX_WALK_ENTRIES)
            .map(|(entries, _)| {
                entries
                    .into_iter()
                    .filter(|entry| entry.kind == "file")
                    .map(|entry| entry.path.to_string())
                    .collect()
            })
            .unwrap_or_default()
    }

    fn suggestion_for(&self, requested: &str) -> Option<String> {
        let listing = self.listing();
        suggest(requested, &listing)
    }

    /// The path a tool may touch, or the refusal naming what was probably meant.
    fn confine(&self, requested: &str) -> Result<RelPath, ToolReply> {
        let listing = self.listing();
        let refs: Vec<&str> = listing.iter().map(String::as_str).collect();
        match workspace::confine_suggesting(Path::new(TREE_ROOT), requested, &refs) {
            Ok(path) => {
                if let Some(kind) = is_protected(&path) {
                    return Err(ToolReply::refused(PathRefusal {
                        path: shown(requested),
                        reason: format!("it is {kind}, which no tool may open"),
                        suggestion: None,
                    }));
                }
                Ok(path)
            }
            Err(refusal) => Err(ToolReply::refused(PathRefusal {
                path: shown(requested),
                reason: refusal.reason.to_string(),
                suggestion: refusal
                    .did_you_mean
                    .or_else(|| suggest(requested, &listing))
                    .map(|suggestion| shown(&suggestion)),
            })),
        }
    }

    fn tree_error(&self, requested: &str, error: TreeError) -> ToolReply {
        match error {
            TreeError::Link { .. } | TreeError::HardLink { .. } => {
                ToolReply::refused(PathRefusal {
                    path: shown(requested),
                    reason: "it is, or passes through, a link; links are never followed".to_owned(),
                    suggestion: None,
                })
            }
            TreeError::NotFound { .. } => {
                let mut message = format!("`{}` does not exist", shown(requested));
                if let Some(suggestion) = self.suggestion_for(requested) {
                    message.push_str(&format!("; did you mean `{}`?", shown(&suggestion)));
                }
                ToolReply::error(message)
            }
            other => ToolReply::error(other.to_string()),
        }
    }

    /// A write's path: confined, and allowed to step writers.
    fn writable_path(&self, requested: &str) -> Result<RelPath, ToolReply> {
        let path = self.confine(requested)?;
        if !self.writable {
            return Err(ToolReply::refused(PathRefusal {
                path: shown(requested),
                reason: "this agent's tree is read-only".to_owned(),
                suggestion: None,
            }));
        }
        let in_workspace = self.view.to_workspace(&path).map_err(|refusal| {
            ToolReply::refused(PathRefusal {
                path: shown(requested),
                reason: refusal.reason.to_string(),
                suggestion: None,
            })
        })?;
        if let Some(refusal) = self.rules.refusal(&in_workspace) {
            return Err(ToolReply::refused(PathRefusal {
                path: shown(requested),
                reason: format!("{refusal}; it cannot be written"),
                suggestion: None,
            }));
        }
        Ok(path)
    }

    fn read(&self, arguments: &Map<String, Value>) -> ToolReply {
        let requested = text_argument(arguments, "path");
        let path = match self.confine(requested) {
            Ok(path) => path,
            Err(reply) => return reply,
        };
        let (probe, size) = match self.tree.read(&path, 0, 8192) {
            Ok(read) => read,
            Err(error) => return self.tree_error(requested, error),
        };
        if probe.contains(&0) || binary_start(&probe) {
            return ToolReply::ok(format!(
                "`{path}` is a binary file of {size} bytes; it is not shown"
            ));
        }
        let limit = number_argument(arguments, "limit")
            .unwrap_or(MAX_READ_LINES)
            .clamp(1, MAX_READ_LINES);
        // Where the page starts: a byte position (the rest of a long line), or a line.
        let (start, first) = match number_argument(arguments, "from_byte") {
            Some(from_byte) if from_byte > size => {
                return ToolReply::error(format!(
                    "`from_byte` {from_byte} is past the end of `{path}` ({size} bytes)"
                ));
            }
            Some(from_byte) => match self.lines_before(&path, from_byte) {
                Ok(lines) => (from_byte, lines + 1),
                Err(error) => return self.tree_error(requested, error),
            },
            None => {
                let first = number_argument(arguments, "offset").unwrap_or(1).max(1);
                match self.line_start(&path, first, size) {
                    Ok(Some(start)) => (start, first),
                    Ok(None) => {
                        return ToolReply::ok(format!(
                            "`{path}` has fewer than {first} lines ({size} bytes in all)"
                        ));
                    }
                    Err(error) => return self.tree_error(requested, error),
                }
            }
        };
        // A few bytes past the bound, so a character cut by it is seen whole or not at all.
        let (bytes, _) = match self.tree.read(&path, start, MAX_READ_BYTES + 4) {
            Ok(read) => read,
            Err(error) => return self.tree_error(requested, error),
        };
        let page = read_page(&bytes, start, size, first, limit);
        let mut shown = page.text;
        match page.next {
            ReadOn::Done if first == 1 && start == 0 => {}
            ReadOn::Done => {
                shown.push_str(&format!("\n(to the end of `{path}`, {size} bytes in all)"))
            }
            ReadOn::Line(next) => shown.push_str(&format!(
                "\n(lines {first} to {} of `{path}`, {size} bytes in all; call Read with offset \
                 {next} to read on)",
                next - 1
            )),
            ReadOn::Byte(next) => shown.push_str(&format!(
                "\n(line {} of `{path}` goes on past {} bytes: this is bytes {start} to {next} of \
                 the file, {size} bytes in all; call Read with from_byte {next} to read on)",
                page.last_line, MAX_READ_BYTES
            )),
        }
        ToolReply::ok(shown)
    }

    /// The byte where line `line` (from 1) starts, or `None` when the file has fewer lines.
    fn line_start(&self, path: &RelPath, line: u64, size: u64) -> Result<Option<u64>, TreeError> {
        if line <= 1 {
            return Ok(Some(0));
        }
        let mut seen = 1u64;
        let mut at = 0u64;
        while at < size {
            let (chunk, _) = self.tree.read(path, at, SCAN_CHUNK)?;
            if chunk.is_empty() {
                break;
            }
            for newline in memchr::memchr_iter(b'\n', &chunk) {
                seen += 1;
                if seen == line {
                    let start = at + newline as u64 + 1;
                    return Ok((start < size).then_some(start));
                }
            }
            at += chunk.len() as u64;
        }
        Ok(None)
    }

    /// How many line breaks come before byte `end`.
    fn lines_before(&self, path: &RelPath, end: u64) -> Result<u64, TreeError> {
        let mut count = 0u64;
        let mut at = 0u64;
        while at < end {
            let (chunk, _) = self.tree.read(path, at, SCAN_CHUNK.min(end - at))?;
            if chunk.is_empty() {
                break;
            }
            count += memchr::memchr_iter(b'\n', &chunk).count() as u64;
            at += chunk.len() as u64;
        }
        Ok(count)
    }

    fn write(&self, arguments: &Map<String, Value>) -> ToolReply {
        let requested = text_argument(arguments, "path");
        let content = text_argument(arguments, "content");
        let path = match self.writable_path(requested) {
            Ok(path) => path,
            Err(reply) => return reply,
        };
        if content.len() > MAX_WRITE_BYTES {
            return ToolReply::error(format!(
                "the content is {} bytes; a file may have at most {MAX_WRITE_BYTES}",
                content.len()
            ));
        }
        match self.tree.write(&path, content.as_bytes()) {
            Ok(()) => ToolReply::ok(format!("wrote `{path}` ({} bytes)", content.len())),
            Err(error) => self.tree_error(requested, error),
        }
    }

    fn edit(&self, arguments: &Map<String, Value>) -> ToolReply {
        let requested = text_argument(arguments, "path");
        let old = text_argument(arguments, "old_string");
        let new = text_argument(arguments, "new_string");
        let all = arguments
            .get("replace_all")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let path = match self.writable_path(requested) {
            Ok(path) => path,
            Err(reply) => return reply,
        };
        let (bytes, size) = match self.tree.read(&path, 0, MAX_WRITE_BYTES as u64 + 1) {
            Ok(read) => read,
            Err(error) => return self.tree_error(requested, error),
        };
        if size > MAX_WRITE_BYTES as u64 {
            return ToolReply::error(format!("`{path}` is too large to edit ({size} bytes)"));
        }
        let Ok(text) = String::from_utf8(bytes) else {
            return ToolReply::error(format!("`{path}` is not UTF-8 text; it cannot be edited"));
        };
        if old.is_empty() {
            return ToolReply::error("`old_string` is empty; give the exact text to replace");
        }
        let count = text.matches(old).count();
        let edited = match (count, all) {
            (0, _) => {
                return ToolReply::error(format!("`old_string` does not occur in `{path}`"));
            }
            (1, _) | (_, true) => {
                // The result's size, before it is built: a small edit of many occurrences may
                // otherwise multiply the file past what Write may write.
                let grown = (count as u128) * (new.len() as u128);
                let removed = (count as u128) * (old.len() as u128);
                let result = text.len() as u128 + grown - removed;
                if result > MAX_WRITE_BYTES as u128 {
                    return ToolReply::error(format!(
                        "the edit would make `{path}` {result} bytes ({count} replacement(s)); a \
                         file may have at most {MAX_WRITE_BYTES}"
                    ));
                }
                text.replace(old, new)
            }
            (_, false) => {
                return ToolReply::error(format!(
                    "`old_string` occurs {count} times in `{path}`; give more context so it \
                     occurs once, or set `replace_all`"
                ));
            }
        };
        match self.tree.write(&path, edited.as_bytes()) {
            Ok(()) => ToolReply::ok(format!("edited `{path}` ({count} replacement(s))")),
            Err(error) => self.tree_error(requested, error),
        }
    }

    fn glob(&self, arguments: &Map<String, Value>) -> ToolReply {
        let pattern = text_argument(arguments, "pattern");
        let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
        if pattern.starts_with('/') || pattern.split('/').any(|part| part == "..") {
            return ToolReply::refused(PathRefusal {
                path: shown(pattern),
                reason: "patterns are relative to the root of your tree, without `..`".to_owned(),
                suggestion: Some(shown(&pattern.trim_start_matches('/').replace("../", ""))),
            });
        }
        let matcher = match globset::GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
        {
            Ok(glob) => glob.compile_matcher(),
            Err(error) => return ToolReply::error(format!("the pattern is not a glob: {error}")),
        };
        let started = Instant::now();
        let (entries, walk_cut) = match self.tree.walk(None, MAX_WALK_ENTRIES) {
            Ok(walked) => walked,
            Err(error) => return ToolReply::error(error.to_string()),
        };
        let mut matches = Vec::new();
        let mut cut = None;
        for entry in entries {
            if started.elapsed() > MAX_SEARCH_TIME {
                cut = Some("the search ran out of time");
                break;
            }
            if entry.kind != "file" || !matcher.is_match(entry.path.as_str()) {
                continue;
            }
            if matches.len() >= MAX_GLOB_MATCHES {
                cut = Some("there are more matches than 200");
                break;
            }
            matches.push(entry.path.to_string());
        }
        if walk_cut && cut.is_none() {
            cut = Some("the tree has more entries than one search visits");
        }
        let mut text = if matches.is_empty() {
            "no file matches".to_owned()
        } else {
            matches.join("\n")
        };
        if let Some(why) = cut {
            text.push_str(&format!("\n(cut: {why})"));
        }
        ToolReply::ok(text)
    }

    fn grep(&self, arguments: &Map<String, Value>) -> ToolReply {
        let pattern = text_argument(arguments, "pattern");
        let regex = match regex::RegexBuilder::new(pattern)
            .size_limit(1 << 20)
            .dfa_size_limit(1 << 22)
            .build()
        {
            Ok(regex) => regex,
            Err(error) => {
                return ToolReply::error(format!(
                    "the pattern is not a regular expression: {error}"
                ));
            }
        };
        let start = match arguments.get("path").and_then(Value::as_str) {
            None | Some("" | "." | "./") => None,
            Some(requested) => match self.confine(requested) {
                Ok(path) => Some(path),
                Err(reply) => return reply,
            },
        };
        let filter = match arguments.get("glob").and_then(Value::as_str) {
            None => None,
            Some(glob) => match globset::Glob::new(glob) {
                Ok(glob) => Some(glob.compile_matcher()),
                Err(error) => return ToolReply::error(format!("`glob` is not a glob: {error}")),
            },
        };
        let entries = match &start {
            Some(path) if self.tree.kind(path).ok() == Some("file") => vec![workspace::TreeEntry {
                path: path.clone(),
                kind: "file",
                size: 0,
            }],
            start => match self.tree.walk(start.as_ref(), MAX_WALK_ENTRIES) {
                Ok((entries, _)) => entries,
                Err(error) => return self.tree_error(text_argument(arguments, "path"), error),
            },
        };
        let started = Instant::now();
        let mut read = 0u64;
        let mut lines = Vec::new();
        let mut cut = None;
        'files: for entry in entries.iter().filter(|entry| entry.kind == "file") {
            if filter
                .as_ref()
                .is_some_and(|filter| !filter.is_match(entry.path.as_str()))
                || is_protected(&entry.path).is_some()
            {
                continue;
            }
            if started.elapsed() > MAX_SEARCH_TIME {
                cut = Some("the search ran out of time");
                break;
            }
            let Ok((bytes, _)) = self.tree.read(&entry.path, 0, 1024 * 1024) else {
                continue;
            };
            read += bytes.len() as u64;
            if bytes[..bytes.len().min(8192)].contains(&0) {
                continue;
            }
            let text = String::from_utf8_lossy(&bytes);
            for (index, line) in text.lines().enumerate() {
                if regex.is_match(line) {
                    if lines.len() >= MAX_GREP_MATCHES {
                        cut = Some("there are more matching lines than 100");
                        break 'files;
                    }
                    let shown: String = line.chars().take(300).collect();
                    lines.push(format!("{}:{}: {shown}", entry.path, index + 1));
                }
            }
            if read > MAX_GREP_BYTES {
                cut = Some("the search read its 32 MiB");
                break;
            }
        }
        let mut text = if lines.is_empty() {
            "no line matches".to_owned()
        } else {
            lines.join("\n")
        };
        if let Some(why) = cut {
            text.push_str(&format!("\n(cut: {why})"));
        }
        ToolReply::ok(text)
    }
}

/// The path of `listing` that `requested` most probably meant: the workspace's suggestion
/// first, else the entry that ends in the longest tail of `requested` (`/tmp/notes/week.md` →
/// `shared/notes/week.md`).
pub fn suggest(requested: &str, listing: &[String]) -> Option<String> {
    let refs: Vec<&str> = listing.iter().map(String::as_str).collect();
    // A path no workspace path can be has nothing to suggest; and the walk over its tails
    // below is quadratic in its length.
    if requested.len() > workspace::MAX_PATH_BYTES {
        return None;
    }
    let parts: Vec<&str> = requested
        .split('/')
        .filter(|part| !part.is_empty() && *part != "." && *part != "..")
        .collect();
    for start in 0..parts.len() {
        let tail = parts[start..].join("/");
        let with_slash = format!("/{tail}");
        let mut found: Vec<&&str> = refs
            .iter()
            .filter(|entry| **entry == tail || entry.ends_with(&with_slash))
            .collect();
        found.sort_by_key(|entry| entry.len());
        if let Some(entry) = found.first() {
            return Some((**entry).to_owned());
        }
    }
    let relative = requested.strip_prefix(TREE_ROOT).unwrap_or(requested);
    workspace::did_you_mean(relative.trim_start_matches('/'), &refs)
}

/// Bytes a Read scans at a time to find where a line starts.
const SCAN_CHUNK: u64 = 1024 * 1024;

/// Whether the start of a file is not UTF-8 text (a character cut at the end of the probe
/// does not count).
fn binary_start(probe: &[u8]) -> bool {
    matches!(std::str::from_utf8(probe), Err(error) if error.error_len().is_some())
}

/// Where a Read goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ReadOn {
    /// The page reached the end of the file.
    Done,
    /// The next page starts at this line.
    Line(u64),
    /// A line longer than a page goes on at this byte.
    Byte(u64),
}

/// One page of a Read: whole lines, or the part of one long line a page holds.
struct Page {
    text: String,
    /// The number of the last line shown (in part or whole).
    last_line: u64,
    next: ReadOn,
}

/// The page of `bytes` (read from byte `start` of a file of `size` bytes, where line `first`
/// starts or goes on): at most `limit` lines and [`MAX_READ_BYTES`] bytes. A line longer than
/// the page is cut inside, at a character boundary, and the page says the byte to read on from.
fn read_page(bytes: &[u8], start: u64, size: u64, first: u64, limit: u64) -> Page {
    // A page that starts inside a character begins at the next one.
    let skip = bytes
        .iter()
        .take(3)
        .take_while(|byte| (**byte & 0xC0) == 0x80)
        .count();
    let bytes = &bytes[skip..];
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(error) => std::str::from_utf8(&bytes[..error.valid_up_to()]).unwrap_or(""),
    };
    let budget = MAX_READ_BYTES as usize;
    let mut at = start + skip as u64;
    let mut line = first;
    let mut shown = String::new();
    let mut rest = text;
    let mut lines = 0u64;
    let mut next = ReadOn::Done;
    while !rest.is_empty() {
        if lines >= limit {
            next = ReadOn::Line(line);
            break;
        }
        let (content, consumed) = match rest.find('\n') {
            Some(end) => (&rest[..end], end + 1),
            None => (rest, rest.len()),
        };
        let ends_in_page = consumed > content.len() || at + consumed as u64 >= size;
        let room = budget.saturating_sub(shown.len());
        if content.len() < room && ends_in_page {
            shown.push_str(content);
            shown.push('\n');
            at += consumed as u64;
            line += 1;
            lines += 1;
            rest = &rest[consumed..];
            continue;
        }
        if !shown.is_empty() {
            next = ReadOn::Line(line);
            break;
        }
        // One line longer than a page: as much of it as the page holds.
        let mut cut = content.len().min(room.saturating_sub(1)).max(1);
        while cut > 0 && !content.is_char_boundary(cut) {
            cut -= 1;
        }
        shown.push_str(&content[..cut]);
        shown.push('\n');
        at += cut as u64;
        return Page {
            text: shown,
            last_line: line,
            next: if at < size {
                ReadOn::Byte(at)
            } else {
                ReadOn::Done
            },
        };
    }
    if next == ReadOn::Done && at < size {
        next = ReadOn::Line(line);
    }
    Page {
        text: shown,
        last_line: line.saturating_sub(1).max(first),
        next,
    }
}
