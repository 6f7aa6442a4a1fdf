//! The forms of a value in common text formats a program writes it in by accident: HTML and
//! XML escaping, CSV and shell quoting, JSON inside JSON, UTF-16. Each is added only where it
//! differs from the raw value (the caller deduplicates), so a token of letters and digits costs
//! two forms (its UTF-16 encodings) and nothing else.

use zeroize::Zeroizing;

use crate::patterns::{HexCase, JsonEscaping, Pattern, SlashForm, json_escape};

/// How a markup escaper writes `"`.
#[derive(Clone, Copy)]
enum DoubleQuote {
    Kept,
    Named,
    Decimal,
}

/// How a markup escaper writes `'`.
#[derive(Clone, Copy)]
enum SingleQuote {
    Kept,
    Hex,
    Decimal,
    Named,
}

/// The escapers' variants: Python's `html.escape` (`&quot;`, `&#x27;`), `html.escape(quote=
/// False)` and `xml.sax.saxutils.escape` (neither quote), `quoteattr` (`&quot;` alone),
/// MarkupSafe and Jinja (`&#34;`, `&#39;`), and XML's `&apos;`.
const MARKUP: [(DoubleQuote, SingleQuote); 6] = [
    (DoubleQuote::Named, SingleQuote::Hex),
    (DoubleQuote::Kept, SingleQuote::Kept),
    (DoubleQuote::Named, SingleQuote::Kept),
    (DoubleQuote::Decimal, SingleQuote::Decimal),
    (DoubleQuote::Named, SingleQuote::Named),
    (DoubleQuote::Named, SingleQuote::Decimal),
];

/// HTML and XML escaping of `&`, `<`, `>` and the quotes; `quoteattr` also writes a line break
/// or tab as a character reference.
pub(crate) fn push_markup_forms(value: &str, patterns: &mut Vec<Pattern>) {
    if !value.contains(['&', '<', '>', '"', '\'']) {
        return;
    }
    for (double, single) in MARKUP {
        patterns.push(Zeroizing::new(
            markup_escape(value, double, single, false).into_bytes(),
        ));
    }
    patterns.push(Zeroizing::new(decimal_markup_escape(value).into_bytes()));
    if value.contains(['\n', '\r', '\t']) {
        patterns.push(Zeroizing::new(
            markup_escape(value, DoubleQuote::Named, SingleQuote::Kept, true).into_bytes(),
        ));
    }
}

/// askama's escaping (the console's templates, so the served scrub of a page sees a value as the
/// page carries it): each of the five characters as a decimal reference, `&#38;`, `&#60;`,
/// `&#62;`, `&#34;`, `&#39;`.
fn decimal_markup_escape(value: &str) -> String {
    let mut escaped = String::with_capacity(value.len() + 16);
    for character in value.chars() {
        match character {
            '&' => escaped.push_str("&#38;"),
            '<' => escaped.push_str("&#60;"),
            '>' => escaped.push_str("&#62;"),
            '"' => escaped.push_str("&#34;"),
            '\'' => escaped.push_str("&#39;"),
            other => escaped.push(other),
        }
    }
    escaped
}

fn markup_escape(
    value: &str,
    double: DoubleQuote,
    single: SingleQuote,
    whitespace: bool,
) -> String {
    let mut escaped = String::with_capacity(value.len() + 16);
    for character in value.chars() {
        match character {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str(match double {
                DoubleQuote::Kept => "\"",
                DoubleQuote::Named => "&quot;",
                DoubleQuote::Decimal => "&#34;",
            }),
            '\'' => escaped.push_str(match single {
                SingleQuote::Kept => "'",
                SingleQuote::Hex => "&#x27;",
                SingleQuote::Decimal => "&#39;",
                SingleQuote::Named => "&apos;",
            }),
            '\n' if whitespace => escaped.push_str("&#10;"),
            '\r' if whitespace => escaped.push_str("&#13;"),
            '\t' if whitespace => escaped.push_str("&#9;"),
            other => escaped.push(other),
        }
    }
    escaped
}

/// CSV's doubled quote, the shell's single quoting (`shlex.quote`: `'` becomes `'"'"'`) and
/// double quoting (`\` before `\ " $` and the backtick), and JSON escaping applied twice (a JSON
/// document stored as a string inside another).
pub(crate) fn push_quoting_forms(value: &str, patterns: &mut Vec<Pattern>) {
    if value.contains('"') {
        patterns.push(Zeroizing::new(value.replace('"', "\"\"").into_bytes()));
    }
    if value.contains('\'') {
        patterns.push(Zeroizing::new(value.replace('\'', "'\"'\"'").into_bytes()));
    }
    if value.contains(['\\', '"', '$', '`']) {
        let mut quoted = String::with_capacity(value.len() + 8);
        for character in value.chars() {
            if matches!(character, '\\' | '"' | '$' | '`') {
                quoted.push('\\');
            }
            quoted.push(character);
        }
        patterns.push(Zeroizing::new(quoted.into_bytes()));
    }
    if value.contains(['"', '\\'])
        || crate::patterns::go_escapes(value)
        || value.chars().any(|c| c.is_control() || !c.is_ascii())
    {
        // The inner document as serde_json or Go writes it, or as Python's default
        // `ensure_ascii` does (`\u00e9`); the outer one escapes that document's backslashes.
        let go = crate::patterns::go_escapes(value).then_some(JsonEscaping::Go);
        for inner in [
            Some(JsonEscaping::Minimal),
            Some(JsonEscaping::AsciiOnly(HexCase::Lower)),
            Some(JsonEscaping::AsciiOnly(HexCase::Upper)),
            go,
        ]
        .into_iter()
        .flatten()
        {
            let once = Zeroizing::new(json_escape(value, inner, SlashForm::Kept));
            for slash_form in [SlashForm::Kept, SlashForm::Encoded] {
                patterns.push(Zeroizing::new(
                    json_escape(&once, JsonEscaping::Minimal, slash_form).into_bytes(),
                ));
            }
        }
    }
}

/// UTF-16, little- and big-endian (Windows tools, Excel's "Unicode text", Python's `utf-16`,
/// whose BOM comes before the value and so needs no form of its own).
pub(crate) fn push_utf16_forms(value: &str, patterns: &mut Vec<Pattern>) {
    let units: Vec<u16> = value.encode_utf16().collect();
    let mut little = Zeroizing::new(Vec::with_capacity(units.len() * 2));
    let mut big = Zeroizing::new(Vec::with_capacity(units.len() * 2));
    for unit in units {
        little.extend_from_slice(&unit.to_le_bytes());
        big.extend_from_slice(&unit.to_be_bytes());
    }
    patterns.push(little);
    patterns.push(big);
}
