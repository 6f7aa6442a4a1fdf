//! `notify:`: who is mailed when a run of the workflow waits at a gate, and whether they are
//! reminded (issue 41).
//!
//! ```yaml
//! notify: [ada@example.com, bo@example.com]       # only these people of the account
//! notify:
//!   people: [ada@example.com]                      # optional: everyone who may decide
//!   remind_after: 24h                              # optional: at most 3 reminders
//! ```
//!
//! Without `notify:` every person of the account who may decide a gate is mailed, once. The
//! parser holds each address to the shape of one; whether it is a person of the account whose
//! role decides is the account's check ([`crate::parse_workflow_for_account`]), made where a
//! workflow is saved or started and again when a run parks.

use std::time::Duration;

use crate::diagnostic::{Diagnostics, Position};
use crate::lower::{fields, string, string_list};
use crate::yaml::{Node, NodeValue, Resolved};

/// The keys of `notify:` written as a mapping; the JSON Schema names exactly these.
pub(crate) const NOTIFY_KEYS: &[&str] = &["people", "remind_after"];
/// Most addresses `notify:` may name.
pub const MAX_NOTIFY_PEOPLE: usize = 50;
/// The shortest `remind_after`: reminders are at least an hour apart.
pub const MIN_REMIND_AFTER: Duration = Duration::from_secs(60 * 60);
/// The longest `remind_after`.
pub const MAX_REMIND_AFTER: Duration = Duration::from_secs(30 * 24 * 60 * 60);
/// Most reminders after the first mail of one wait at a gate.
pub const MAX_REMINDERS: u32 = 3;
/// Longest e-mail address (RFC 5321's path limit).
const MAX_ADDRESS_BYTES: usize = 254;

/// Who is mailed when a run waits at a gate. The default (no `notify:`): everyone of the
/// account who may decide, with no reminder.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Notify {
    pub(crate) people: Vec<String>,
    pub(crate) remind_after: Option<Duration>,
}

impl Notify {
    /// The addresses named, lower-cased, in file order; empty means everyone of the account
    /// who may decide.
    pub fn people(&self) -> &[String] {
        &self.people
    }

    /// How long after a mail a gate still waiting is mailed again (at most
    /// [`MAX_REMINDERS`] times); `None`: never.
    pub fn remind_after(&self) -> Option<Duration> {
        self.remind_after
    }
}

pub(crate) fn lower_notify(node: &Node, diagnostics: &mut Diagnostics) -> Option<Notify> {
    let before = diagnostics.len();
    let mut notify = Notify::default();
    match &node.value {
        NodeValue::Sequence(_) => notify.people = lower_people(node, diagnostics),
        NodeValue::Mapping(_) => {
            let fields = fields(node, "`notify`", NOTIFY_KEYS, diagnostics)?;
            if let Some(people) = fields.get("people") {
                notify.people = lower_people(people, diagnostics);
            }
            if let Some(after) = fields.get("remind_after") {
                notify.remind_after = lower_remind_after(after, diagnostics);
            }
        }
        _ => diagnostics.report(
            node.position,
            "invalid-notify",
            format!(
                "`notify` must be a list of addresses or a mapping, found {}",
                node.describe()
            ),
            "write `notify: [ada@example.com]`, or `notify:` with `people:` and \
             `remind_after: 24h` under it",
        ),
    }
    (diagnostics.len() == before).then_some(notify)
}

/// The addresses of `notify:` as written, with their positions, whichever form it takes: what
/// the account's check walks.
pub(crate) fn written_people(notify: &Node) -> Vec<(&str, Position)> {
    let people = match &notify.value {
        NodeValue::Mapping(entries) => entries
            .iter()
            .find(|entry| entry.key.scalar_text() == Some("people"))
            .map(|entry| &entry.value),
        _ => Some(notify),
    };
    match people.map(|node| &node.value) {
        Some(NodeValue::Sequence(items)) => items
            .iter()
            .filter_map(|item| item.scalar_text().map(|text| (text, item.position)))
            .collect(),
        _ => Vec::new(),
    }
}

