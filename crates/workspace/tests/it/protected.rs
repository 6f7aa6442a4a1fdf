//! Protected entries: the secrets file, the journal, knowledge indexes (G22, G12).

use workspace::{ProtectedKind, RelPath, is_protected};

fn kind_of(path: &str) -> Option<ProtectedKind> {
    is_protected(&RelPath::parse(path).unwrap_or_else(|refusal| panic!("{refusal}")))
}

#[test]
fn g22_protected_entries_are_recognised_exactly() {
    assert_eq!(kind_of(".secrets"), Some(ProtectedKind::SecretsFile));
    assert_eq!(kind_of(".journal"), Some(ProtectedKind::Journal));
    assert_eq!(
        kind_of(".journal/run-1/0001.json"),
        Some(ProtectedKind::Journal)
    );
    assert_eq!(
        kind_of("knowledge/manuals/index"),
        Some(ProtectedKind::KnowledgeIndex)
    );
    assert_eq!(
        kind_of("knowledge/manuals/index/part-0.bin"),
        Some(ProtectedKind::KnowledgeIndex)
    );
    assert_eq!(
        kind_of("agents/x/.secrets"),
        Some(ProtectedKind::SecretsFile)
    );
}

#[test]
fn g22_case_and_unicode_variants_are_protected_too() {
    for variant in [
        ".Secrets",
        ".SECRETS",
        ".JOURNAL/x",
        "Knowledge/m/INDEX/a",
        ".secrets.",
        ".secrets ",
        ".sec\u{200B}rets",
        "\u{FF0E}secrets",
        ".ｓｅｃｒｅｔｓ",
    ] {
        assert!(kind_of(variant).is_some(), "{variant:?} must be protected");
    }
}

#[test]
fn g22_ordinary_paths_are_not_protected() {
    for path in [
        "secrets",
        ".secrets-example.md",
        "journal/.x",
        "knowledge/manuals/notes.md",
        "knowledge/index",
        "knowledge/manuals/indexes/a",
        "agents/x/AGENT.md",
    ] {
        assert_eq!(kind_of(path), None, "{path:?} must not be protected");
    }
}
