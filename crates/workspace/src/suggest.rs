//! "Did you mean" suggestions for refused or missing paths (G22).
//!
//! Pure: the caller passes the listing of paths that exist, so the same logic serves the file
//! tools (listing from disk), the copy-back filter and tests.

use std::path::{Component, Path};

/// Suggests the entry of `listing` that `requested` most probably meant: the entry itself,
/// else the longest trailing part of `requested` that is an entry (`tmp/report.txt` →
/// `report.txt`), else the closest entry by edit distance if it is close enough.
pub fn did_you_mean(requested: &str, listing: &[&str]) -> Option<String> {
    let cleaned = clean_components(Path::new(requested));
    did_you_mean_components(&cleaned, listing)
}

/// The suggestion for a path that [`crate::confine`] refused.
pub(crate) fn for_refused(root: &Path, requested: &str, listing: &[&str]) -> Option<String> {
    let requested_path = Path::new(requested);
    let inside_root = requested_path.is_absolute() && requested_path.starts_with(root);
    let cleaned = match requested_path.strip_prefix(root) {
        Ok(relative) if inside_root => clean_components(relative),
        _ => clean_components(requested_path),
    };
    if cleaned.is_empty() {
        return None;
    }
    if listing.is_empty() {
        // Without a listing, only a path that is plainly inside the folder is worth naming:
        // `/work/a.md` under root `/work`, or `../agents/x/a.md` with its climbing removed.
        let climbed = requested_path
            .components()
            .any(|component| component == Component::ParentDir);
        return (inside_root || (climbed && !requested_path.is_absolute()))
            .then(|| cleaned.join("/"));
    }
    did_you_mean_components(&cleaned, listing)
}

fn did_you_mean_components(cleaned: &[String], listing: &[&str]) -> Option<String> {
    if cleaned.is_empty() {
        return None;
    }
    for start in 0..cleaned.len() {
        let suffix = cleaned[start..].join("/");
        if listing
            .iter()
            .any(|entry| entry.trim_end_matches('/') == suffix)
        {
            return Some(suffix);
        }
    }
    // Case is ignored when measuring: `agent.md` for `AGENT.md` is a near miss, not a miss.
    let wanted = cleaned.join("/").to_lowercase();
    let wanted_name = cleaned
        .last()
        .map(|name| name.to_lowercase())
        .unwrap_or_default();
    let mut best: Option<(usize, &str)> = None;
    for entry in listing {
        let entry = entry.trim_end_matches('/');
        let entry_lower = entry.to_lowercase();
        let entry_name = entry_lower.rsplit('/').next().unwrap_or(&entry_lower);
        let distance = edit_distance(&wanted, &entry_lower).min(
            // A near-miss on the file name alone counts, plus one for the wrong folder.
            edit_distance(&wanted_name, entry_name) + usize::from(wanted != entry_name),
        );
        let better = match best {
            None => true,
            Some((best_distance, best_entry)) => {
                distance < best_distance || (distance == best_distance && entry < best_entry)
            }
        };
        if better {
            best = Some((distance, entry));
        }
    }
    let (distance, entry) = best?;
    let allowed = (wanted_name.chars().count() / 3).max(2);
    (distance <= allowed).then(|| entry.to_owned())
}

/// The normal components of a path as strings: roots, `.` and `..` dropped.
fn clean_components(path: &Path) -> Vec<String> {
    path.components()
        .filter_map(|component| match component {
            Component::Normal(name) => Some(name.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect()
}

/// Levenshtein distance over characters.
fn edit_distance(left: &str, right: &str) -> usize {
    let right_chars: Vec<char> = right.chars().collect();
    let mut previous_row: Vec<usize> = (0..=right_chars.len()).collect();
    let mut current_row = vec![0; right_chars.len() + 1];
    for (left_index, left_char) in left.chars().enumerate() {
        current_row[0] = left_index + 1;
        for (right_index, right_char) in right_chars.iter().enumerate() {
            let substitution = previous_row[right_index] + usize::from(left_char != *right_char);
            let deletion = previous_row[right_index + 1] + 1;
            let insertion = current_row[right_index] + 1;
            current_row[right_index + 1] = substitution.min(deletion).min(insertion);
        }
        std::mem::swap(&mut previous_row, &mut current_row);
    }
    previous_row[right_chars.len()]
}

#[cfg(test)]
mod tests {
    use super::edit_distance;

    #[test]
    fn g22_edit_distance_counts_single_edits() {
        assert_eq!(edit_distance("report", "report"), 0);
        assert_eq!(edit_distance("reprot", "report"), 2);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
