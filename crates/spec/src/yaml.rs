//! The raw YAML layer: a node tree close to the file, every node with its position.
//!
//! Built from saphyr-parser's event stream under hard bounds (input size, nesting depth, nodes
//! after alias expansion) so that hostile input gives a diagnostic, never exhausts memory or
//! time. Aliases and `<<` merge keys are expanded here, so later rules (G4 above all) see the
//! values exactly as a YAML loader would produce them. Duplicate keys are errors.

use std::collections::HashMap;

use saphyr_parser::{Event, Marker, Parser, ScalarStyle, Tag};

use crate::diagnostic::{Diagnostics, Position};

/// Largest file accepted, in bytes.
pub(crate) const MAX_INPUT_BYTES: usize = 256 * 1024;
/// Deepest nesting of sequences and mappings accepted, the root counting as one.
pub(crate) const MAX_DEPTH: usize = 32;
/// Most nodes a file may produce once every alias is expanded (stops "billion laughs").
pub(crate) const MAX_NODES: usize = 100_000;

/// One YAML node with where it was written.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub(crate) value: NodeValue,
    pub(crate) position: Position,
    /// When this node is a copy made by expanding an alias, where that alias was written.
    pub(crate) through_alias: Option<Position>,
}

#[derive(Debug, Clone)]
pub(crate) enum NodeValue {
    Scalar(Scalar),
    Sequence(Vec<Node>),
    Mapping(Vec<Entry>),
}

#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) key: Node,
    pub(crate) value: Node,
}

/// A scalar's text and whether YAML's core schema applies to it (plain and untagged) or it
/// is a string whatever it looks like (quoted, block, or tagged `!!str`).
#[derive(Debug, Clone)]
pub(crate) struct Scalar {
    pub(crate) text: String,
    pub(crate) plain: bool,
    /// A literal block (`|`): its lines are the file's lines (see `origin`).
    pub(crate) literal: bool,
}

/// A plain scalar resolved by YAML 1.2's core schema.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Resolved<'node> {
    Null,
    Boolean(bool),
    Integer(serde_json::Number),
    Float(f64),
    String(&'node str),
}

impl Scalar {
    pub(crate) fn resolve(&self) -> Resolved<'_> {
        if !self.plain {
            return Resolved::String(&self.text);
        }
        resolve_plain(&self.text)
    }
}

fn resolve_plain(text: &str) -> Resolved<'_> {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Resolved::Null,
        "true" | "True" | "TRUE" => return Resolved::Boolean(true),
        "false" | "False" | "FALSE" => return Resolved::Boolean(false),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Resolved::Float(f64::INFINITY);
        }
        "-.inf" | "-.Inf" | "-.INF" => return Resolved::Float(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return Resolved::Float(f64::NAN),
        _ => {}
    }
    if let Some(octal) = text.strip_prefix("0o")
        && is_digits(octal, 8)
        && let Ok(number) = u64::from_str_radix(octal, 8)
    {
        return Resolved::Integer(number.into());
    }
    if let Some(hexadecimal) = text.strip_prefix("0x")
        && is_digits(hexadecimal, 16)
        && let Ok(number) = u64::from_str_radix(hexadecimal, 16)
    {
        return Resolved::Integer(number.into());
    }
    let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
    if is_digits(unsigned, 10) {
        if let Ok(number) = text.parse::<i64>() {
            return Resolved::Integer(number.into());
        }
        if let Ok(number) = unsigned.parse::<u64>()
            && !text.starts_with('-')
        {
            return Resolved::Integer(number.into());
        }
        if let Ok(number) = text.parse::<f64>() {
            return Resolved::Float(number);
        }
    }
    if looks_like_core_float(unsigned)
        && let Ok(number) = text.parse::<f64>()
    {
        return Resolved::Float(number);
    }
    Resolved::String(text)
}

fn is_digits(text: &str, radix: u32) -> bool {
    !text.is_empty() && text.chars().all(|character| character.is_digit(radix))
}

