//! Looking inside what a file holds before it is written (G12, G19): the secret screen sees
//! plain bytes only, so a value inside a gzip, bz2 or xz file or a zip member (a `.docx`, an
//! `.xlsx`, a report archive) is found by inflating it first, nested up to
//! [`MAX_ARCHIVE_DEPTH`] deep, within [`MAX_INFLATED_BYTES`] in all. What inflates past the
//! bound (a bomb) is refused, never skipped; an archive the screen cannot open is refused when
//! the caller says so (the copy-back of a step that holds credentials), because its contents
//! cannot be shown to be free of them.

use std::io::{Cursor, Read};

use crate::revision::SecretScreen;

/// How many archive layers are opened (a zip in a gzip in a zip is three).
pub const MAX_ARCHIVE_DEPTH: usize = 3;

/// How many bytes all layers of one file may inflate to, together.
pub const MAX_INFLATED_BYTES: u64 = 64 * 1024 * 1024;

/// The most memory an xz stream's dictionary may ask for, in KiB.
const XZ_MEMORY_LIMIT_KIB: u32 = 64 * 1024;

/// What to do with an archive the screen cannot open (encrypted, corrupt, an unknown method,
/// nested too deep).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnreadableArchives {
    /// Write it: nothing of the writer's could be in it that the writer did not put there
    /// knowingly (a person's own upload).
    Accept,
    /// Refuse it: the writer holds credentials (a step granted a connection).
    Refuse,
}

/// What the screen found in a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Screened {
    /// Nothing of the account's values, in the file or in anything it holds.
    Clean,
    /// A value of the account, in the file itself or inside it (`inside` says where, by
    /// layer, without the value: `gzip`, `zip member out/data.json`).
    HoldsSecret { inside: Vec<String> },
    /// The file cannot be fully checked (a bomb, or an unreadable archive that is refused).
    Unscreenable { reason: String },
}

/// Screens `contents`, looking inside compressed files and archives.
pub fn screen_contents(
    screen: &dyn SecretScreen,
    contents: &[u8],
    unreadable: UnreadableArchives,
) -> Screened {
    let mut budget = MAX_INFLATED_BYTES;
    let mut inside = Vec::new();
    match screen_layer(screen, contents, 0, &mut budget, &mut inside) {
        Layer::Clean => Screened::Clean,
        Layer::Secret => Screened::HoldsSecret { inside },
        Layer::Bomb => Screened::Unscreenable {
            reason: format!(
                "it inflates to more than {} MiB, so it cannot be checked for credentials",
                MAX_INFLATED_BYTES / (1024 * 1024)
            ),
        },
        Layer::Unreadable(detail) => match unreadable {
            UnreadableArchives::Accept => Screened::Clean,
            UnreadableArchives::Refuse => Screened::Unscreenable {
                reason: format!(
                    "it is an archive the screen cannot open ({detail}), from a step that \
                     holds credentials, so it cannot be shown to be free of them"
                ),
            },
        },
    }
}

enum Layer {
    Clean,
    Secret,
    Bomb,
    Unreadable(String),
}

#[derive(Clone, Copy)]
enum Kind {
    Gzip,
    Bzip2,
    Xz,
    Zlib,
    LzmaAlone,
    Zip,
}

/// Where a zip's end-of-central-directory record can start: in the last 22 bytes plus the
/// longest comment (65,535 bytes). A zip behind a prefix (a self-extractor, a script with an
/// archive appended) is found by it, not by its first bytes.
fn ends_like_a_zip(contents: &[u8]) -> bool {
    let tail_start = contents.len().saturating_sub(22 + usize::from(u16::MAX));
    contents
        .get(tail_start..)
        .is_some_and(|tail| tail.windows(4).any(|window| window == b"PK\x05\x06"))
}

fn kind_of(contents: &[u8]) -> Option<Kind> {
    if contents.starts_with(&[0x1f, 0x8b]) {
        Some(Kind::Gzip)
    } else if contents.starts_with(b"BZh") {
        Some(Kind::Bzip2)
    } else if contents.starts_with(&[0xFD, b'7', b'z', b'X', b'Z', 0x00]) {
        Some(Kind::Xz)
    } else if contents.starts_with(b"PK\x03\x04") || ends_like_a_zip(contents) {
        Some(Kind::Zip)
    } else if let [0x78, 0x01 | 0x5E | 0x9C | 0xDA, ..] = contents {
        // The four headers zlib writes (deflate, 32 KiB window, each compression level).
        Some(Kind::Zlib)
    } else if let [0x5D, 0x00, 0x00, _, _, ..] = contents {
        // LZMA alone (`.lzma`, `lzma --format=alone`): the default properties byte, then a
        // dictionary size of at least 64 KiB.
        Some(Kind::LzmaAlone)
    } else {
        None
    }
}

