//! G17 properties: a secret inserted anywhere never survives, a stream cut anywhere scrubs like
//! the whole text, and text without secrets comes back unchanged.

use proptest::prelude::*;

use crate::common::redactor_for;

const FIXED_SECRETS: &[&str] = &[
    "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c",
    "p@ss w/rd+&=?#%\"\\ ünï 🦀 tail",
    "Zx9!Qw8@Er7#",
];

fn insert_at(text: &str, position: usize, secret: &str) -> String {
    let mut position = position.min(text.len());
    while !text.is_char_boundary(position) {
        position -= 1;
    }
    format!("{}{secret}{}", &text[..position], &text[position..])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn g17_secret_inserted_anywhere_never_survives(
        text in "\\PC{0,200}",
        secret in "[A-Za-z0-9!@#$%^&*()_+=/ -]{4,48}",
        position in 0usize..400,
    ) {
        let redactor = redactor_for("run-prop-insert", &[&secret]);
        let with_secret = insert_at(&text, position, &secret);
        let scrubbed = redactor.scrub(&with_secret);
        prop_assert!(!scrubbed.as_str().contains(secret.as_str()), "{:?}", scrubbed.as_str());
    }

    #[test]
    fn g17_stream_cut_anywhere_scrubs_like_the_whole_text(
        text in "\\PC{0,120}",
        positions in proptest::collection::vec(0usize..200, 0..4),
        cuts in proptest::collection::vec(0usize..400, 0..6),
    ) {
        let redactor = redactor_for("run-prop-stream", FIXED_SECRETS);
        let mut with_secrets = text.clone();
        for (index, position) in positions.iter().enumerate() {
            with_secrets = insert_at(&with_secrets, *position, FIXED_SECRETS[index % FIXED_SECRETS.len()]);
        }
        let mut cut_points: Vec<usize> = cuts
            .iter()
            .map(|cut| (*cut).min(with_secrets.len()))
            .filter(|cut| with_secrets.is_char_boundary(*cut))
            .collect();
        cut_points.sort_unstable();
        let mut stream = redactor.stream();
        let mut output = String::new();
        let mut previous = 0;
        for cut in cut_points {
            output.push_str(stream.push(&with_secrets[previous..cut]).as_str());
            previous = cut;
        }
        output.push_str(stream.push(&with_secrets[previous..]).as_str());
        output.push_str(stream.finish().as_str());
        let whole = redactor.scrub(&with_secrets);
        prop_assert_eq!(&output, whole.as_str());
        for secret in FIXED_SECRETS {
            prop_assert!(!output.contains(secret));
        }
    }

    #[test]
    fn g17_text_without_secrets_is_unchanged(text in "\\PC{0,400}") {
        let redactor = redactor_for("run-prop-clean", FIXED_SECRETS);
        let scrubbed = redactor.scrub(&text);
        prop_assert_eq!(scrubbed.as_str(), text.as_str());
        prop_assert!(!redactor.holds_secret(text.as_bytes()));
    }
}