/// `( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?`, the core schema's float.
fn looks_like_core_float(text: &str) -> bool {
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(index) => (&text[..index], Some(&text[index + 1..])),
        None => (text, None),
    };
    let mantissa_ok = match mantissa.split_once('.') {
        Some((whole, fraction)) => {
            (whole.is_empty() && is_digits(fraction, 10))
                || (is_digits(whole, 10) && (fraction.is_empty() || is_digits(fraction, 10)))
        }
        None => is_digits(mantissa, 10),
    };
    let exponent_ok = match exponent {
        Some(exponent) => is_digits(exponent.strip_prefix(['-', '+']).unwrap_or(exponent), 10),
        None => true,
    };
    mantissa_ok && exponent_ok
}

impl Node {
    pub(crate) fn as_scalar(&self) -> Option<&Scalar> {
        match &self.value {
            NodeValue::Scalar(scalar) => Some(scalar),
            _ => None,
        }
    }

    /// The text of a key or other scalar, as written (after quoting is removed).
    pub(crate) fn scalar_text(&self) -> Option<&str> {
        self.as_scalar().map(|scalar| scalar.text.as_str())
    }

    /// A short description of what this node is, for messages ("a list", "the number 3.1").
    pub(crate) fn describe(&self) -> String {
        match &self.value {
            NodeValue::Sequence(_) => "a list".to_string(),
            NodeValue::Mapping(_) => "a mapping".to_string(),
            NodeValue::Scalar(scalar) => match scalar.resolve() {
                Resolved::Null => "nothing (null)".to_string(),
                Resolved::Boolean(value) => format!("the boolean {value}"),
                Resolved::Integer(_) | Resolved::Float(_) => {
                    format!("the number {}", scalar.text)
                }
                Resolved::String(_) => "a string".to_string(),
            },
        }
    }

    fn count(&self) -> (usize, usize) {
        match &self.value {
            NodeValue::Scalar(_) => (1, 0),
            NodeValue::Sequence(items) => items.iter().fold((1, 1), |(size, height), item| {
                let (item_size, item_height) = item.count();
                (size + item_size, height.max(item_height + 1))
            }),
            NodeValue::Mapping(entries) => entries.iter().fold((1, 1), |(size, height), entry| {
                let (key_size, key_height) = entry.key.count();
                let (value_size, value_height) = entry.value.count();
                (
                    size + key_size + value_size,
                    height.max(key_height.max(value_height) + 1),
                )
            }),
        }
    }

    fn mark_through_alias(&mut self, alias: Position) {
        self.through_alias = Some(alias);
        match &mut self.value {
            NodeValue::Scalar(_) => {}
            NodeValue::Sequence(items) => {
                for item in items {
                    item.mark_through_alias(alias);
                }
            }
            NodeValue::Mapping(entries) => {
                for entry in entries {
                    entry.key.mark_through_alias(alias);
                    entry.value.mark_through_alias(alias);
                }
            }
        }
    }
}

/// Parses `text` into one node tree. `line_offset` is added to every line, for YAML that sits
/// inside a larger file (an agent file's front matter). Returns `None` when the text could not
/// be turned into a tree at all; the reasons are in `diagnostics`. A `Some` may come with
/// diagnostics too (duplicate keys, bad tags): the tree is still useful for finding more.
pub(crate) fn parse(text: &str, line_offset: u32, diagnostics: &mut Diagnostics) -> Option<Node> {
    if text.len() > MAX_INPUT_BYTES {
        diagnostics.report(
            Position::START,
            "file-too-large",
            format!(
                "the file is {} bytes, more than the limit of {MAX_INPUT_BYTES} bytes",
                text.len()
            ),
            "split the workflow or move large data out of it; a definition this big is not \
             something a person can review",
        );
        return None;
    }
    let mut builder = Builder::new(line_offset, diagnostics);
    // The third-party parser is not trusted to be panic-free on hostile input: a panic there
    // becomes a diagnostic instead of taking down the server that called us.
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        builder.run(text);
    }));
    if outcome.is_err() {
        builder.diagnostics.report(
            Position::START,
            "yaml-parser-failure",
            "the YAML parser failed on this file",
            "simplify the YAML (plain block mappings and lists are always understood) and \
             report this file as a bug",
        );
        return None;
    }
    if builder.stopped {
        return None;
    }
    match builder.root.take() {
        Some(root) => Some(root),
        None => {
            builder.diagnostics.report(
                Position {
                    line: line_offset + 1,
                    column: 1,
                },
                "empty-file",
                "the file holds no YAML document",
                "start with `name:` and the other required keys",
            );
            None
        }
    }
}

