//! The repository's own pages (issue 12, 12 and 13): the workflow format's reference page is
//! kept in step with `stepward schema`, README links the pages a newcomer needs, and no page
//! points to a file outside the repository.

use crate::support::{repo_root, stdout};

fn page(path: &str) -> String {
    std::fs::read_to_string(repo_root().join(path)).unwrap_or_default()
}

/// Every key and every enumerated value of the JSON Schema, as the schema names them.
fn schema_words(node: &serde_json::Value, found: &mut Vec<String>) {
    match node {
        serde_json::Value::Object(map) => {
            if let Some(serde_json::Value::Object(properties)) = map.get("properties") {
                found.extend(properties.keys().cloned());
            }
            if let Some(serde_json::Value::Array(values)) = map.get("enum") {
                found.extend(
                    values
                        .iter()
                        .filter_map(|value| value.as_str().map(str::to_owned)),
                );
            }
            for value in map.values() {
                schema_words(value, found);
            }
        }
        serde_json::Value::Array(items) => {
            for item in items {
                schema_words(item, found);
            }
        }
        _ => {}
    }
}

#[test]
fn docs_workflows_md_names_every_key_and_value_of_stepward_schema() {
    let schema: serde_json::Value =
        serde_json::from_str(&stdout(&crate::support::stepward(&["schema"]))).unwrap();
    let mut words = Vec::new();
    schema_words(&schema, &mut words);
    words.sort();
    words.dedup();
    assert!(words.len() > 15, "{words:?}");
    let reference = page("docs/workflows.md");
    let missing: Vec<&String> = words
        .iter()
        .filter(|word| !reference.contains(&format!("`{word}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/workflows.md does not describe {missing:?}"
    );
    for topic in ["`!`", "`from:`", "`def main", "`agent:`", "limits"] {
        assert!(reference.contains(topic), "docs/workflows.md lacks {topic}");
    }
}

#[test]
fn readme_links_the_reference_pages() {
    let readme = page("README.md");
    for linked in [
        "docs/workflows.md",
        "docs/self-hosting.md",
        "docs/guarantees.md",
    ] {
        assert!(readme.contains(linked), "README.md does not link {linked}");
        assert!(
            repo_root().join(linked).is_file(),
            "{linked} does not exist"
        );
    }
    let hosting = page("docs/self-hosting.md");
    for topic in [
        "--backend local",
        "--backend gvisor",
        "--backend unisolated",
        "--egress-resolver",
        "root key",
        "back",
        "server-keys",
        "--tls-cert",
    ] {
        assert!(
            hosting.contains(topic),
            "docs/self-hosting.md lacks {topic}"
        );
    }
    let guarantees = page("docs/guarantees.md");
    for number in 1..=27 {
        assert!(
            guarantees.contains(&format!("G{number}.")),
            "docs/guarantees.md lacks G{number}"
        );
    }
}

#[test]
fn no_page_points_outside_the_repository() {
    let mut pages = vec!["README.md".to_owned(), "ARCHITECTURE.md".to_owned()];
    for entry in std::fs::read_dir(repo_root().join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|extension| extension == "md") {
            pages.push(format!(
                "docs/{}",
                path.file_name().unwrap().to_string_lossy()
            ));
        }
    }
    for name in pages {
        let text = page(&name);
        for outside in ["../shared", "/work/", "shared/DESIGN.md", "seeds/"] {
            assert!(
                !text.contains(outside),
                "{name} points outside the repository: {outside}"
            );
        }
    }
}
