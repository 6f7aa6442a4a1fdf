//! The copy-back filter (G12), on hostile trees built directly in a temporary folder: each
//! rule is shown refusing what it must and letting through what it must.

// Test helpers unwrap like the tests they serve: a failure there is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};

use sandbox::copyback::{
    CopyBack, CopyBackPolicy, Manifest, RefusalReason, SecretScreen, collect, stage_in,
};
use workspace::{ProtectedKind, RelPath};

/// The test secret, and its base64 form: the screen knows both, as the redactor's would.
const SECRET: &[u8] = b"sk-live-0123456789abcdef";
const SECRET_BASE64: &[u8] = b"c2stbGl2ZS0wMTIzNDU2Nzg5YWJjZGVm";

struct KnowsTheTestSecret;

impl SecretScreen for KnowsTheTestSecret {
    fn holds_secret(&self, content: &[u8]) -> bool {
        [SECRET, SECRET_BASE64].iter().any(|needle| {
            content
                .windows(needle.len())
                .any(|window| window == *needle)
        })
    }
}

/// A workspace folder and an empty scratch folder, both removed on drop.
struct Tree {
    _root: tempfile::TempDir,
    workspace: std::path::PathBuf,
    scratch: std::path::PathBuf,
}

fn tree() -> Tree {
    let root = tempfile::tempdir().unwrap();
    let workspace = root.path().join("workspace");
    let scratch = root.path().join("scratch");
    fs::create_dir(&workspace).unwrap();
    fs::create_dir(&scratch).unwrap();
    fs::write(workspace.join("notes.md"), b"notes").unwrap();
    fs::create_dir_all(workspace.join("data/deep")).unwrap();
    fs::write(workspace.join("data/prices.csv"), b"a,b\n1,2\n").unwrap();
    fs::write(workspace.join("data/deep/old.txt"), b"old").unwrap();
    Tree {
        _root: root,
        workspace,
        scratch,
    }
}

fn current_owner() -> (u32, u32) {
    let metadata = fs::metadata("/proc/self").unwrap();
    (metadata.uid(), metadata.gid())
}

fn staged(tree: &Tree) -> Manifest {
    stage_in(
        &workspace::StepFiles::scratch_folder(tree.workspace.clone()),
        &tree.scratch,
        current_owner(),
    )
    .unwrap()
}

fn collect_default(tree: &Tree, manifest: &Manifest) -> CopyBack {
    collect(
        &tree.scratch,
        manifest,
        &CopyBackPolicy::default(),
        &KnowsTheTestSecret,
    )
    .unwrap()
}

fn returned_paths(copy_back: &CopyBack) -> BTreeSet<String> {
    copy_back
        .files
        .iter()
        .map(|file| file.path.to_string())
        .collect()
}

fn refusal_of<'a>(copy_back: &'a CopyBack, path: &str) -> &'a RefusalReason {
    &copy_back
        .refusals
        .iter()
        .find(|refusal| refusal.path == path)
        .unwrap_or_else(|| panic!("no refusal for {path}: {:?}", copy_back.refusals))
        .reason
}

