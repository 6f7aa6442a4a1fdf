//! Confinement of requested paths and "did you mean" suggestions (G22).

use std::path::Path;

use workspace::{RefusalReason, RelPath, confine, confine_suggesting, did_you_mean};

const ROOT: &str = "/work";

#[test]
fn g22_relative_paths_are_normalised() {
    for (requested, expected) in [
        ("a.md", "a.md"),
        ("./agents//x/./a.md", "agents/x/a.md"),
        ("agents/x/", "agents/x"),
        ("notes/ünïcode.txt", "notes/ünïcode.txt"),
    ] {
        let path = confine(Path::new(ROOT), requested).unwrap();
        assert_eq!(path.as_str(), expected, "for {requested:?}");
    }
}

#[test]
fn g22_refusals_name_their_reason() {
    let long_component = "x".repeat(256);
    let deep = vec!["d"; 65].join("/");
    let long_path = vec!["abcdefgh"; 500].join("/");
    let cases: Vec<(&str, RefusalReason)> = vec![
        ("", RefusalReason::Empty),
        (".", RefusalReason::Empty),
        ("./", RefusalReason::Empty),
        ("/etc/passwd", RefusalReason::OutsideFolder),
        ("/work/a.md", RefusalReason::Absolute),
        ("../x", RefusalReason::Traversal),
        ("a/../b", RefusalReason::Traversal),
        ("a/..", RefusalReason::Traversal),
        ("a\0b", RefusalReason::Nul),
        (
            &long_component,
            RefusalReason::ComponentTooLong {
                bytes: 256,
                max: 255,
            },
        ),
        (&deep, RefusalReason::TooDeep { depth: 65, max: 64 }),
        (
            &long_path,
            RefusalReason::TooLong {
                bytes: long_path.len(),
                max: 4096,
            },
        ),
    ];
    for (requested, reason) in cases {
        let refusal = confine(Path::new(ROOT), requested).unwrap_err();
        assert_eq!(refusal.reason, reason, "for {requested:?}");
        assert_eq!(refusal.requested, requested);
        assert!(!refusal.to_string().is_empty());
    }
}

#[test]
fn g22_did_you_mean_strips_absolute_and_climbing_prefixes() {
    let listing = ["report.txt", "agents/x/a.md", "shared/data/prices.csv"];
    let cases = [
        ("/tmp/report.txt", Some("report.txt")),
        ("../agents/x/a.md", Some("agents/x/a.md")),
        ("/work/agents/x/a.md", Some("agents/x/a.md")),
        (
            "../../shared/data/prices.csv",
            Some("shared/data/prices.csv"),
        ),
        ("/etc/shadow", None),
    ];
    for (requested, expected) in cases {
        let refusal = confine_suggesting(Path::new(ROOT), requested, &listing).unwrap_err();
        assert_eq!(
            refusal.did_you_mean.as_deref(),
            expected,
            "for {requested:?}"
        );
    }
}

#[test]
fn g22_did_you_mean_without_listing_only_names_plainly_inside_paths() {
    let inside = confine(Path::new(ROOT), "/work/agents/x/a.md").unwrap_err();
    assert_eq!(inside.did_you_mean.as_deref(), Some("agents/x/a.md"));
    let climbing = confine(Path::new(ROOT), "../agents/x/a.md").unwrap_err();
    assert_eq!(climbing.did_you_mean.as_deref(), Some("agents/x/a.md"));
    let outside = confine(Path::new(ROOT), "/tmp/report.txt").unwrap_err();
    assert_eq!(outside.did_you_mean, None);
    assert!(outside.to_string().contains("outside the workspace folder"));
}