fn screen_layer(
    screen: &dyn SecretScreen,
    contents: &[u8],
    depth: usize,
    budget: &mut u64,
    inside: &mut Vec<String>,
) -> Layer {
    if screen.holds_secret(contents) {
        return Layer::Secret;
    }
    let Some(kind) = kind_of(contents) else {
        return Layer::Clean;
    };
    if depth >= MAX_ARCHIVE_DEPTH {
        return Layer::Unreadable(format!(
            "archives nested more than {MAX_ARCHIVE_DEPTH} deep"
        ));
    }
    match kind {
        Kind::Gzip => {
            let reader = flate2::read::MultiGzDecoder::new(contents);
            screen_stream(screen, Box::new(reader), "gzip", depth, budget, inside)
        }
        Kind::Bzip2 => {
            let reader = bzip2::read::MultiBzDecoder::new(contents);
            screen_stream(screen, Box::new(reader), "bz2", depth, budget, inside)
        }
        Kind::Xz => {
            let reader = lzma_rust2::XzReader::new_mem_limit(contents, true, XZ_MEMORY_LIMIT_KIB);
            screen_stream(screen, Box::new(reader), "xz", depth, budget, inside)
        }
        Kind::Zlib => {
            let reader = flate2::read::ZlibDecoder::new(contents);
            screen_stream(screen, Box::new(reader), "zlib", depth, budget, inside)
        }
        Kind::LzmaAlone => {
            match lzma_rust2::LzmaReader::new_mem_limit(contents, XZ_MEMORY_LIMIT_KIB, None) {
                Ok(reader) => {
                    screen_stream(screen, Box::new(reader), "lzma", depth, budget, inside)
                }
                Err(error) => Layer::Unreadable(format!("lzma: {error}")),
            }
        }
        Kind::Zip => screen_zip(screen, contents, depth, budget, inside),
    }
}

/// Inflates one compressed stream and screens what it holds.
fn screen_stream(
    screen: &dyn SecretScreen,
    reader: Box<dyn Read + '_>,
    label: &str,
    depth: usize,
    budget: &mut u64,
    inside: &mut Vec<String>,
) -> Layer {
    match inflate(reader, budget) {
        Inflated::Bytes(inflated) => {
            let found = screen_layer(screen, &inflated, depth + 1, budget, inside);
            if matches!(found, Layer::Secret) {
                inside.insert(0, label.to_owned());
            }
            found
        }
        Inflated::Bomb => Layer::Bomb,
        Inflated::Error(detail) => Layer::Unreadable(format!("{label}: {detail}")),
    }
}

fn screen_zip(
    screen: &dyn SecretScreen,
    contents: &[u8],
    depth: usize,
    budget: &mut u64,
    inside: &mut Vec<String>,
) -> Layer {
    let mut archive = match zip::ZipArchive::new(Cursor::new(contents)) {
        Ok(archive) => archive,
        Err(error) => return Layer::Unreadable(format!("zip: {error}")),
    };
    for index in 0..archive.len() {
        let mut member = match archive.by_index(index) {
            Ok(member) => member,
            Err(error) => return Layer::Unreadable(format!("zip member {index}: {error}")),
        };
        let name = String::from_utf8_lossy(member.name_raw()).into_owned();
        if screen.holds_secret(member.name_raw()) {
            inside.insert(0, format!("the name of zip member {index}"));
            return Layer::Secret;
        }
        if member.encrypted() {
            return Layer::Unreadable(format!("zip member {name} is encrypted"));
        }
        let inflated = match inflate(Box::new(&mut member), budget) {
            Inflated::Bytes(inflated) => inflated,
            Inflated::Bomb => return Layer::Bomb,
            Inflated::Error(detail) => {
                return Layer::Unreadable(format!("zip member {name}: {detail}"));
            }
        };
        drop(member);
        match screen_layer(screen, &inflated, depth + 1, budget, inside) {
            Layer::Clean => {}
            Layer::Secret => {
                inside.insert(0, format!("zip member {name}"));
                return Layer::Secret;
            }
            other => return other,
        }
    }
    Layer::Clean
}

enum Inflated {
    Bytes(Vec<u8>),
    Bomb,
    Error(String),
}

/// Reads all of `reader`, charging `budget`; past it, the file is a bomb.
fn inflate(reader: Box<dyn Read + '_>, budget: &mut u64) -> Inflated {
    let mut inflated = Vec::new();
    match reader
        .take(budget.saturating_add(1))
        .read_to_end(&mut inflated)
    {
        Ok(read) => {
            let read = read as u64;
            if read > *budget {
                Inflated::Bomb
            } else {
                *budget -= read;
                Inflated::Bytes(inflated)
            }
        }
        Err(error) => Inflated::Error(error.to_string()),
    }
}