fn lower_people(node: &Node, diagnostics: &mut Diagnostics) -> Vec<String> {
    let written = string_list(node, "`notify` people", diagnostics);
    if written.is_empty() && matches!(node.value, NodeValue::Sequence(_)) {
        diagnostics.report(
            node.position,
            "empty-notify",
            "`notify` names nobody",
            "name the people to mail, or leave `people` out to mail everyone of the account \
             who may decide",
        );
        return Vec::new();
    }
    if written.len() > MAX_NOTIFY_PEOPLE {
        diagnostics.report(
            node.position,
            "too-many-notify-people",
            format!(
                "`notify` names {} people; at most {MAX_NOTIFY_PEOPLE}",
                written.len()
            ),
            "leave `people` out to mail everyone of the account who may decide",
        );
        return Vec::new();
    }
    let mut people: Vec<String> = Vec::with_capacity(written.len());
    for (address, at) in written {
        let lowered = address.trim().to_lowercase();
        if !looks_like_address(&lowered) {
            diagnostics.report(
                at,
                "invalid-notify-address",
                format!("`{address}` is not an e-mail address"),
                "write the address a person of the account signs in with, like \
                 `ada@example.com`",
            );
        } else if people.contains(&lowered) {
            diagnostics.report(
                at,
                "duplicate-notify-address",
                format!("`{address}` is named twice in `notify`"),
                "name each person once",
            );
        } else {
            people.push(lowered);
        }
    }
    people
}

/// One `@` with something on each side, no white space or control character, and within the
/// length a mail server accepts. The account's check then requires a person with exactly it.
fn looks_like_address(text: &str) -> bool {
    let Some((local, domain)) = text.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && !domain.is_empty()
        && !domain.contains('@')
        && text.len() <= MAX_ADDRESS_BYTES
        && !text
            .chars()
            .any(|character| character.is_whitespace() || character.is_control())
        && !text.contains(['<', '>', ',', ';', '"'])
}

fn lower_remind_after(node: &Node, diagnostics: &mut Diagnostics) -> Option<Duration> {
    let text = match &node.value {
        NodeValue::Scalar(scalar) => match scalar.resolve() {
            Resolved::String(text) => Some(text),
            _ => None,
        },
        _ => None,
    };
    let help = "write a whole number of minutes, hours or days, like `90m`, `24h` or `2d`: at \
                least 1h and at most 30d";
    let Some(text) = text else {
        string(node, "`remind_after`", diagnostics);
        return None;
    };
    let Some(after) = parse_duration(text) else {
        diagnostics.report(
            node.position,
            "invalid-remind-after",
            format!("`remind_after: {text}` is not a duration"),
            help,
        );
        return None;
    };
    if !(MIN_REMIND_AFTER..=MAX_REMIND_AFTER).contains(&after) {
        diagnostics.report(
            node.position,
            "remind-after-out-of-range",
            format!("`remind_after: {text}` is outside 1h to 30d"),
            format!("reminders are at least an hour apart and at most {MAX_REMINDERS}; {help}"),
        );
        return None;
    }
    Some(after)
}

/// `90m`, `24h`, `2d`: a whole number and one unit.
fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let split = text.find(|character: char| !character.is_ascii_digit())?;
    let (number, unit) = text.split_at(split);
    if number.is_empty() || number.len() > 6 {
        return None;
    }
    let number: u64 = number.parse().ok()?;
    let unit_seconds = match unit {
        "m" => 60,
        "h" => 60 * 60,
        "d" => 24 * 60 * 60,
        _ => return None,
    };
    Some(Duration::from_secs(number.checked_mul(unit_seconds)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_a_number_and_one_unit() {
        assert_eq!(parse_duration("90m"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_duration("24h"), Some(Duration::from_secs(86_400)));
        assert_eq!(parse_duration("2d"), Some(Duration::from_secs(172_800)));
        for bad in ["", "h", "24", "24 h", "1.5h", "-1h", "24hours", "9999999h"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn addresses_have_one_at_and_no_space() {
        assert!(looks_like_address("ada@example.com"));
        for bad in [
            "ada",
            "@example.com",
            "ada@",
            "a@b@c",
            "a b@c",
            "<a@b>",
            "a@b,c@d",
        ] {
            assert!(!looks_like_address(bad), "{bad}");
        }
    }
}
