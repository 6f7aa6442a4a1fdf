//! Results as what they are (issue 42, point 2): a value a step produced or will receive,
//! shaped for reading. Text reads as text (its line breaks kept), and as Markdown when it
//! looks like Markdown; an object reads as its fields; a list of records as a table; anything
//! else as indented JSON. The raw JSON is always one click away, and a long text is folded.
//!
//! Markdown is rendered here, on the server, into a small tree of our own blocks and spans
//! that the templates escape like every value: raw HTML in the text stays text, an image
//! becomes its description and its address as text (no remote image is ever fetched), and a
//! link is a link only to `http`, `https` or `mailto`, shown with its target. No template
//! writes unescaped HTML, so the CSP and the escaping stay as they are.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use serde_json::Value;

/// Text longer than this many lines is folded after them.
const FOLD_LINES: usize = 25;
/// Text longer than this many characters is folded after them.
const FOLD_CHARS: usize = 3000;
/// A field's or a cell's text is cut at this many characters (the raw JSON has it all).
const CELL_CHARS: usize = 300;
/// The most rows and columns a table shows; beyond, the raw JSON.
const MAX_ROWS: usize = 200;
const MAX_COLUMNS: usize = 12;
/// The most blocks a Markdown text is rendered into; beyond, it reads as plain text.
const MAX_BLOCKS: usize = 500;

/// A value shaped for reading, with its raw JSON.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ValueView {
    /// The value as indented JSON.
    pub(crate) raw: String,
    pub(crate) shape: Shape,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// A string: its first lines, the rest when folded, and its Markdown when it looks like
    /// Markdown.
    Text {
        head: String,
        rest: Option<String>,
        markdown: Option<Vec<Block>>,
    },
    /// An object: each field as a line of text.
    Fields(Vec<(String, String)>),
    /// A list of objects: their keys as columns.
    Table {
        columns: Vec<String>,
        rows: Vec<Vec<String>>,
    },
    /// Anything else: the raw JSON.
    Json,
}

/// A block of rendered Markdown: `kind` is `heading`, `paragraph`, `item` or `quote` (with
/// its spans), or `code` (with its text).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Block {
    pub(crate) kind: &'static str,
    pub(crate) spans: Vec<Span>,
    pub(crate) code: Option<String>,
}

impl Block {
    fn of(kind: &'static str, spans: Vec<Span>) -> Block {
        Block {
            kind,
            spans,
            code: None,
        }
    }
}

/// A run of text in a block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Span {
    Text(String),
    Strong(String),
    Emphasis(String),
    Code(String),
    /// A link to an `http`, `https` or `mailto` target, shown with it.
    Link {
        text: String,
        href: String,
    },
}

impl ValueView {
    /// `value` is already scrubbed.
    pub(crate) fn of(value: &Value) -> ValueView {
        let raw = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
        let shape = match value {
            Value::String(text) => text_shape(text),
            Value::Object(fields) if !fields.is_empty() => Shape::Fields(
                fields
                    .iter()
                    .map(|(key, value)| (key.clone(), cell(value)))
                    .collect(),
            ),
            Value::Array(items) => table(items).unwrap_or(Shape::Json),
            _ => Shape::Json,
        };
        ValueView { raw, shape }
    }
}

fn text_shape(text: &str) -> Shape {
    let cut = text
        .char_indices()
        .filter(|(_, character)| *character == '\n')
        .nth(FOLD_LINES - 1)
        .map(|(index, _)| index)
        .into_iter()
        .chain(text.char_indices().nth(FOLD_CHARS).map(|(index, _)| index))
        .min();
    let (head, rest) = match cut {
        Some(index) => (text[..index].to_owned(), Some(text[index..].to_owned())),
        None => (text.to_owned(), None),
    };
    Shape::Text {
        head,
        rest,
        markdown: looks_like_markdown(text).then(|| markdown(text)).flatten(),
    }
}

/// A line that starts a heading, a list item, a quote or a code fence, or a link or strong
/// text anywhere: Markdown a person wrote, not a sentence that happens to hold a `*`.
fn looks_like_markdown(text: &str) -> bool {
    let block = text.lines().any(|line| {
        let line = line.trim_start();
        line.starts_with("# ")
            || line.starts_with("## ")
            || line.starts_with("### ")
            || line.starts_with("- ")
            || line.starts_with("* ")
            || line.starts_with("> ")
            || line.starts_with("```")
            || line.split_once(". ").is_some_and(|(number, _)| {
                !number.is_empty() && number.chars().all(|c| c.is_ascii_digit())
            })
    });
    block || text.contains("**") || text.contains("](http") || text.contains("](mailto:")
}

