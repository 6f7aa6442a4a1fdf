//! G22, hostile first: each escape class that shipped as a CVE in another agent runtime
//! (`research/agents.md` §2.1), against the file tools over a real folder.

use std::os::unix::fs::symlink;
use std::path::Path;

use agent::ToolKind;
use agent::files::FileTools;
use agent::{ReplyOutcome, ToolReply};
use serde_json::{Map, Value, json};
use workspace::{RelPath, StepWriterRules};

struct Fixture {
    _dir: tempfile::TempDir,
    root: std::path::PathBuf,
    outside: std::path::PathBuf,
}

/// A view of the agent `digest` (its folder at the root, `shared/`, `library/`) with a
/// sibling folder `work_extra` beside it and a secret file outside.
fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("work");
    let outside = dir.path().join("work_extra");
    for folder in ["tools", "shared/notes", "library/ref"] {
        std::fs::create_dir_all(root.join(folder)).unwrap();
    }
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "outside-secret").unwrap();
    std::fs::write(root.join("AGENT.md"), "---\nname: digest\n---\n").unwrap();
    std::fs::write(root.join("tools/release_notes.py"), "def main(): pass\n").unwrap();
    std::fs::write(root.join("shared/notes/week.md"), "Monday: shipped\n").unwrap();
    std::fs::write(root.join("library/ref/guide.md"), "read only\n").unwrap();
    Fixture {
        _dir: dir,
        root,
        outside,
    }
}

fn tools(root: &Path) -> FileTools {
    let scripts = [
        "agents/digest/tools/release_notes.py",
        "agents/digest/tools/later.py",
    ]
    .iter()
    .map(|path| RelPath::parse(path).unwrap());
    FileTools::new(root, "digest", StepWriterRules::new(scripts), true).unwrap()
}

fn args(value: Value) -> Map<String, Value> {
    value.as_object().unwrap().clone()
}

fn read(tools: &FileTools, path: &str) -> ToolReply {
    tools.call(&ToolKind::Read, &args(json!({ "path": path })))
}

fn write(tools: &FileTools, path: &str, content: &str) -> ToolReply {
    tools.call(
        &ToolKind::Write,
        &args(json!({ "path": path, "content": content })),
    )
}

fn assert_refused(reply: &ToolReply, why: &str) {
    assert_eq!(
        reply.outcome,
        ReplyOutcome::Refused,
        "{why}: {}",
        reply.content
    );
    assert!(
        !reply.content.contains("outside-secret"),
        "{why}: {}",
        reply.content
    );
}

#[test]
fn g22_a_prefix_sibling_is_refused_cve_2025_53110() {
    let fixture = fixture();
    let tools = tools(&fixture.root);
    assert_refused(&read(&tools, "/work_extra/secret.txt"), "absolute sibling");
    assert_refused(
        &read(&tools, "../work_extra/secret.txt"),
        "relative sibling",
    );
    assert_refused(
        &write(&tools, "/work_extra/new.txt", "x"),
        "write to sibling",
    );
    assert!(!fixture.outside.join("new.txt").exists());
}

#[test]
fn g22_dot_dot_and_absolute_paths_are_refused_with_the_relative_form_suggested() {
    let fixture = fixture();
    let tools = tools(&fixture.root);
    assert_refused(&read(&tools, "shared/../../work_extra/secret.txt"), "..");
    assert_refused(&read(&tools, "/etc/passwd"), "absolute outside");
    let inside = read(&tools, "/work/shared/notes/week.md");
    assert_refused(&inside, "absolute inside");
    assert_eq!(
        inside.refusal.unwrap().suggestion.as_deref(),
        Some("shared/notes/week.md")
    );
}