enum Frame {
    Sequence {
        anchor: usize,
        position: Position,
        items: Vec<Node>,
    },
    Mapping {
        anchor: usize,
        position: Position,
        entries: Vec<Entry>,
        pending_key: Option<Node>,
    },
}

struct Anchored {
    node: Node,
    size: usize,
    height: usize,
}

struct Builder<'diagnostics> {
    line_offset: u32,
    diagnostics: &'diagnostics mut Diagnostics,
    anchors: HashMap<usize, Anchored>,
    stack: Vec<Frame>,
    root: Option<Node>,
    nodes: usize,
    documents: usize,
    /// Set when a bound was hit or the YAML was malformed: nothing more is read.
    stopped: bool,
}

impl<'diagnostics> Builder<'diagnostics> {
    fn new(line_offset: u32, diagnostics: &'diagnostics mut Diagnostics) -> Self {
        Builder {
            line_offset,
            diagnostics,
            anchors: HashMap::new(),
            stack: Vec::new(),
            root: None,
            nodes: 0,
            documents: 0,
            stopped: false,
        }
    }

    fn position(&self, marker: &Marker) -> Position {
        let line = u32::try_from(marker.line()).unwrap_or(u32::MAX).max(1);
        let column = u32::try_from(marker.col()).unwrap_or(u32::MAX - 1);
        Position {
            line: line.saturating_add(self.line_offset),
            column: column.saturating_add(1),
        }
    }

    fn run(&mut self, text: &str) {
        let mut parser = Parser::new_from_str(text);
        while !self.stopped {
            let Some(next) = parser.next_event() else {
                break;
            };
            match next {
                Ok((event, span)) => {
                    let position = self.position(&span.start);
                    self.on_event(event, position);
                }
                Err(error) if error.info().contains("recursion limit") => {
                    // The scanner has its own nesting bound and may reach it while looking
                    // ahead, before this builder has seen the containers: the same rule.
                    let position = self.position(error.marker());
                    self.report_too_deep(position);
                    self.stopped = true;
                }
                Err(error) if error.info().contains("unknown anchor") => {
                    let position = self.position(error.marker());
                    self.report_unknown_anchor(position);
                    self.stopped = true;
                }
                Err(error) => {
                    let position = self.position(error.marker());
                    self.diagnostics.report(
                        position,
                        "yaml-syntax",
                        format!("this is not valid YAML: {}", error.info()),
                        "check the indentation and quoting around this place",
                    );
                    self.stopped = true;
                }
            }
        }
    }

    fn on_event(&mut self, event: Event<'_>, position: Position) {
        match event {
            Event::Nothing | Event::StreamStart | Event::StreamEnd | Event::DocumentEnd => {}
            Event::DocumentStart(_) => {
                self.documents += 1;
                if self.documents > 1 {
                    self.diagnostics.report(
                        position,
                        "multiple-documents",
                        "the file holds more than one YAML document",
                        "keep one document per file; remove this `---` and what follows or \
                         move it to its own file",
                    );
                    self.stopped = true;
                }
            }
            Event::Scalar(text, style, anchor, tag) => {
                let plain = style == ScalarStyle::Plain && tag.is_none();
                if let Some(tag) = tag {
                    self.check_scalar_tag(&tag, position);
                }
                if !self.count_nodes(1, position) {
                    return;
                }
                let node = Node {
                    value: NodeValue::Scalar(Scalar {
                        text: text.into_owned(),
                        plain,
                        literal: style == ScalarStyle::Literal,
                    }),
                    position,
                    through_alias: None,
                };
                self.finish_node(node, anchor);
            }
            Event::SequenceStart(anchor, tag) => {
                if let Some(tag) = tag {
                    self.reject_collection_tag(&tag, position);
                }
                if self.count_nodes(1, position) && self.check_depth(1, position) {
                    self.stack.push(Frame::Sequence {
                        anchor,
                        position,
                        items: Vec::new(),
                    });
                }
            }
            Event::MappingStart(anchor, tag) => {
                if let Some(tag) = tag {
                    self.reject_collection_tag(&tag, position);
                }
                if self.count_nodes(1, position) && self.check_depth(1, position) {
                    self.stack.push(Frame::Mapping {
                        anchor,
                        position,
                        entries: Vec::new(),
                        pending_key: None,
                    });
                }
            }
            Event::SequenceEnd => {
                if let Some(Frame::Sequence {
                    anchor,
                    position,
                    items,
                }) = self.stack.pop()
                {
                    let node = Node {
                        value: NodeValue::Sequence(items),
                        position,
                        through_alias: None,
                    };
                    self.finish_node(node, anchor);
                }
            }
            Event::MappingEnd => {
                if let Some(Frame::Mapping {
                    anchor,
                    position,
                    entries,
                    ..
                }) = self.stack.pop()
                {
                    let entries = self.merge_and_deduplicate(entries);
                    let node = Node {
                        value: NodeValue::Mapping(entries),
                        position,
                        through_alias: None,
                    };
                    self.finish_node(node, anchor);
                }
            }
            Event::Alias(anchor) => self.expand_alias(anchor, position),
        }
    }

