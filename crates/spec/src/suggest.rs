//! "Did you mean" suggestions by edit distance, for typos in keys, names and references.

/// How many candidates a suggestion looks at, at most.
const MAX_CANDIDATES: usize = 256;

/// The candidate closest to `wrong`, if it is close enough to be a plausible typo.
pub(crate) fn closest<'candidate>(
    wrong: &str,
    candidates: impl IntoIterator<Item = &'candidate str>,
) -> Option<&'candidate str> {
    let wrong_lower = wrong.to_lowercase();
    let limit = (wrong.chars().count() / 3).max(2);
    // Only so many candidates are weighed, so a file with thousands of names and thousands of
    // typos cannot make parsing quadratic.
    candidates
        .into_iter()
        .take(MAX_CANDIDATES)
        .map(|candidate| {
            (
                edit_distance(&wrong_lower, &candidate.to_lowercase()),
                candidate,
            )
        })
        .filter(|(distance, _)| *distance <= limit)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

/// Levenshtein distance over characters.
fn edit_distance(left: &str, right: &str) -> usize {
    let right: Vec<char> = right.chars().collect();
    let mut previous: Vec<usize> = (0..=right.len()).collect();
    let mut current = vec![0; right.len() + 1];
    for (left_index, left_char) in left.chars().enumerate() {
        current[0] = left_index + 1;
        for (right_index, right_char) in right.iter().enumerate() {
            let substitution = previous[right_index] + usize::from(left_char != *right_char);
            current[right_index + 1] = substitution
                .min(previous[right_index + 1] + 1)
                .min(current[right_index] + 1);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[right.len()]
}

/// " Did you mean `x`?" or nothing, to append to a help text.
pub(crate) fn did_you_mean<'candidate>(
    wrong: &str,
    candidates: impl IntoIterator<Item = &'candidate str>,
) -> String {
    match closest(wrong, candidates) {
        Some(candidate) => format!("did you mean `{candidate}`? "),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use crate::suggest::{closest, edit_distance};

    #[test]
    fn edit_distance_counts_single_character_edits() {
        assert_eq!(edit_distance("explian", "explain"), 2);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn closest_ignores_far_candidates() {
        assert_eq!(closest("explian", ["explain", "code"]), Some("explain"));
        assert_eq!(closest("zzzzzz", ["explain", "code"]), None);
    }
}