#[test]
fn g22_an_invented_path_gets_the_probable_one_and_a_near_miss_the_nearest() {
    let fixture = fixture();
    let tools = tools(&fixture.root);
    let invented = read(&tools, "/tmp/notes/week.md");
    assert_refused(&invented, "invented");
    assert!(
        invented
            .content
            .contains("did you mean `shared/notes/week.md`?"),
        "{}",
        invented.content
    );
    let near = read(&tools, "shared/notes/weak.md");
    assert_eq!(near.outcome, ReplyOutcome::Error, "{}", near.content);
    assert!(
        near.content
            .contains("did you mean `shared/notes/week.md`?"),
        "{}",
        near.content
    );
}

#[test]
fn g22_a_symlink_made_this_step_is_never_followed_cve_2026_39861() {
    let fixture = fixture();
    // What a script of this very step could have made inside the tree.
    symlink(
        fixture.outside.join("secret.txt"),
        fixture.root.join("notes.txt"),
    )
    .unwrap();
    symlink(&fixture.outside, fixture.root.join("out")).unwrap();
    let tools = tools(&fixture.root);
    assert_refused(&read(&tools, "notes.txt"), "file link, read");
    assert_refused(
        &write(&tools, "notes.txt", "overwritten"),
        "file link, write",
    );
    assert_refused(&read(&tools, "out/secret.txt"), "folder link, read");
    assert_refused(&write(&tools, "out/planted.txt", "x"), "folder link, write");
    assert_eq!(
        std::fs::read_to_string(fixture.outside.join("secret.txt")).unwrap(),
        "outside-secret"
    );
    assert!(!fixture.outside.join("planted.txt").exists());
    let edit = tools.call(
        &ToolKind::Edit,
        &args(json!({"path": "notes.txt", "old_string": "outside", "new_string": "x"})),
    );
    assert_refused(&edit, "file link, edit");
    let grep = tools.call(&ToolKind::Grep, &args(json!({"pattern": "outside-secret"})));
    assert!(
        !grep.content.contains("outside-secret:"),
        "{}",
        grep.content
    );
    assert_eq!(grep.content, "no line matches");
}

#[test]
fn g22_a_link_to_a_protected_file_and_a_hard_link_are_refused() {
    let fixture = fixture();
    std::fs::write(fixture.root.join(".secrets"), "KEY=1").unwrap();
    symlink(
        fixture.root.join(".secrets"),
        fixture.root.join("innocent.md"),
    )
    .unwrap();
    std::fs::hard_link(
        fixture.outside.join("secret.txt"),
        fixture.root.join("hard.txt"),
    )
    .unwrap();
    let tools = tools(&fixture.root);
    assert_refused(&read(&tools, "innocent.md"), "link to .secrets");
    assert_refused(&read(&tools, ".secrets"), ".secrets itself");
    assert_refused(&read(&tools, "hard.txt"), "hard link");
    assert_refused(&write(&tools, "hard.txt", "x"), "hard link write");
}

#[test]
fn g22_protected_paths_are_refused_even_before_they_exist_cve_2026_25725() {
    let fixture = fixture();
    std::fs::remove_file(fixture.root.join("AGENT.md")).unwrap();
    let tools = tools(&fixture.root);
    for (path, why) in [
        ("AGENT.md", "the agent file, not yet created"),
        ("agent.md", "a case variant of it"),
        ("tools/release_notes.py", "a named script"),
        ("tools/later.py", "a named script not yet created"),
        (".secrets", "the secrets file"),
        (".journal/x", "the journal"),
        ("knowledge/docs/index/a", "a knowledge index"),
        ("library/ref/guide.md", "the read-only library"),
        ("library/new.md", "a new file in the library"),
    ] {
        assert_refused(&write(&tools, path, "planted"), why);
    }
    assert!(!fixture.root.join("AGENT.md").exists());
    assert!(!fixture.root.join("tools/later.py").exists());
    assert_eq!(
        std::fs::read_to_string(fixture.root.join("library/ref/guide.md")).unwrap(),
        "read only\n"
    );
    let fine = write(&tools, "drafts/digest.md", "ok");
    assert_eq!(fine.outcome, ReplyOutcome::Ok, "{}", fine.content);
    let shared = write(&tools, "shared/notes/digest.md", "ok");
    assert_eq!(shared.outcome, ReplyOutcome::Ok, "{}", shared.content);
}

