//! The runtime cache (issue 13, part 2): discovery's answer is kept across process starts in
//! a root-owned 0700 folder, keyed on the interpreter's and the standard library's identity,
//! and checked at every load with `fstat`; a cache that names anything else (here: a planted
//! `/etc/shadow`) or that anyone but root could have written is thrown away and rebuilt.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use sandbox::runtime::{CacheUse, RuntimeMount, RuntimeOptions, Runtimes};

const CACHE_FILE: &str = "runtimes-v1.json";

fn options(cache_dir: &Path) -> RuntimeOptions {
    RuntimeOptions {
        candidates: vec![PathBuf::from("/usr/bin/python3.11")],
        cache_dir: Some(cache_dir.to_path_buf()),
        ..RuntimeOptions::default()
    }
}

/// A fresh cache folder (root's, 0700) filled by a first discovery.
fn filled_cache() -> (tempfile::TempDir, PathBuf) {
    let holder = tempfile::tempdir().unwrap();
    let dir = holder.path().join("runtimes");
    let first = Runtimes::discover(&options(&dir)).unwrap();
    assert!(
        matches!(first.cache_use(), CacheUse::Rebuilt { .. }),
        "{:?}",
        first.cache_use()
    );
    assert_eq!(
        std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
        0o700
    );
    (holder, dir)
}

fn every_source(runtimes: &Runtimes) -> Vec<PathBuf> {
    runtimes
        .list()
        .iter()
        .flat_map(|runtime| runtime.mounts.iter())
        .filter_map(|mount| match mount {
            RuntimeMount::File { source, .. } | RuntimeMount::Dir { source, .. } => {
                Some(source.clone())
            }
            RuntimeMount::Mask { .. } => None,
        })
        .collect()
}

#[test]
fn g8_a_second_discovery_comes_from_the_cache_and_equals_the_first_needs_root() {
    let (_holder, dir) = filled_cache();
    let uncached = Runtimes::discover(&RuntimeOptions {
        cache_dir: None,
        ..options(&dir)
    })
    .unwrap();
    let cached = Runtimes::discover(&options(&dir)).unwrap();
    assert_eq!(cached.cache_use(), &CacheUse::Hit);
    assert_eq!(cached.list().len(), 1);
    assert_eq!(cached.list()[0].version, uncached.list()[0].version);
    assert_eq!(cached.list()[0].mounts, uncached.list()[0].mounts);
    assert_eq!(
        cached.list()[0].stdlib_module_names,
        uncached.list()[0].stdlib_module_names
    );
}

#[test]
fn g7_a_cache_naming_etc_shadow_is_refused_and_rebuilt_needs_root() {
    let (_holder, dir) = filled_cache();
    let path = dir.join(CACHE_FILE);
    let mut cache: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    // The planted entry is as well-formed as the real ones: root's file, the right inode.
    use std::os::unix::fs::MetadataExt;
    let shadow = std::fs::metadata("/etc/shadow").unwrap();
    cache["entries"][0]["mounts"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({
            "kind": "file",
            "source": "/etc/shadow",
            "target": "/usr/lib/shadow",
            "dev": shadow.dev(),
            "ino": shadow.ino(),
        }));
    std::fs::write(&path, serde_json::to_vec(&cache).unwrap()).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();

    let runtimes = Runtimes::discover(&options(&dir)).unwrap();
    match runtimes.cache_use() {
        CacheUse::Rebuilt { reason } => assert!(
            reason.contains("/etc/shadow")
                && reason.contains("outside the interpreter's prefix and the system library"),
            "{reason}"
        ),
        other => panic!("the planted cache was used: {other:?}"),
    }
    assert!(
        !every_source(&runtimes).contains(&PathBuf::from("/etc/shadow")),
        "/etc/shadow reached the runtime view"
    );
    // The cache was rewritten without it, and is used again.
    assert!(
        !std::fs::read_to_string(&path)
            .unwrap()
            .contains("/etc/shadow")
    );
    assert_eq!(
        Runtimes::discover(&options(&dir)).unwrap().cache_use(),
        &CacheUse::Hit
    );
}

