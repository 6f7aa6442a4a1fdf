//! G17: a value split across two or three stream chunks, at every offset, never survives, and a
//! stream scrubs exactly like the whole text at once.

use crate::common::{
    TABLE_SECRETS, all_encodings, assert_nothing_survives, print_with, redactor_for,
};

fn char_boundaries(text: &str) -> Vec<usize> {
    (0..=text.len())
        .filter(|offset| text.is_char_boundary(*offset))
        .collect()
}

#[test]
fn g17_secret_split_across_two_chunks_at_every_offset() {
    let redactor = redactor_for("run-stream-2", TABLE_SECRETS);
    for secret in TABLE_SECRETS {
        for encoding in all_encodings() {
            let printed = print_with(secret, encoding);
            let whole = redactor.scrub(&printed.text);
            for cut in char_boundaries(&printed.text) {
                let mut stream = redactor.stream();
                let mut output = stream.push(&printed.text[..cut]).into_inner();
                output.push_str(stream.push(&printed.text[cut..]).as_str());
                output.push_str(stream.finish().as_str());
                let context = format!("{secret:?} as {encoding:?} cut at {cut}");
                assert_nothing_survives(&output, &printed.forbidden, &context);
                assert_eq!(&output, whole.as_str(), "{context}");
            }
        }
    }
}

#[test]
fn g17_secret_split_across_three_chunks_at_every_offset_pair() {
    // The multi-line PEM value (the last) is long enough that every pair of cuts takes minutes
    // unoptimised; it is cut at every single offset in the two-chunk test above.
    let secrets = &TABLE_SECRETS[..TABLE_SECRETS.len() - 1];
    let redactor = redactor_for("run-stream-3", secrets);
    for secret in secrets {
        for encoding in all_encodings() {
            let printed = print_with(secret, encoding);
            let whole = redactor.scrub(&printed.text);
            let cuts = char_boundaries(&printed.text);
            for (index, first) in cuts.iter().enumerate() {
                for second in &cuts[index..] {
                    let mut stream = redactor.stream();
                    let mut output = stream.push(&printed.text[..*first]).into_inner();
                    output.push_str(stream.push(&printed.text[*first..*second]).as_str());
                    output.push_str(stream.push(&printed.text[*second..]).as_str());
                    output.push_str(stream.finish().as_str());
                    assert_eq!(
                        &output,
                        whole.as_str(),
                        "{secret:?} as {encoding:?} cut at {first},{second}"
                    );
                }
            }
        }
    }
}

#[test]
fn g17_stream_holds_back_less_than_the_longest_form() {
    let secret = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c";
    let redactor = redactor_for("run-holdback", &[secret]);
    let mut stream = redactor.stream();
    let mut output = String::new();
    for _ in 0..1000 {
        output.push_str(stream.push("ordinary output line\n").as_str());
        // Longest form is the ASCII-only JSON / percent encoding, at most 3x the value here.
        assert!(stream.held_back_bytes() < 3 * secret.len() + 4);
    }
    output.push_str(stream.finish().as_str());
    assert_eq!(output, "ordinary output line\n".repeat(1000));
}

#[test]
fn g17_stream_one_byte_at_a_time() {
    let secret = "p@ss w/rd+&=?#%\"\\ ünï 🦀 tail";
    let redactor = redactor_for("run-bytes", &[secret]);
    let text = format!("a{secret}b{secret}{secret}c");
    let mut stream = redactor.stream();
    let mut output = String::new();
    for character in text.chars() {
        output.push_str(stream.push(character.encode_utf8(&mut [0; 4])).as_str());
    }
    output.push_str(stream.finish().as_str());
    assert_eq!(output, "a[REDACTED]b[REDACTED]c");
    assert_eq!(output, redactor.scrub(&text).into_inner());
}