#[test]
fn g22_a_read_only_agent_cannot_write_at_all() {
    let fixture = fixture();
    let tools = FileTools::new(&fixture.root, "digest", StepWriterRules::default(), false).unwrap();
    assert_refused(&write(&tools, "drafts/x.md", "x"), "read-only tree");
    assert!(!fixture.root.join("drafts").exists());
}

#[test]
fn g22_grep_and_glob_are_bounded_and_say_so_and_read_pages_and_describes_binaries() {
    let fixture = fixture();
    let many: String = (0..300).map(|line| format!("match {line}\n")).collect();
    std::fs::write(fixture.root.join("many.txt"), &many).unwrap();
    for index in 0..250 {
        std::fs::write(fixture.root.join(format!("f{index}.md")), "x").unwrap();
    }
    std::fs::write(fixture.root.join("blob.bin"), [0u8, 159, 146, 150, 0, 1]).unwrap();
    let big: String = (0..5000).map(|line| format!("line {line}\n")).collect();
    std::fs::write(fixture.root.join("big.txt"), &big).unwrap();
    let tools = tools(&fixture.root);
    let grep = tools.call(
        &ToolKind::Grep,
        &args(json!({"pattern": "^match", "path": "many.txt"})),
    );
    assert_eq!(
        grep.content
            .lines()
            .filter(|l| l.starts_with("many.txt:"))
            .count(),
        100
    );
    assert!(
        grep.content
            .contains("(cut: there are more matching lines than 100)"),
        "{}",
        grep.content
    );
    let glob = tools.call(&ToolKind::Glob, &args(json!({"pattern": "*.md"})));
    assert!(
        glob.content
            .contains("(cut: there are more matches than 200)"),
        "{}",
        glob.content
    );
    let binary = read(&tools, "blob.bin");
    assert_eq!(
        binary.content,
        "`blob.bin` is a binary file of 6 bytes; it is not shown"
    );
    let paged = read(&tools, "big.txt");
    assert!(
        paged
            .content
            .contains("call Read with offset 2001 to read on"),
        "{}",
        &paged.content[paged.content.len() - 200..]
    );
    let next = tools.call(
        &ToolKind::Read,
        &args(json!({"path": "big.txt", "offset": 4999, "limit": 5})),
    );
    assert!(
        next.content.starts_with("line 4998\nline 4999\n"),
        "{}",
        next.content
    );
    // A pattern that would take exponential time in a backtracking engine is linear here.
    let hostile = tools.call(&ToolKind::Grep, &args(json!({"pattern": "(a*)*$"})));
    assert_eq!(hostile.outcome, ReplyOutcome::Ok, "{}", hostile.content);
}

#[test]
fn g22_the_helper_process_answers_the_same_as_the_tools() {
    let fixture = fixture();
    let request = agent::helper::HelperRequest {
        root: fixture.root.clone(),
        agent: "digest".into(),
        scripts: vec!["agents/digest/tools/release_notes.py".into()],
        writable: true,
        tool: "Read".into(),
        arguments: args(json!({"path": "/tmp/notes/week.md"})),
    };
    let mut input = serde_json::to_vec(&request).unwrap();
    let mut output = Vec::new();
    assert_eq!(agent::helper::serve(&mut input.as_slice(), &mut output), 0);
    let reply: ToolReply = serde_json::from_slice(&output).unwrap();
    assert_eq!(reply.outcome, ReplyOutcome::Refused);
    assert_eq!(
        reply.refusal.unwrap().suggestion.as_deref(),
        Some("shared/notes/week.md")
    );
    input.clear();
}