    fn check_scalar_tag(&mut self, tag: &Tag, position: Position) {
        // `!!str` only says "this is a string", which a quoted scalar says too; every other
        // tag would give the scalar a meaning this format does not have.
        if tag.is_yaml_core_schema() && tag.suffix == "str" {
            return;
        }
        self.report_tag(tag, position);
    }

    fn reject_collection_tag(&mut self, tag: &Tag, position: Position) {
        if tag.is_yaml_core_schema() && (tag.suffix == "seq" || tag.suffix == "map") {
            return;
        }
        self.report_tag(tag, position);
    }

    fn report_tag(&mut self, tag: &Tag, position: Position) {
        self.diagnostics.report(
            position,
            "unsupported-tag",
            format!("the YAML tag `{}` is not supported here", written_tag(tag)),
            "remove the tag; write strings in quotes if they look like numbers or booleans",
        );
    }

    fn count_nodes(&mut self, added: usize, position: Position) -> bool {
        self.nodes = self.nodes.saturating_add(added);
        if self.nodes > MAX_NODES {
            self.diagnostics.report(
                position,
                "too-many-nodes",
                format!(
                    "the file expands to more than {MAX_NODES} YAML values (aliases count once \
                     per use)"
                ),
                "write the data out plainly; aliases that repeat other aliases multiply the \
                 size of a file",
            );
            self.stopped = true;
            return false;
        }
        true
    }

    /// `added_height` is how many levels of nesting the new node brings (1 for a fresh
    /// sequence or mapping, the whole height of an aliased tree).
    fn check_depth(&mut self, added_height: usize, position: Position) -> bool {
        if self.stack.len() + added_height > MAX_DEPTH {
            self.report_too_deep(position);
            self.stopped = true;
            return false;
        }
        true
    }

    fn report_unknown_anchor(&mut self, position: Position) {
        self.diagnostics.report(
            position,
            "unknown-anchor",
            "this alias refers to an anchor that is not defined before it, or to the value \
             that contains it",
            "define the anchor (`&name`) on a complete value earlier in the file",
        );
    }

    fn report_too_deep(&mut self, position: Position) {
        self.diagnostics.report(
            position,
            "too-deep",
            format!("lists and mappings are nested more than {MAX_DEPTH} levels deep"),
            "flatten the structure; step inputs rarely need more than a few levels",
        );
    }

    fn expand_alias(&mut self, anchor: usize, position: Position) {
        let Some(anchored) = self.anchors.get(&anchor) else {
            self.report_unknown_anchor(position);
            self.stopped = true;
            return;
        };
        let (size, height) = (anchored.size, anchored.height);
        if !self.count_nodes(size, position) || !self.check_depth(height, position) {
            return;
        }
        let mut copy = match self.anchors.get(&anchor) {
            Some(anchored) => anchored.node.clone(),
            None => return,
        };
        copy.mark_through_alias(position);
        self.attach(copy);
    }

