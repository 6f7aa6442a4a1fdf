//! Copy-back through a real sandbox run (G12): what a step leaves in /work goes through the
//! filter; the host folder itself is never written.

use std::collections::BTreeSet;
use std::fs;
use std::sync::Arc;

use sandbox::copyback::{RefusalReason, SecretScreen};
use serde_json::json;

use crate::hostile::support::{Filter, Probe, report};

const SECRET: &str = "sk-live-hostile-0123456789";

/// Knows the test secret plainly and in base64, as the redactor's screen would.
struct KnowsTheSecret;

impl SecretScreen for KnowsTheSecret {
    fn holds_secret(&self, content: &[u8]) -> bool {
        // base64 of SECRET, computed once by hand: c2stbGl2ZS1ob3N0aWxlLTAxMjM0NTY3ODk=
        let encoded: &[u8] = b"c2stbGl2ZS1ob3N0aWxlLTAxMjM0NTY3ODk";
        [SECRET.as_bytes(), encoded].iter().any(|needle| {
            content
                .windows(needle.len())
                .any(|window| window == *needle)
        })
    }
}

#[test]
fn g12_links_devices_oversize_traversal_protected_and_secrets_do_not_come_back_needs_root() {
    let holder = tempfile::tempdir().unwrap();
    let work = holder.path().join("agent");
    fs::create_dir(&work).unwrap();
    fs::write(work.join("existing.md"), b"existing").unwrap();
    fs::write(work.join(".secrets"), b"REAL=hidden").unwrap();
    let before = snapshot(&work);

    let oversize = sandbox::copyback::CopyBackPolicy::default().max_file_bytes + 1;
    let observation = Probe::new(
        include_str!("../../probes/copyback_escape.py"),
        json!({ "oversize_bytes": oversize }),
    )
    .env("PROBE_SECRET", SECRET)
    .work_dir(work.clone())
    .screen(Arc::new(KnowsTheSecret))
    .run(Filter::Enforced);
    let answer = report(&observation);
    assert_eq!(
        answer["saw_secrets_file"], false,
        "stage-in showed the sandbox .secrets"
    );
    assert_ne!(answer["traversal_relative"], "succeeded", "{answer}");
    assert_ne!(answer["traversal_absolute"], "succeeded", "{answer}");

    let copy_back = &observation.copy_back;
    let returned: BTreeSet<&str> = copy_back
        .files
        .iter()
        .map(|file| file.path.as_str())
        .collect();
    assert_eq!(
        returned,
        BTreeSet::from(["result.csv"]),
        "{:?}",
        copy_back.refusals
    );
    let refused = |path: &str| -> &RefusalReason {
        &copy_back
            .refusals
            .iter()
            .find(|refusal| refusal.path == path)
            .unwrap_or_else(|| panic!("no refusal for {path}: {:?}", copy_back.refusals))
            .reason
    };
    assert_eq!(refused("passwd-link"), &RefusalReason::SymlinkOrHardlink);
    assert_eq!(refused("root-link"), &RefusalReason::SymlinkOrHardlink);
    assert_eq!(refused("hard-link.txt"), &RefusalReason::SymlinkOrHardlink);
    assert_eq!(refused("original.txt"), &RefusalReason::SymlinkOrHardlink);
    assert_eq!(
        refused("a-fifo"),
        &RefusalReason::NotRegularFile { kind: "fifo" }
    );
    assert!(matches!(
        refused("oversize.bin"),
        RefusalReason::TooLarge { .. }
    ));
    assert!(matches!(
        refused(".secrets"),
        RefusalReason::ProtectedPath { .. }
    ));
    assert!(matches!(
        refused(".journal"),
        RefusalReason::ProtectedPath { .. }
    ));
    assert_eq!(refused("plain-secret.txt"), &RefusalReason::HoldsSecret);
    assert_eq!(refused("encoded-secret.txt"), &RefusalReason::HoldsSecret);
    if answer["setuid"] == "succeeded" {
        assert_eq!(refused("setuid-file"), &RefusalReason::SetIdBits);
    }
    assert_ne!(
        answer["device"], "succeeded",
        "mknod of a device worked in the sandbox"
    );

    // The host folder is untouched: results come back as data, never written in place.
    assert_eq!(snapshot(&work), before);
    assert!(!holder.path().join("escaped.txt").exists());
}

fn snapshot(folder: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut entries: Vec<(String, Vec<u8>)> = fs::read_dir(folder)
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            let contents = fs::read(entry.path()).unwrap_or_default();
            (entry.file_name().to_string_lossy().into_owned(), contents)
        })
        .collect();
    entries.sort();
    entries
}

/// sandbox review 3, F5: file names with line breaks, escape sequences, carriage returns and
/// bidi overrides were part of the step's revision; each is refused with its reason, and the
/// refusal names the file without the character itself.
#[test]
fn g12_names_with_control_or_bidi_characters_do_not_come_back_needs_root() {
    let holder = tempfile::tempdir().unwrap();
    let code = r#"
def main():
    names = ["nl\nFAKE: all files accepted.txt", "esc\x1b[2J\x1b]0;pwned\x07.txt",
             "cr\rOVERWRITE.txt", "rtl\u202etxt.exe", "c1\x85.txt", "plain.txt"]
    for name in names:
        with open("/work/" + name, "w") as handle:
            handle.write("x")
    import os
    os.mkdir("/work/dir\nname")
    with open("/work/dir\nname/inside.txt", "w") as handle:
        handle.write("y")
    return len(names)
"#;
    let observation = Probe::new(code, json!({}))
        .work_dir(holder.path().to_path_buf())
        .run(Filter::Enforced);
    report(&observation);
    let copy_back = &observation.copy_back;
    let returned: Vec<&str> = copy_back
        .files
        .iter()
        .map(|file| file.path.as_str())
        .collect();
    assert_eq!(returned, ["plain.txt"], "{:?}", copy_back.refusals);
    let bad_names: Vec<_> = copy_back
        .refusals
        .iter()
        .filter(|refusal| matches!(&refusal.reason, RefusalReason::BadName { detail } if detail.contains("U+")))
        .collect();
    assert_eq!(bad_names.len(), 6, "{:?}", copy_back.refusals);
    for refusal in &copy_back.refusals {
        assert!(
            !refusal.path.chars().any(workspace::is_forbidden_in_names),
            "a refusal's path holds the character: {:?}",
            refusal.path
        );
    }
}