/// The Markdown of `text` as our blocks; `None` when it has more than [`MAX_BLOCKS`].
fn markdown(text: &str) -> Option<Vec<Block>> {
    let mut blocks = Vec::new();
    let mut spans: Vec<Span> = Vec::new();
    let mut code: Option<String> = None;
    // The innermost open inline style, and a link being read (its target, its text).
    let mut strong = 0usize;
    let mut emphasis = 0usize;
    let mut link: Option<(String, String)> = None;
    let mut in_quote = 0usize;
    let mut in_item = 0usize;
    let push_text = |spans: &mut Vec<Span>, text: String, strong: usize, emphasis: usize| {
        if text.is_empty() {
            return;
        }
        spans.push(if strong > 0 {
            Span::Strong(text)
        } else if emphasis > 0 {
            Span::Emphasis(text)
        } else {
            Span::Text(text)
        });
    };
    let flush = |blocks: &mut Vec<Block>, spans: &mut Vec<Span>, kind: &'static str| {
        if !spans.is_empty() {
            blocks.push(Block::of(kind, std::mem::take(spans)));
        }
    };
    let kind = |in_item: usize, in_quote: usize| {
        if in_item > 0 {
            "item"
        } else if in_quote > 0 {
            "quote"
        } else {
            "paragraph"
        }
    };
    for event in Parser::new_ext(text, Options::ENABLE_STRIKETHROUGH) {
        if blocks.len() > MAX_BLOCKS {
            return None;
        }
        match event {
            Event::Start(Tag::CodeBlock(_)) => code = Some(String::new()),
            Event::End(TagEnd::CodeBlock) => {
                blocks.push(Block {
                    kind: "code",
                    spans: Vec::new(),
                    code: Some(code.take().unwrap_or_default()),
                });
            }
            Event::Text(text) if code.is_some() => {
                if let Some(code) = code.as_mut() {
                    code.push_str(&text);
                }
            }
            Event::Start(Tag::Heading { .. }) => {
                flush(&mut blocks, &mut spans, kind(in_item, in_quote))
            }
            Event::End(TagEnd::Heading(_)) => flush(&mut blocks, &mut spans, "heading"),
            Event::Start(Tag::Item) => {
                flush(&mut blocks, &mut spans, kind(in_item, in_quote));
                in_item += 1;
            }
            Event::End(TagEnd::Item) => {
                flush(&mut blocks, &mut spans, "item");
                in_item = in_item.saturating_sub(1);
            }
            Event::Start(Tag::BlockQuote(_)) => in_quote += 1,
            Event::End(TagEnd::BlockQuote(_)) => {
                flush(&mut blocks, &mut spans, "quote");
                in_quote = in_quote.saturating_sub(1);
            }
            Event::End(TagEnd::Paragraph) => {
                flush(&mut blocks, &mut spans, kind(in_item, in_quote))
            }
            Event::Start(Tag::Strong) => strong += 1,
            Event::End(TagEnd::Strong) => strong = strong.saturating_sub(1),
            Event::Start(Tag::Emphasis) => emphasis += 1,
            Event::End(TagEnd::Emphasis) => emphasis = emphasis.saturating_sub(1),
            Event::Start(Tag::Link { dest_url, .. }) => {
                link = Some((dest_url.to_string(), String::new()))
            }
            Event::End(TagEnd::Link) => {
                if let Some((href, text)) = link.take() {
                    if allowed_link(&href) {
                        spans.push(Span::Link { text, href });
                    } else {
                        spans.push(Span::Text(format!("{text} ({href})")));
                    }
                }
            }
            // An image is never fetched: its description and address read as text.
            Event::Start(Tag::Image { dest_url, .. }) => {
                link = Some((format!("image: {dest_url}"), String::new()));
            }
            Event::End(TagEnd::Image) => {
                if let Some((href, text)) = link.take() {
                    spans.push(Span::Text(format!("[{text}] ({href})")));
                }
            }
            Event::Code(text) => match link.as_mut() {
                Some((_, link_text)) => link_text.push_str(&text),
                None => spans.push(Span::Code(text.to_string())),
            },
            // Raw HTML stays text, escaped like every value.
            Event::Text(text) | Event::Html(text) | Event::InlineHtml(text) => {
                match link.as_mut() {
                    Some((_, link_text)) => link_text.push_str(&text),
                    None => push_text(&mut spans, text.to_string(), strong, emphasis),
                }
            }
            Event::SoftBreak | Event::HardBreak => match link.as_mut() {
                Some((_, link_text)) => link_text.push(' '),
                None => push_text(&mut spans, " ".to_owned(), 0, 0),
            },
            Event::Rule => flush(&mut blocks, &mut spans, kind(in_item, in_quote)),
            _ => {}
        }
    }
    flush(&mut blocks, &mut spans, kind(in_item, in_quote));
    Some(blocks)
}

