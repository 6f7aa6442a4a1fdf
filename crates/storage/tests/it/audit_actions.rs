//! The audit log's actions are one closed vocabulary whose stored names never change
//! (issue 37): every name a version of stepward stored (the fixture) is read as its action,
//! and every action's names are in the fixture, so a renamed or forgotten name fails here.

use std::collections::BTreeSet;

use storage::AuditAction;

/// The fixture's names, without comments.
fn stored_names() -> Vec<&'static str> {
    include_str!("../fixtures/audit_actions.txt")
        .lines()
        .map(|line| line.split('#').next().unwrap_or_default().trim())
        .filter(|name| !name.is_empty())
        .collect()
}

#[test]
fn g25_every_action_name_ever_stored_is_read_as_its_action() {
    let stored = stored_names();
    assert!(stored.len() > 40, "{stored:?}");
    for name in &stored {
        let action = AuditAction::parse(name)
            .unwrap_or_else(|| panic!("`{name}` was stored by an earlier version and is not read"));
        assert!(
            action.as_str() == *name || action.legacy_names().contains(name),
            "`{name}` is read as {action}, whose names do not include it"
        );
    }
    let fixture: BTreeSet<&str> = stored.iter().copied().collect();
    assert_eq!(
        fixture.len(),
        stored.len(),
        "a name is twice in the fixture"
    );
    for action in AuditAction::ALL {
        for name in std::iter::once(action.as_str()).chain(action.legacy_names().iter().copied()) {
            assert!(
                fixture.contains(name),
                "{action:?} is stored as `{name}`, which the fixture does not hold: a stored name \
                 is forever, add it there"
            );
        }
    }
}

#[test]
fn an_action_is_written_by_one_name_and_an_unknown_name_is_none() {
    for action in AuditAction::ALL {
        assert_eq!(AuditAction::parse(action.as_str()), Some(*action));
        assert!(
            action.legacy_names().len() <= 1,
            "the store filters by one older name"
        );
        assert_eq!(action.to_string(), action.as_str());
    }
    let written: BTreeSet<&str> = AuditAction::ALL
        .iter()
        .map(|action| action.as_str())
        .collect();
    assert_eq!(written.len(), AuditAction::ALL.len());
    assert_eq!(AuditAction::parse("key.create"), None);
    assert_eq!(AuditAction::parse(""), None);
}