    fn finish_node(&mut self, node: Node, anchor: usize) {
        if anchor != 0 {
            let (size, height) = node.count();
            self.anchors.insert(
                anchor,
                Anchored {
                    node: node.clone(),
                    size,
                    height,
                },
            );
        }
        self.attach(node);
    }

    fn attach(&mut self, node: Node) {
        match self.stack.last_mut() {
            None => self.root = Some(node),
            Some(Frame::Sequence { items, .. }) => items.push(node),
            Some(Frame::Mapping {
                entries,
                pending_key,
                ..
            }) => match pending_key.take() {
                Some(key) => entries.push(Entry { key, value: node }),
                None => {
                    if node.as_scalar().is_none() {
                        self.diagnostics.report(
                            node.position,
                            "complex-key",
                            "a mapping key must be a plain name, not a list or a mapping",
                            "use a string as the key",
                        );
                    }
                    *pending_key = Some(node);
                }
            },
        }
    }

    /// Applies `<<` merge keys (explicit keys win, then earlier merged mappings win) and
    /// reports keys written twice.
    fn merge_and_deduplicate(&mut self, entries: Vec<Entry>) -> Vec<Entry> {
        let mut seen: HashMap<String, Position> = HashMap::new();
        let mut kept = Vec::with_capacity(entries.len());
        let mut merged_sources = Vec::new();
        for entry in entries {
            let Some(key) = entry.key.as_scalar() else {
                continue;
            };
            if key.plain && key.text == "<<" {
                merged_sources.push(entry.value);
                continue;
            }
            if let Some(first) = seen.get(&key.text) {
                self.diagnostics.report(
                    entry.key.position,
                    "duplicate-key",
                    format!("the key `{}` appears twice in this mapping", key.text),
                    format!("keep only one; the first is at {first}"),
                );
                continue;
            }
            seen.insert(key.text.clone(), entry.key.position);
            kept.push(entry);
        }
        for source in merged_sources {
            let source_position = source.position;
            let mappings = match source.value {
                NodeValue::Mapping(entries) => vec![entries],
                NodeValue::Sequence(items) => {
                    let mut mappings = Vec::new();
                    for item in items {
                        match item.value {
                            NodeValue::Mapping(entries) => mappings.push(entries),
                            _ => self.report_bad_merge(item.position),
                        }
                    }
                    mappings
                }
                NodeValue::Scalar(_) => {
                    self.report_bad_merge(source_position);
                    Vec::new()
                }
            };
            for entry in mappings.into_iter().flatten() {
                let Some(key) = entry.key.scalar_text() else {
                    continue;
                };
                if !seen.contains_key(key) {
                    seen.insert(key.to_string(), entry.key.position);
                    kept.push(entry);
                }
            }
        }
        kept
    }

    fn report_bad_merge(&mut self, position: Position) {
        self.diagnostics.report(
            position,
            "invalid-merge",
            "a `<<` merge key needs a mapping or a list of mappings",
            "merge an alias of a mapping (`<<: *defaults`) or remove the `<<` key",
        );
    }
}

/// A tag as it was most likely written (`!!binary`, `!local`), for messages.
fn written_tag(tag: &Tag) -> String {
    if tag.is_yaml_core_schema() {
        format!("!!{}", tag.suffix)
    } else {
        format!("{}{}", tag.handle, tag.suffix)
    }
}

#[cfg(test)]
mod tests {
    use crate::yaml::{Resolved, resolve_plain};

    #[test]
    fn core_schema_resolution_matches_yaml_1_2() {
        assert_eq!(resolve_plain("3.10"), Resolved::Float(3.1));
        assert_eq!(resolve_plain("3"), Resolved::Integer(3.into()));
        assert_eq!(resolve_plain("0x1f"), Resolved::Integer(31.into()));
        assert_eq!(resolve_plain("yes"), Resolved::String("yes"));
        assert_eq!(resolve_plain("~"), Resolved::Null);
        assert_eq!(resolve_plain("1e3"), Resolved::Float(1000.0));
        assert_eq!(resolve_plain("1.2.3"), Resolved::String("1.2.3"));
        assert_eq!(resolve_plain("-"), Resolved::String("-"));
        assert_eq!(resolve_plain("."), Resolved::String("."));
    }
}