#[test]
fn g22_did_you_mean_uses_edit_distance_for_near_misses() {
    let listing = ["report.txt", "agents/x/AGENT.md", "workflows/refund.yaml"];
    assert_eq!(
        did_you_mean("reprot.txt", &listing).as_deref(),
        Some("report.txt")
    );
    assert_eq!(
        did_you_mean("workflows/refunds.yaml", &listing).as_deref(),
        Some("workflows/refund.yaml")
    );
    assert_eq!(
        did_you_mean("agent.md", &listing).as_deref(),
        Some("agents/x/AGENT.md")
    );
    assert_eq!(did_you_mean("completely-different", &listing), None);
}

#[test]
fn g22_join_refuses_names_that_are_not_single_components() {
    let base = RelPath::parse("agents").unwrap();
    assert_eq!(base.join("x").unwrap().as_str(), "agents/x");
    for bad in ["", ".", "..", "a/b"] {
        let refusal = base.join(bad).unwrap_err();
        assert!(
            matches!(refusal.reason, RefusalReason::BadComponent { .. }),
            "for {bad:?}"
        );
    }
}

proptest::proptest! {
    /// Whatever is requested, an accepted path is relative, has no `.` or `..` component, and
    /// parses back to itself.
    #[test]
    fn g22_accepted_paths_are_always_confined(requested in "[a-z./\\\\\u{0}-\u{7f}]{0,40}") {
        if let Ok(path) = confine(Path::new(ROOT), &requested) {
            proptest::prop_assert!(!path.as_str().starts_with('/'));
            proptest::prop_assert!(path.components().all(|part| !part.is_empty() && part != "." && part != ".."));
            proptest::prop_assert!(!path.as_str().contains('\0'));
            proptest::prop_assert_eq!(RelPath::parse(path.as_str()).unwrap(), path);
        }
    }
}

/// A name of the workspace never starts a new line or drives a terminal (sandbox review 3,
/// F5): C0 and C1 controls (line breaks, escape sequences, DEL) and the bidirectional
/// formatting characters are refused wherever a path is made, so no copy-back, file tool,
/// upload or listing can carry one; every other character stays allowed.
#[test]
fn g12_names_with_control_or_bidi_characters_are_refused() {
    for requested in [
        "nl\nFAKE: all files accepted.txt",
        "esc\u{1b}[2J\u{1b}]0;pwned\u{7}.txt",
        "cr\rOVERWRITE.txt",
        "tab\there.txt",
        "del\u{7f}.txt",
        "next-line\u{85}.txt",
        "csi\u{9b}2J.txt",
        "rtl\u{202e}txt.exe",
        "isolate\u{2066}x\u{2069}.txt",
        "mark\u{200f}.txt",
        "arabic-mark\u{61c}.txt",
        "folder\nname/inside.txt",
    ] {
        let refusal = RelPath::parse(requested).unwrap_err();
        assert!(
            matches!(refusal.reason, RefusalReason::ControlCharacter { .. }),
            "{requested:?}: {:?}",
            refusal.reason
        );
        let said = refusal.reason.to_string();
        assert!(
            said.contains("U+"),
            "the reason names the character: {said}"
        );
        assert!(!said.chars().any(char::is_control), "{said:?}");
    }
    for allowed in [
        "été.txt",
        "日本語/メモ.md",
        "emoji-😀.txt",
        "a b.txt",
        "zwj\u{200d}.txt",
    ] {
        assert!(RelPath::parse(allowed).is_ok(), "{allowed:?}");
    }
}

/// agents review, finding 10: `Tree::write` named its temporary file `.NAME.stepward-PID`,
/// past the 255-byte name limit for names of 236 bytes and more, so those writes failed.
#[test]
fn g22_a_file_with_the_longest_name_can_be_written() {
    let dir = tempfile::tempdir().unwrap();
    let tree = workspace::Tree::open(dir.path()).unwrap();
    for length in [236, 250, 255] {
        let name = "n".repeat(length);
        let path = RelPath::parse(&name).unwrap();
        tree.write(&path, b"written")
            .unwrap_or_else(|error| panic!("{length}: {error}"));
        assert_eq!(std::fs::read(dir.path().join(&name)).unwrap(), b"written");
    }
}