#[test]
fn g12_staging_copies_files_and_folders_and_leaves_out_protected_entries_and_links() {
    let tree = tree();
    fs::write(tree.workspace.join(".secrets"), b"API_KEY=x").unwrap();
    fs::create_dir_all(tree.workspace.join(".journal/run-1")).unwrap();
    fs::write(tree.workspace.join(".journal/run-1/0001"), b"journal").unwrap();
    fs::create_dir_all(tree.workspace.join("knowledge/manuals/index")).unwrap();
    fs::write(tree.workspace.join("knowledge/manuals/index/i.bin"), b"i").unwrap();
    fs::write(tree.workspace.join("knowledge/manuals/page.md"), b"page").unwrap();
    symlink("/etc/passwd", tree.workspace.join("passwd-link")).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        tree.workspace.join("a-fifo"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();

    let manifest = staged(&tree);
    let staged_paths: BTreeSet<String> = manifest
        .files()
        .map(|entry| entry.path.to_string())
        .collect();
    let expected: BTreeSet<String> = [
        "data/deep/old.txt",
        "data/prices.csv",
        "knowledge/manuals/page.md",
        "notes.md",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    assert_eq!(staged_paths, expected);
    assert!(!tree.scratch.join(".secrets").exists());
    assert!(!tree.scratch.join(".journal").exists());
    assert!(!tree.scratch.join("knowledge/manuals/index").exists());
    assert!(fs::symlink_metadata(tree.scratch.join("passwd-link")).is_err());
    assert_eq!(
        fs::read(tree.scratch.join("data/prices.csv")).unwrap(),
        b"a,b\n1,2\n"
    );

    let skipped: BTreeSet<String> = manifest
        .skipped()
        .iter()
        .map(|refusal| refusal.path.clone())
        .collect();
    for path in [
        ".secrets",
        ".journal",
        "knowledge/manuals/index",
        "passwd-link",
        "a-fifo",
    ] {
        assert!(
            skipped.contains(path),
            "{path} must be recorded as skipped: {skipped:?}"
        );
    }
    let entry = manifest.get(&RelPath::parse("notes.md").unwrap()).unwrap();
    assert_eq!(entry.size, 5);
}

#[test]
fn g12_staging_chowns_every_entry_to_the_sandbox_owner_needs_root() {
    let tree = tree();
    let owner = (64_123, 64_124);
    stage_in(
        &workspace::StepFiles::scratch_folder(tree.workspace.clone()),
        &tree.scratch,
        owner,
    )
    .unwrap();
    for path in ["", "notes.md", "data", "data/deep", "data/deep/old.txt"] {
        let metadata = fs::symlink_metadata(tree.scratch.join(path)).unwrap();
        assert_eq!((metadata.uid(), metadata.gid()), owner, "owner of {path:?}");
    }
}

/// Issue 39: a step's files need not be a host folder. Files held in memory are staged as
/// the working folder is (owned by the sandbox user, protected paths left out), and only what
/// the step changed comes back.
#[test]
fn g12_files_held_in_memory_stage_and_come_back_as_a_folder_does_needs_root() {
    let tree = tree();
    let owner = (64_123, 64_124);
    let path = |text: &str| RelPath::parse(text).unwrap();
    let files = workspace::StepFiles::in_memory([
        (path("notes.md"), b"notes".to_vec()),
        (path("data/deep/old.txt"), b"old".to_vec()),
        (path(".secrets"), b"never staged".to_vec()),
    ])
    .unwrap();
    let manifest = stage_in(&files, &tree.scratch, owner).unwrap();
    assert_eq!(manifest.len(), 2);
    for entry in ["", "notes.md", "data", "data/deep", "data/deep/old.txt"] {
        let metadata = fs::symlink_metadata(tree.scratch.join(entry)).unwrap();
        assert_eq!(
            (metadata.uid(), metadata.gid()),
            owner,
            "owner of {entry:?}"
        );
    }
    assert_eq!(
        fs::read(tree.scratch.join("data/deep/old.txt")).unwrap(),
        b"old"
    );
    assert!(!tree.scratch.join(".secrets").exists());
    assert_eq!(collect_default(&tree, &manifest), CopyBack::default());
    fs::write(tree.scratch.join("notes.md"), b"notes, edited").unwrap();
    let copy_back = collect_default(&tree, &manifest);
    assert_eq!(
        returned_paths(&copy_back),
        ["notes.md"].into_iter().map(str::to_owned).collect()
    );
}

#[test]
fn g12_staging_refuses_a_scratch_folder_that_is_not_empty() {
    let tree = tree();
    fs::write(tree.scratch.join("left-over"), b"x").unwrap();
    let error = stage_in(
        &workspace::StepFiles::scratch_folder(tree.workspace.clone()),
        &tree.scratch,
        current_owner(),
    )
    .unwrap_err();
    assert!(
        matches!(error, sandbox::copyback::Error::ScratchNotEmpty { .. }),
        "{error}"
    );
}

#[test]
fn g12_unchanged_files_do_not_come_back_and_new_changed_and_deleted_ones_do() {
    let tree = tree();
    let manifest = staged(&tree);
    let untouched = collect_default(&tree, &manifest);
    assert_eq!(untouched, CopyBack::default());

    fs::write(tree.scratch.join("notes.md"), b"notes, edited").unwrap();
    fs::write(tree.scratch.join("data/new.json"), b"{}").unwrap();
    fs::remove_file(tree.scratch.join("data/deep/old.txt")).unwrap();
    let copy_back = collect_default(&tree, &manifest);
    assert_eq!(
        returned_paths(&copy_back),
        ["data/new.json", "notes.md"]
            .into_iter()
            .map(str::to_owned)
            .collect()
    );
    assert_eq!(copy_back.refusals, vec![]);
    assert_eq!(
        copy_back.deleted,
        vec![RelPath::parse("data/deep/old.txt").unwrap()]
    );
    let notes = copy_back
        .files
        .iter()
        .find(|file| file.path.as_str() == "notes.md")
        .unwrap();
    assert_eq!(notes.contents().unwrap_or_default(), b"notes, edited");
}

#[test]
fn g12_symlinks_are_refused_and_never_followed() {
    let tree = tree();
    let manifest = staged(&tree);
    symlink("/etc/passwd", tree.scratch.join("passwd")).unwrap();
    symlink("/etc", tree.scratch.join("etc-folder")).unwrap();
    symlink(
        "../../../../../../etc/shadow",
        tree.scratch.join("data/climb"),
    )
    .unwrap();
    // A staged file replaced by a link must neither come back nor count as deleted.
    fs::remove_file(tree.scratch.join("notes.md")).unwrap();
    symlink("/etc/hostname", tree.scratch.join("notes.md")).unwrap();

    let copy_back = collect_default(&tree, &manifest);
    assert!(copy_back.files.is_empty(), "{:?}", copy_back.files);
    for path in ["passwd", "etc-folder", "data/climb", "notes.md"] {
        assert_eq!(
            refusal_of(&copy_back, path),
            &RefusalReason::SymlinkOrHardlink
        );
    }
    assert!(copy_back.deleted.is_empty(), "{:?}", copy_back.deleted);
}

#[test]
fn g12_hardlinks_are_refused() {
    let tree = tree();
    let manifest = staged(&tree);
    fs::write(tree.scratch.join("original.txt"), b"x").unwrap();
    fs::hard_link(
        tree.scratch.join("original.txt"),
        tree.scratch.join("second-name.txt"),
    )
    .unwrap();
    let copy_back = collect_default(&tree, &manifest);
    assert!(copy_back.files.is_empty());
    assert_eq!(
        refusal_of(&copy_back, "original.txt"),
        &RefusalReason::SymlinkOrHardlink
    );
    assert_eq!(
        refusal_of(&copy_back, "second-name.txt"),
        &RefusalReason::SymlinkOrHardlink
    );
}

#[test]
fn g12_fifos_and_sockets_are_refused_without_blocking() {
    let tree = tree();
    let manifest = staged(&tree);
    rustix::fs::mknodat(
        rustix::fs::CWD,
        tree.scratch.join("pipe"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o666),
        0,
    )
    .unwrap();
    let _listener = std::os::unix::net::UnixListener::bind(tree.scratch.join("sock")).unwrap();
    let copy_back = collect_default(&tree, &manifest);
    assert!(copy_back.files.is_empty());
    assert_eq!(
        refusal_of(&copy_back, "pipe"),
        &RefusalReason::NotRegularFile { kind: "fifo" }
    );
    assert_eq!(
        refusal_of(&copy_back, "sock"),
        &RefusalReason::NotRegularFile { kind: "socket" }
    );
}

#[test]
fn g12_devices_are_refused_needs_root() {
    let tree = tree();
    let manifest = staged(&tree);
    rustix::fs::mknodat(
        rustix::fs::CWD,
        tree.scratch.join("null-device"),
        rustix::fs::FileType::CharacterDevice,
        rustix::fs::Mode::from_raw_mode(0o666),
        rustix::fs::makedev(1, 3),
    )
    .unwrap();
    let copy_back = collect_default(&tree, &manifest);
    assert!(copy_back.files.is_empty());
    assert_eq!(
        refusal_of(&copy_back, "null-device"),
        &RefusalReason::NotRegularFile {
            kind: "character device"
        }
    );
}

#[test]
fn g12_set_id_bits_are_refused() {
    let tree = tree();
    let manifest = staged(&tree);
    for (name, mode) in [("setuid", 0o4755), ("setgid", 0o2755)] {
        let path = tree.scratch.join(name);
        fs::write(&path, b"#!/bin/sh\n").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
    }
    let copy_back = collect_default(&tree, &manifest);
    assert!(copy_back.files.is_empty());
    assert_eq!(refusal_of(&copy_back, "setuid"), &RefusalReason::SetIdBits);
    assert_eq!(refusal_of(&copy_back, "setgid"), &RefusalReason::SetIdBits);
}

#[test]
fn g12_files_over_the_size_cap_are_refused_and_at_the_cap_accepted() {
    let tree = tree();
    let manifest = staged(&tree);
    let policy = CopyBackPolicy {
        max_file_bytes: 1000,
        ..CopyBackPolicy::default()
    };
    fs::write(tree.scratch.join("at-cap"), vec![b'a'; 1000]).unwrap();
    fs::write(tree.scratch.join("over-cap"), vec![b'a'; 1001]).unwrap();
    // A sparse file claims a huge size without using disk: refused on the descriptor's size.
    let sparse = fs::File::create(tree.scratch.join("sparse")).unwrap();
    sparse.set_len(1 << 40).unwrap();
    let copy_back = collect(&tree.scratch, &manifest, &policy, &KnowsTheTestSecret).unwrap();
    assert_eq!(
        returned_paths(&copy_back),
        ["at-cap".to_owned()].into_iter().collect()
    );
    assert_eq!(
        refusal_of(&copy_back, "over-cap"),
        &RefusalReason::TooLarge {
            size: 1001,
            cap: 1000
        }
    );
    assert_eq!(
        refusal_of(&copy_back, "sparse"),
        &RefusalReason::TooLarge {
            size: 1 << 40,
            cap: 1000
        }
    );
}

#[test]
fn g12_the_total_size_cap_holds_across_files() {
    let tree = tree();
    let manifest = staged(&tree);
    let policy = CopyBackPolicy {
        max_total_bytes: 250,
        ..CopyBackPolicy::default()
    };
    for name in ["a", "b", "c"] {
        fs::write(tree.scratch.join(name), vec![b'x'; 100]).unwrap();
    }
    let copy_back = collect(&tree.scratch, &manifest, &policy, &KnowsTheTestSecret).unwrap();
    assert_eq!(
        returned_paths(&copy_back),
        ["a", "b"].into_iter().map(str::to_owned).collect()
    );
    assert_eq!(
        refusal_of(&copy_back, "c"),
        &RefusalReason::TotalTooLarge {
            total: 300,
            cap: 250
        }
    );
}

#[test]
fn g12_too_many_files_are_refused_past_the_cap() {
    let tree = tree();
    let manifest = staged(&tree);
    let policy = CopyBackPolicy {
        max_files: 3,
        ..CopyBackPolicy::default()
    };
    for index in 0..5 {
        fs::write(tree.scratch.join(format!("file-{index}")), b"x").unwrap();
    }
    let copy_back = collect(&tree.scratch, &manifest, &policy, &KnowsTheTestSecret).unwrap();
    assert_eq!(copy_back.files.len(), 3);
    assert_eq!(
        refusal_of(&copy_back, "file-3"),
        &RefusalReason::TooMany { cap: 3 }
    );
    assert_eq!(
        refusal_of(&copy_back, "file-4"),
        &RefusalReason::TooMany { cap: 3 }
    );
}

#[test]
fn g12_an_inode_bomb_is_walked_with_bounded_work() {
    let tree = tree();
    let manifest = staged(&tree);
    let policy = CopyBackPolicy {
        max_files: 10,
        ..CopyBackPolicy::default()
    };
    for index in 0..500 {
        fs::create_dir(tree.scratch.join(format!("empty-{index:03}"))).unwrap();
    }
    let copy_back = collect(&tree.scratch, &manifest, &policy, &KnowsTheTestSecret).unwrap();
    assert!(copy_back.files.is_empty());
    assert!(
        copy_back
            .refusals
            .iter()
            .any(|refusal| refusal.reason == RefusalReason::TooMany { cap: 10 }),
        "{:?}",
        copy_back.refusals
    );
    // A truncated walk cannot tell removed files from unvisited ones, so it reports none.
    assert!(copy_back.deleted.is_empty());
}

#[test]
fn g12_entries_deeper_than_the_cap_are_refused() {
    let tree = tree();
    let manifest = staged(&tree);
    let policy = CopyBackPolicy {
        max_depth: 3,
        ..CopyBackPolicy::default()
    };
    fs::create_dir_all(tree.scratch.join("a/b/c")).unwrap();
    fs::write(tree.scratch.join("a/b/ok.txt"), b"ok").unwrap();
    fs::write(tree.scratch.join("a/b/c/too-deep.txt"), b"deep").unwrap();
    let copy_back = collect(&tree.scratch, &manifest, &policy, &KnowsTheTestSecret).unwrap();
    assert_eq!(
        returned_paths(&copy_back),
        ["a/b/ok.txt".to_owned()].into_iter().collect()
    );
    assert_eq!(
        refusal_of(&copy_back, "a/b/c/too-deep.txt"),
        &RefusalReason::TooDeep { depth: 4, cap: 3 }
    );
}

#[test]
fn g12_protected_paths_are_refused_in_any_case() {
    let tree = tree();
    let manifest = staged(&tree);
    fs::write(tree.scratch.join(".secrets"), b"API_KEY=stolen").unwrap();
    fs::write(tree.scratch.join(".SECRETS"), b"API_KEY=stolen").unwrap();
    fs::create_dir_all(tree.scratch.join(".journal")).unwrap();
    fs::write(tree.scratch.join(".journal/forged"), b"{}").unwrap();
    fs::create_dir_all(tree.scratch.join("knowledge/k/index")).unwrap();
    fs::write(tree.scratch.join("knowledge/k/index/poisoned"), b"x").unwrap();
    fs::write(tree.scratch.join("knowledge/k/page.md"), b"fine").unwrap();
    let copy_back = collect_default(&tree, &manifest);
    assert_eq!(
        returned_paths(&copy_back),
        ["knowledge/k/page.md".to_owned()].into_iter().collect()
    );
    for (path, kind) in [
        (".secrets", ProtectedKind::SecretsFile),
        (".SECRETS", ProtectedKind::SecretsFile),
        (".journal", ProtectedKind::Journal),
        ("knowledge/k/index", ProtectedKind::KnowledgeIndex),
    ] {
        assert_eq!(
            refusal_of(&copy_back, path),
            &RefusalReason::ProtectedPath { kind }
        );
    }
}

#[test]
fn g12_a_file_holding_a_secret_is_refused_plain_and_base64_never_edited() {
    let tree = tree();
    let manifest = staged(&tree);
    let mut plain = b"token: ".to_vec();
    plain.extend_from_slice(SECRET);
    fs::write(tree.scratch.join("plain.txt"), &plain).unwrap();
    let mut encoded = b"{\"blob\": \"".to_vec();
    encoded.extend_from_slice(SECRET_BASE64);
    encoded.extend_from_slice(b"\"}");
    fs::write(tree.scratch.join("encoded.json"), &encoded).unwrap();
    fs::write(
        tree.scratch.join("notes.md"),
        b"notes + sk-live-0123456789abcdef",
    )
    .unwrap();
    fs::write(
        tree.scratch.join("harmless.txt"),
        b"sk-live-but-not-the-value",
    )
    .unwrap();
    let copy_back = collect_default(&tree, &manifest);
    assert_eq!(
        returned_paths(&copy_back),
        ["harmless.txt".to_owned()].into_iter().collect()
    );
    for path in ["plain.txt", "encoded.json", "notes.md"] {
        assert_eq!(refusal_of(&copy_back, path), &RefusalReason::HoldsSecret);
    }
    // Refused, not edited: the staged notes did not change and are not reported deleted.
    assert!(copy_back.deleted.is_empty());
}

#[test]
fn g12_names_that_are_not_utf8_are_refused() {
    use std::os::unix::ffi::OsStrExt;
    let tree = tree();
    let manifest = staged(&tree);
    let name = std::ffi::OsStr::from_bytes(b"bad-\xff-name");
    fs::write(tree.scratch.join(name), b"x").unwrap();
    let copy_back = collect_default(&tree, &manifest);
    assert!(copy_back.files.is_empty());
    assert!(matches!(
        refusal_of(&copy_back, "bad-\u{FFFD}-name"),
        RefusalReason::BadName { .. }
    ));
}

#[test]
fn g12_a_folder_replaced_by_a_file_is_a_deletion_and_a_new_file() {
    let tree = tree();
    let manifest = staged(&tree);
    fs::remove_dir_all(tree.scratch.join("data/deep")).unwrap();
    fs::write(tree.scratch.join("data/deep"), b"now a file").unwrap();
    let copy_back = collect_default(&tree, &manifest);
    assert_eq!(
        returned_paths(&copy_back),
        ["data/deep".to_owned()].into_iter().collect()
    );
    assert_eq!(
        copy_back.deleted,
        vec![RelPath::parse("data/deep/old.txt").unwrap()]
    );
}

#[test]
fn g12_refusals_read_as_sentences() {
    let tree = tree();
    let manifest = staged(&tree);
    symlink("/etc/passwd", tree.scratch.join("passwd")).unwrap();
    let copy_back = collect_default(&tree, &manifest);
    let sentence = copy_back.refusals[0].to_string();
    assert!(
        sentence.starts_with("passwd was not copied back: "),
        "{sentence}"
    );
    assert!(sentence.ends_with('.'), "{sentence}");
}

/// G25: staging holds the workspace folder's shared lock while it copies, so a writer applying
/// a revision (which holds it exclusively) and a step's staging never interleave: the step
/// starts from the folder before the revision or after it, never from half of it.
#[test]
fn g25_staging_waits_while_a_revision_is_being_applied() {
    let tree = tree();
    let writer = fs::File::open(&tree.workspace).unwrap();
    writer.lock().unwrap();
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            done.send(staged(&tree)).unwrap();
        });
        assert!(
            finished
                .recv_timeout(std::time::Duration::from_millis(300))
                .is_err(),
            "staging copied the folder while a revision was being applied"
        );
        // The revision lands, then the writer lets go.
        fs::write(tree.workspace.join("notes.md"), b"notes, revised").unwrap();
        writer.unlock().unwrap();
        finished
            .recv_timeout(std::time::Duration::from_secs(10))
            .unwrap();
    });
    assert_eq!(
        fs::read(tree.scratch.join("notes.md")).unwrap(),
        b"notes, revised"
    );
}