#[test]
fn g7_a_cache_others_could_write_or_a_link_in_it_is_refused_needs_root() {
    let (_holder, dir) = filled_cache();
    let path = dir.join(CACHE_FILE);
    // Group- or world-writable file: refused.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
    assert!(matches!(
        Runtimes::discover(&options(&dir)).unwrap().cache_use(),
        CacheUse::Rebuilt { reason } if reason.contains("only root may write")
    ));
    // A folder others may enter: refused, and not written into either.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let runtimes = Runtimes::discover(&options(&dir)).unwrap();
    assert!(
        matches!(runtimes.cache_use(), CacheUse::Rebuilt { reason } if reason.contains("0700")),
        "{:?}",
        runtimes.cache_use()
    );
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    // A cached library that is a link now (to anything): refused.
    let first = Runtimes::discover(&options(&dir)).unwrap();
    assert_eq!(first.cache_use(), &CacheUse::Hit);
    let mut cache: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    // Any link among the host's libraries will do (nothing is written outside the test's
    // folders): bound, it would be followed to whatever it points at.
    let link = std::fs::read_dir("/usr/lib/x86_64-linux-gnu")
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .find(|path| {
            std::fs::symlink_metadata(path).is_ok_and(|metadata| metadata.file_type().is_symlink())
        })
        .expect("the host's library folder holds a link");
    cache["entries"][0]["mounts"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({
            "kind": "file", "source": link, "target": link, "dev": 0, "ino": 0,
        }));
    std::fs::write(&path, serde_json::to_vec(&cache).unwrap()).unwrap();
    let runtimes = Runtimes::discover(&options(&dir)).unwrap();
    assert!(
        matches!(runtimes.cache_use(), CacheUse::Rebuilt { reason } if reason.contains(&*link.to_string_lossy())),
        "{:?}",
        runtimes.cache_use()
    );
    assert!(!every_source(&runtimes).contains(&link));
}

/// Discovery runs every candidate as root to ask it for its facts, and binds it into every
/// sandbox. A `python3.N` in a folder that someone but root may write (Debian's
/// `/usr/local/bin` was `root:staff 2775`) could be anyone's program: it is skipped without
/// being run, and the skip names the folder.
#[test]
fn g8_discovery_never_runs_an_interpreter_others_could_have_planted_needs_root() {
    let holder = tempfile::tempdir().unwrap();
    let bin = holder.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let marker = holder.path().join("ran");
    let planted = bin.join("python3.99");
    std::fs::write(
        &planted,
        format!("#!/bin/sh\necho planted > {}\nexit 1\n", marker.display()),
    )
    .unwrap();
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o755)).unwrap();
    let discover = || {
        Runtimes::discover(&RuntimeOptions {
            candidates: vec![bin.join("python3*"), PathBuf::from("/usr/bin/python3.11")],
            ..RuntimeOptions::default()
        })
        .unwrap()
    };
    // The control: in a closed folder the planted program is run (and fails as no Python).
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let control = discover();
    assert!(marker.exists(), "the control did not run the candidate");
    assert!(!control.list().is_empty());
    std::fs::remove_file(&marker).unwrap();

    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o2775)).unwrap();
    let runtimes = discover();
    assert!(
        !marker.exists(),
        "a candidate in a group-writable folder was run"
    );
    let skipped = runtimes.skipped().join("\n");
    assert!(
        skipped.contains(&bin.display().to_string()) && skipped.contains("may be written by group"),
        "{skipped}"
    );
    // The trusted interpreter beside it is still found.
    assert!(
        runtimes
            .list()
            .iter()
            .any(|runtime| runtime.executable == Path::new("/usr/bin/python3.11")),
        "{:?}",
        runtimes.list()
    );
}

/// Whatever the view binds into every sandbox (libraries, the standard library, the data
/// folders) passes the interpreter's rule too: a folder someone but root may write could have
/// its contents swapped and then run or read in every tenant's steps. Such a runtime is
/// skipped, naming the folder.
#[test]
fn g7_a_view_that_would_bind_a_folder_others_may_write_is_refused_needs_root() {
    let holder = tempfile::tempdir().unwrap();
    let data = holder.path().join("zoneinfo");
    std::fs::create_dir(&data).unwrap();
    let discover = || {
        Runtimes::discover(&RuntimeOptions {
            candidates: vec![PathBuf::from("/usr/bin/python3.11")],
            data_dirs: vec![data.clone()],
            ..RuntimeOptions::default()
        })
        .unwrap()
    };
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert!(
        !discover().list().is_empty(),
        "the control found no runtime"
    );
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o2775)).unwrap();
    let runtimes = discover();
    assert!(runtimes.list().is_empty(), "{:?}", runtimes.list());
    let skipped = runtimes.skipped().join("\n");
    assert!(
        skipped.contains("its view would bind")
            && skipped.contains(&data.display().to_string())
            && skipped.contains("may be written by group"),
        "{skipped}"
    );
}
