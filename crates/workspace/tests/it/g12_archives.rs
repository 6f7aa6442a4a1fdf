//! G12, G19 (review "credentials" A7): a value inside a compressed file or an archive member
//! (gzip, bz2, xz, zip; nested up to three deep) is refused like one in plain text; a file that
//! inflates past the bound (a bomb) is refused, not skipped. The archives are made by the real
//! CPython 3.11 (`/usr/bin/python3 -I -S`), the way a step would make them.

use std::process::Command;

use workspace::{Author, Change, Error, FolderRevisions, RelPath, RevisionStore, SecretScreen};

const SECRET: &str = "sk-live-archived-7Qz9XvB2mN4pL8rT";

struct KnowsSecret;

impl SecretScreen for KnowsSecret {
    fn holds_secret(&self, content: &[u8]) -> bool {
        content
            .windows(SECRET.len())
            .any(|window| window == SECRET.as_bytes())
    }
}

/// The bytes the Python expression `expression` gives, with `s` the secret.
fn python(expression: &str) -> Vec<u8> {
    let program = format!(
        "import sys, io, gzip, bz2, lzma, zipfile\n\
         s = {SECRET:?}.encode()\n\
         def z(name, data):\n\
         \x20   b = io.BytesIO()\n\
         \x20   with zipfile.ZipFile(b, 'w', zipfile.ZIP_DEFLATED) as f:\n\
         \x20       f.writestr(name, data)\n\
         \x20   return b.getvalue()\n\
         sys.stdout.buffer.write({expression})\n"
    );
    let output = Command::new("/usr/bin/python3")
        .args(["-I", "-S", "-c", &program])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

fn written(contents: Vec<u8>) -> Result<(), Error> {
    let folder = tempfile::tempdir().unwrap();
    let store = FolderRevisions::open(folder.path()).unwrap();
    store
        .write(
            &Author::Person { id: "p-1".into() },
            "add a file",
            vec![(
                RelPath::parse("out/file.bin").unwrap(),
                Change::Write(contents),
            )],
            &KnowsSecret,
        )
        .map(|_| ())
}

#[test]
fn g12_a_value_inside_a_compressed_file_or_archive_member_is_refused() {
    for (name, expression) in [
        ("gzip", "gzip.compress(b'token: ' + s)"),
        ("bz2", "bz2.compress(b'token: ' + s)"),
        ("xz", "lzma.compress(b'token: ' + s)"),
        ("zip", "z('sheet.xml', b'<c>' + s + b'</c>')"),
        (
            "zip in gzip in zip",
            "z('outer.gz', gzip.compress(z('inner.xml', b'<c>' + s + b'</c>')))",
        ),
    ] {
        let refused = written(python(expression));
        assert!(
            matches!(refused, Err(Error::HoldsSecret { .. })),
            "{name}: {refused:?}"
        );
    }
    // The same archives without the value are written.
    for expression in [
        "gzip.compress(b'token: nothing')",
        "z('outer.gz', gzip.compress(z('inner.xml', b'<c>clean</c>')))",
    ] {
        written(python(expression)).unwrap();
    }
}

#[test]
fn g12_an_archive_that_inflates_past_the_bound_is_refused_not_skipped() {
    // 200 MiB of zeros, then the value: under 1 MiB compressed.
    let bomb = python("gzip.compress(bytes(200 * 1024 * 1024) + s, 9)");
    assert!(bomb.len() < 1024 * 1024);
    let refused = written(bomb);
    assert!(
        matches!(refused, Err(Error::Unscreenable { .. })),
        "{refused:?}"
    );
}

#[test]
fn g12_an_archive_the_screen_cannot_open_is_refused_from_a_writer_holding_credentials() {
    use workspace::{Screened, UnreadableArchives, screen_contents};
    // A gzip stream cut in half, and archives nested four deep.
    let mut cut = python("gzip.compress(b'token: nothing here' * 1000)");
    cut.truncate(cut.len() / 2);
    let deep = python("z('a', gzip.compress(z('b', gzip.compress(b'clean'))))");
    for contents in [cut, deep] {
        assert!(matches!(
            screen_contents(&KnowsSecret, &contents, UnreadableArchives::Refuse),
            Screened::Unscreenable { .. }
        ));
        assert_eq!(
            screen_contents(&KnowsSecret, &contents, UnreadableArchives::Accept),
            Screened::Clean
        );
    }
    // Where a value was found is said by layer, never with the value.
    let found = screen_contents(
        &KnowsSecret,
        &python("z('docs/x.xml', gzip.compress(s))"),
        UnreadableArchives::Accept,
    );
    assert_eq!(
        found,
        Screened::HoldsSecret {
            inside: vec!["zip member docs/x.xml".to_owned(), "gzip".to_owned()]
        }
    );
}

/// G12 (review N9): zlib streams, `.lzma` (LZMA alone) files and a zip behind a prefix (a
/// self-extractor, a script with an archive appended) are opened and screened too.
#[test]
fn g12_zlib_lzma_alone_and_a_prefixed_zip_are_screened() {
    for (name, expression) in [
        ("zlib", "__import__('zlib').compress(b'token: ' + s)"),
        (
            "zlib best",
            "__import__('zlib').compress(b'token: ' + s, 9)",
        ),
        (
            "lzma alone",
            "lzma.compress(b'token: ' + s, format=lzma.FORMAT_ALONE)",
        ),
        (
            "zip after a prefix",
            "b'#!/bin/sh\\nexec unzip \"$0\"\\n' + bytes(300) + z('a.txt', b'x: ' + s)",
        ),
    ] {
        let refused = written(python(expression));
        assert!(
            matches!(refused, Err(Error::HoldsSecret { .. })),
            "{name}: {refused:?}"
        );
    }
    for expression in [
        "__import__('zlib').compress(b'token: nothing')",
        "lzma.compress(b'token: nothing', format=lzma.FORMAT_ALONE)",
        "b'prefix' + z('a.txt', b'clean')",
    ] {
        written(python(expression)).unwrap();
    }
}
