//! Property tests: arbitrary bytes and mutated fixtures never panic either parser, and every
//! diagnostic's position lies inside the input.

use std::path::Path;

use proptest::prelude::*;

fn assert_positions_inside(text: &str, diagnostics: &[spec::Diagnostic]) {
    let lines: Vec<&str> = text.split('\n').collect();
    for diagnostic in diagnostics {
        assert_ne!(
            diagnostic.code, "yaml-parser-failure",
            "the YAML parser panicked on {text:?}"
        );
        let line_index = usize::try_from(diagnostic.line).unwrap() - 1;
        assert!(line_index < lines.len(), "{diagnostic:?} in {text:?}");
        let line = lines[line_index]
            .strip_suffix('\r')
            .unwrap_or(lines[line_index]);
        let column = usize::try_from(diagnostic.column).unwrap();
        assert!(
            column >= 1 && column <= line.chars().count() + 1,
            "{diagnostic:?} in {text:?}"
        );
    }
}

fn parse_both(text: &str) {
    if let Err(diagnostics) = spec::parse_workflow("fuzz.yaml", text) {
        assert!(!diagnostics.is_empty());
        assert_positions_inside(text, &diagnostics);
    }
    if let Err(diagnostics) = spec::parse_agent("AGENT.md", text) {
        assert!(!diagnostics.is_empty());
        assert_positions_inside(text, &diagnostics);
    }
}

fn seeds() -> Vec<String> {
    let mut seeds = Vec::new();
    for kind in ["ok", "err"] {
        let directory = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("test_data")
            .join(kind);
        for entry in std::fs::read_dir(directory).unwrap() {
            let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
            if text.len() < 20_000 {
                seeds.push(text);
            }
        }
    }
    seeds.sort();
    seeds
}

/// One edit of a seed file, in characters YAML gives meaning to.
#[derive(Debug, Clone)]
enum Mutation {
    Insert { at: usize, text: String },
    Delete { at: usize, length: usize },
    DuplicateLine { line: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let yaml_text = prop::collection::vec(
        prop::sample::select(vec![
            ":", " ", "-", "[", "]", "{", "}", "&a", "*a", "<<", "!", "|", ">", "'", "\"", "#",
            "\n", "\t", "?", ",", "---", "\u{200b}", "é", "\r", "%", "@", "`", "token", "0x",
        ]),
        1..4,
    )
    .prop_map(|parts| parts.concat());
    prop_oneof![
        (any::<usize>(), yaml_text).prop_map(|(at, text)| Mutation::Insert { at, text }),
        (any::<usize>(), 1usize..12).prop_map(|(at, length)| Mutation::Delete { at, length }),
        any::<usize>().prop_map(|line| Mutation::DuplicateLine { line }),
    ]
}

fn apply(seed: &str, mutations: &[Mutation]) -> String {
    let mut characters: Vec<char> = seed.chars().collect();
    for mutation in mutations {
        match mutation {
            Mutation::Insert { at, text } => {
                let at = at % (characters.len() + 1);
                characters.splice(at..at, text.chars());
            }
            Mutation::Delete { at, length } => {
                if !characters.is_empty() {
                    let at = at % characters.len();
                    let end = (at + length).min(characters.len());
                    characters.drain(at..end);
                }
            }
            Mutation::DuplicateLine { line } => {
                let text: String = characters.iter().collect();
                let lines: Vec<&str> = text.split_inclusive('\n').collect();
                if !lines.is_empty() {
                    let index = line % lines.len();
                    let mut rebuilt = String::new();
                    for (position, part) in lines.iter().enumerate() {
                        rebuilt.push_str(part);
                        if position == index {
                            rebuilt.push_str(part);
                        }
                    }
                    characters = rebuilt.chars().collect();
                }
            }
        }
    }
    characters.into_iter().collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn g1_arbitrary_bytes_never_panic_and_locations_stay_inside(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let text = String::from_utf8_lossy(&bytes);
        parse_both(&text);
    }

    #[test]
    fn g1_mutated_fixtures_never_panic_and_locations_stay_inside(
        seed_index in any::<usize>(),
        mutations in prop::collection::vec(mutation(), 1..6),
    ) {
        let seeds = seeds();
        let text = apply(&seeds[seed_index % seeds.len()], &mutations);
        parse_both(&text);
    }
}