/// Links go only where a person can see where they go.
fn allowed_link(href: &str) -> bool {
    let lower = href.trim().to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("mailto:")
}

/// A value in one line of a field or a cell: a text as it is, anything else as compact JSON,
/// cut at [`CELL_CHARS`].
fn cell(value: &Value) -> String {
    let text = match value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    if text.chars().count() > CELL_CHARS {
        let mut cut: String = text.chars().take(CELL_CHARS).collect();
        cut.push('…');
        cut
    } else {
        text
    }
}

/// A list of objects as a table: the keys in the order first seen, at most [`MAX_COLUMNS`];
/// `None` when an item is no object or the list is empty or too long.
fn table(items: &[Value]) -> Option<Shape> {
    if items.is_empty() || items.len() > MAX_ROWS {
        return None;
    }
    let mut columns: Vec<String> = Vec::new();
    for item in items {
        let Value::Object(fields) = item else {
            return None;
        };
        for key in fields.keys() {
            if !columns.contains(key) {
                columns.push(key.clone());
            }
        }
    }
    if columns.is_empty() || columns.len() > MAX_COLUMNS {
        return None;
    }
    let rows = items
        .iter()
        .map(|item| {
            columns
                .iter()
                .map(|column| item.get(column).map(cell).unwrap_or_default())
                .collect()
        })
        .collect();
    Some(Shape::Table { columns, rows })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn text_reads_as_text_and_markdown_only_when_it_looks_like_it() {
        let plain = ValueView::of(&json!("Line one\nline two, 3 * 4"));
        assert!(matches!(
            plain.shape,
            Shape::Text { ref head, markdown: None, .. } if head == "Line one\nline two, 3 * 4"
        ));
        let Shape::Text {
            markdown: Some(blocks),
            ..
        } = ValueView::of(&json!(
            "# Digest\n\n- v1.2 **shipped**\n- see [notes](https://example.com/n)"
        ))
        .shape
        else {
            panic!("Markdown")
        };
        assert_eq!(
            blocks,
            vec![
                Block::of("heading", vec![Span::Text("Digest".into())]),
                Block::of(
                    "item",
                    vec![Span::Text("v1.2 ".into()), Span::Strong("shipped".into())]
                ),
                Block::of(
                    "item",
                    vec![
                        Span::Text("see ".into()),
                        Span::Link {
                            text: "notes".into(),
                            href: "https://example.com/n".into()
                        }
                    ]
                ),
            ]
        );
    }

    #[test]
    fn markdown_never_carries_html_a_script_link_or_a_remote_image() {
        let Shape::Text {
            markdown: Some(blocks),
            ..
        } = ValueView::of(&json!(
            "# Hi\n\n<script>alert(1)</script>\n\n- [x](javascript:alert(1)) ![t](https://evil.example/p.png) <b>b</b>"
        ))
        .shape
        else {
            panic!("Markdown")
        };
        let shown = format!("{blocks:?}");
        assert!(!shown.contains("Link"), "{shown}");
        assert!(
            shown.contains("<script>"),
            "raw HTML stays text, to be escaped: {shown}"
        );
        assert!(
            shown.contains("[t] (image: https://evil.example/p.png)"),
            "{shown}"
        );
        assert!(shown.contains("x (javascript:alert(1))"), "{shown}");
    }

    #[test]
    fn records_read_as_a_table_and_objects_as_fields() {
        let table = ValueView::of(&json!([{"customer": "A", "cents": 5}, {"customer": "B"}]));
        assert_eq!(
            table.shape,
            Shape::Table {
                columns: vec!["cents".into(), "customer".into()],
                rows: vec![
                    vec!["5".into(), "A".into()],
                    vec![String::new(), "B".into()]
                ]
            }
        );
        let fields = ValueView::of(&json!({"report": "two\nlines", "n": [1, 2]}));
        assert_eq!(
            fields.shape,
            Shape::Fields(vec![
                ("n".into(), "[1,2]".into()),
                ("report".into(), "two\nlines".into())
            ])
        );
        assert_eq!(ValueView::of(&json!([1, 2])).shape, Shape::Json);
    }

    #[test]
    fn long_text_is_folded_after_its_first_lines() {
        let long: String = (1..=100).map(|line| format!("line {line}\n")).collect();
        let Shape::Text { head, rest, .. } = ValueView::of(&json!(long)).shape else {
            panic!("text")
        };
        assert_eq!(head.lines().count(), 25);
        assert!(rest.unwrap().contains("line 100"));
    }
}
