//! The console's scrolling blocks are reached by the keyboard (console review, point 11: axe's
//! `scrollable-region-focusable`, one serious violation per page that shows long printed
//! output or JSON): every `<pre>` of every template takes the focus (`tabindex="0"`), and the
//! stylesheet shows where it is.

#[test]
fn every_preformatted_block_of_every_template_takes_the_keyboards_focus() {
    let templates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("templates");
    let mut blocks = 0;
    let mut offenders = Vec::new();
    for entry in std::fs::read_dir(&templates).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        for (index, line) in text.lines().enumerate() {
            for (at, _) in line.match_indices("<pre") {
                blocks += 1;
                let tag = &line[at..line[at..].find('>').map_or(line.len(), |end| at + end)];
                if !tag.contains("tabindex=\"0\"") {
                    offenders.push(format!("{}:{}: {tag}>", path.display(), index + 1));
                }
            }
        }
    }
    assert!(
        blocks > 10,
        "too few <pre> blocks were found in {}",
        templates.display()
    );
    assert!(
        offenders.is_empty(),
        "a scrolling block the keyboard cannot reach:\n{}",
        offenders.join("\n")
    );
    let css = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("static/console.css"),
    )
    .unwrap();
    assert!(css.contains("pre:focus-visible"), "the focus is shown");
}
