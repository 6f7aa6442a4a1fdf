//! Searching stored bytes: a value that must never be stored (a secret, a key) is looked for
//! in every file the platform wrote, as someone with the disk would.

use std::path::{Path, PathBuf};

/// Whether `needle` (never empty: an empty one would be found everywhere) occurs in
/// `haystack`.
pub fn contains(haystack: &[u8], needle: impl AsRef<[u8]>) -> bool {
    let needle = needle.as_ref();
    assert!(!needle.is_empty(), "an empty needle proves nothing");
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

/// Every file below `directory`, with its bytes (for a store: the database, its WAL and its
/// shared memory). A folder that does not exist holds nothing.
pub fn files_under(directory: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut found = Vec::new();
    let mut pending = vec![directory.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                found.push((path, bytes));
            }
        }
    }
    found.sort();
    found
}

/// Every byte of every file below `directory`, one after another.
pub fn bytes_under(directory: &Path) -> Vec<u8> {
    files_under(directory)
        .into_iter()
        .flat_map(|(_, bytes)| bytes)
        .collect()
}

/// Every form of `value` the redactor knows, as a script that leaks it would print it: raw,
/// base64 (standard and URL-safe, padded or not, and at the offsets 1 and 2), hex in both
/// cases and JSON-escaped. What a test looks for in what was shown or stored.
pub fn secret_forms(value: &str) -> Vec<String> {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    let escaped = serde_json::to_string(value).unwrap();
    vec![
        value.to_owned(),
        STANDARD.encode(value),
        STANDARD_NO_PAD.encode(value),
        URL_SAFE.encode(value),
        URL_SAFE_NO_PAD.encode(value),
        STANDARD.encode(format!("x{value}")),
        STANDARD.encode(format!("xy{value}")),
        hex::encode(value),
        hex::encode_upper(value),
        escaped[1..escaped.len() - 1].to_owned(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_found_in_any_file_below_and_only_there() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("a/b/deep"), b"xx sk_live_found xx").unwrap();
        std::fs::write(dir.path().join("top"), b"nothing").unwrap();
        assert!(contains(&bytes_under(dir.path()), "sk_live_found"));
        assert!(!contains(&bytes_under(dir.path()), "sk_live_absent"));
        assert_eq!(files_under(dir.path()).len(), 2);
        assert!(files_under(&dir.path().join("missing")).is_empty());
    }
}
