//! Everything a model controls is bounded before it reaches memory or disk (G10's limits, for
//! the file tools): an `Edit` result is measured before it is built, and `Read` returns at most
//! a page of 256 KiB, with a way to read on inside a line longer than that.

use agent::ToolKind;
use agent::files::{FileTools, MAX_READ_BYTES, MAX_WRITE_BYTES};
use agent::{ReplyOutcome, ToolReply};
use serde_json::{Map, Value, json};
use workspace::StepWriterRules;

fn tools(root: &std::path::Path) -> FileTools {
    FileTools::new(root, "boss", StepWriterRules::new(std::iter::empty()), true).unwrap()
}

fn call(tools: &FileTools, kind: ToolKind, arguments: Value) -> ToolReply {
    let arguments: Map<String, Value> = arguments.as_object().unwrap().clone();
    tools.call(&kind, &arguments)
}

#[test]
fn g10_an_edit_whose_result_would_pass_the_write_bound_is_refused_before_it_is_built() {
    let dir = tempfile::tempdir().unwrap();
    let tools = tools(dir.path());
    let seed = "a".repeat(4000);
    let wrote = call(
        &tools,
        ToolKind::Write,
        json!({"path": "seed.txt", "content": seed}),
    );
    assert_eq!(wrote.outcome, ReplyOutcome::Ok, "{}", wrote.content);
    // The review's call: 4,000 occurrences, each replaced by 1,000 bytes: 4,000,000 bytes,
    // under the bound; then by 30 bytes each: 120,000,000 bytes, far over it.
    let first = call(
        &tools,
        ToolKind::Edit,
        json!({"path": "seed.txt", "old_string": "a", "new_string": "a".repeat(1000), "replace_all": true}),
    );
    assert_eq!(first.outcome, ReplyOutcome::Ok, "{}", first.content);
    let second = call(
        &tools,
        ToolKind::Edit,
        json!({"path": "seed.txt", "old_string": "a", "new_string": "a".repeat(30), "replace_all": true}),
    );
    assert_eq!(second.outcome, ReplyOutcome::Error, "{}", second.content);
    assert!(
        second.content.contains(&MAX_WRITE_BYTES.to_string()),
        "the refusal names the bound: {}",
        second.content
    );
    let size = std::fs::metadata(dir.path().join("seed.txt"))
        .unwrap()
        .len();
    assert_eq!(size, 4_000_000, "the refused edit changed nothing");
    // One byte over the bound is refused; exactly the bound is written.
    std::fs::write(dir.path().join("edge.txt"), "b".repeat(MAX_WRITE_BYTES - 1)).unwrap();
    let over = call(
        &tools,
        ToolKind::Edit,
        json!({"path": "edge.txt", "old_string": "bb", "new_string": "bbbb"}),
    );
    assert_eq!(over.outcome, ReplyOutcome::Error, "{}", over.content);
    let exact = call(
        &tools,
        ToolKind::Edit,
        json!({"path": "edge.txt", "old_string": "bbb", "new_string": "bbbb"}),
    );
    assert_eq!(
        exact.outcome,
        ReplyOutcome::Error,
        "several occurrences, no replace_all"
    );
    std::fs::write(
        dir.path().join("edge.txt"),
        format!("{}c", "b".repeat(MAX_WRITE_BYTES - 2)),
    )
    .unwrap();
    let to_bound = call(
        &tools,
        ToolKind::Edit,
        json!({"path": "edge.txt", "old_string": "c", "new_string": "cd"}),
    );
    assert_eq!(to_bound.outcome, ReplyOutcome::Ok, "{}", to_bound.content);
    let size = std::fs::metadata(dir.path().join("edge.txt"))
        .unwrap()
        .len();
    assert_eq!(size as usize, MAX_WRITE_BYTES);
}

/// The number in `(... call Read with KEY N to read on)`, when the page says one.
fn read_on(reply: &ToolReply, key: &str) -> Option<u64> {
    let marker = format!("call Read with {key} ");
    let at = reply.content.rfind(&marker)? + marker.len();
    reply.content[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// What a page shows, without its closing note.
fn page_text(reply: &ToolReply) -> &str {
    match reply.content.rfind("\n\n(") {
        Some(at) => &reply.content[..=at],
        None => &reply.content,
    }
}

#[test]
fn g10_a_read_returns_at_most_a_page_and_reads_on_inside_a_long_line() {
    let dir = tempfile::tempdir().unwrap();
    let tools = tools(dir.path());
    // One line of 1 MiB of multi-byte characters (so a page cut lands inside one), then two
    // short lines.
    let long: String = "é".repeat(512 * 1024);
    let text = format!("{long}\nsecond\nthird\n");
    std::fs::write(dir.path().join("long.txt"), &text).unwrap();
    let mut reply = call(&tools, ToolKind::Read, json!({"path": "long.txt"}));
    let mut gathered = String::new();
    let mut pages = 0;
    loop {
        pages += 1;
        assert!(pages < 20, "paging did not end");
        assert_eq!(reply.outcome, ReplyOutcome::Ok, "{}", reply.content);
        let shown = page_text(&reply);
        assert!(
            shown.len() as u64 <= MAX_READ_BYTES,
            "page {pages} holds {} bytes",
            shown.len()
        );
        if let Some(next) = read_on(&reply, "from_byte") {
            // A part of the long line: the line goes on in the next page.
            gathered.push_str(shown.strip_suffix('\n').unwrap_or(shown));
            reply = call(
                &tools,
                ToolKind::Read,
                json!({"path": "long.txt", "from_byte": next}),
            );
            continue;
        }
        gathered.push_str(shown);
        if let Some(line) = read_on(&reply, "offset") {
            reply = call(
                &tools,
                ToolKind::Read,
                json!({"path": "long.txt", "offset": line}),
            );
            continue;
        }
        break;
    }
    assert!(pages >= 5, "1 MiB came in {pages} pages");
    // Compared by length and digest-free equality, so a failure does not print a MiB.
    assert_eq!(gathered.len(), text.len(), "paging read the whole file");
    assert!(
        gathered == text,
        "paging read the file in order, nothing skipped or doubled"
    );
}

#[test]
fn g10_a_read_of_lines_far_into_a_large_file_reaches_them() {
    let dir = tempfile::tempdir().unwrap();
    let tools = tools(dir.path());
    let text: String = (1..=200_000).map(|n| format!("line {n}\n")).collect();
    assert!(text.len() > 2 * 1024 * 1024);
    std::fs::write(dir.path().join("many.txt"), &text).unwrap();
    let reply = call(
        &tools,
        ToolKind::Read,
        json!({"path": "many.txt", "offset": 199_999, "limit": 5}),
    );
    assert_eq!(
        page_text(&reply),
        "line 199999\nline 200000\n",
        "{}",
        reply.content
    );
    let past = call(
        &tools,
        ToolKind::Read,
        json!({"path": "many.txt", "offset": 300_000}),
    );
    assert!(
        past.content.contains("fewer than 300000 lines"),
        "{}",
        past.content
    );
}

/// agents review, finding 5: a hostile endpoint's 3,000,000-character tool name and
/// 1,000,000-character path went into the record whole (a 9 MB event), and back to the model
/// on every later turn; finding 10: a model-chosen call id like `c1/helper/x` read as a
/// colleague's call. Every string a model controls is bounded before it reaches the journal or
/// the next request, and a call id is one the record cannot misread.
#[tokio::test]
async fn g25_what_a_model_names_is_bounded_in_the_record_and_the_next_request() {
    use crate::looping::{KINDS, Record, run};
    use fake_model::ScriptTurn;
    for kind in KINDS {
        let mut journal = Record::default();
        let (report, _ran, fake) = run(
            kind,
            vec![
                ScriptTurn::call(&"Z".repeat(3_000_000), json!({}))
                    .with_call("Read", json!({"path": "q".repeat(1_000_000)}))
                    .with_call_id("c1/helper/x"),
                ScriptTurn::text("done"),
            ],
            // The fake counts a token per few bytes: room for the hostile turn.
            Some(agent::Limits {
                turns: 10,
                tokens: 100_000_000,
                step_time: std::time::Duration::from_secs(60),
                tool_time: std::time::Duration::from_secs(10),
            }),
            &mut journal,
        )
        .await;
        for line in &journal.log {
            assert!(
                line.len() <= 64 * 1024,
                "{kind:?}: a {}-byte journal line",
                line.len()
            );
            assert!(
                !line.contains("c1/helper/x"),
                "{kind:?}: {}",
                &line[..line.len().min(300)]
            );
        }
        let requests = fake.requests();
        assert_eq!(requests.len(), 2, "{kind:?}: {:?}", report.end);
        // The next request replays the model's own calls (the 1 MB path once, as its
        // arguments), but neither the 3 MB name nor a refusal that repeats what it named.
        let second = String::from_utf8_lossy(&requests[1].body).into_owned();
        assert!(
            second.len() < 1_200_000,
            "{kind:?}: the next request is {} bytes",
            second.len()
        );
        assert!(
            !second.contains(&"Z".repeat(100)),
            "{kind:?}: the long name went back"
        );
    }
}

/// A path a file tool refuses is named bounded in the refusal and the reply.
#[test]
fn g25_a_refused_path_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let tools = tools(dir.path());
    let long = format!("/etc/{}", "q".repeat(1_000_000));
    for kind in [ToolKind::Read, ToolKind::Write] {
        let reply = call(&tools, kind.clone(), json!({"path": long, "content": "x"}));
        assert!(reply.content.len() <= 4096, "{} bytes", reply.content.len());
        if let Some(refusal) = &reply.refusal {
            assert!(refusal.path.len() <= 1100, "{} bytes", refusal.path.len());
        }
    }
    let missing = call(&tools, ToolKind::Read, json!({"path": "x".repeat(200_000)}));
    assert!(
        missing.content.len() <= 4096,
        "{} bytes",
        missing.content.len()
    );
}
