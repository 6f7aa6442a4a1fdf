//! A definition holds nothing that would show a reader something other than what runs (sandbox
//! review 3, finding 4, its class): a bidirectional control (U+202E and the rest, "Trojan
//! Source") or a control character other than the tab and the line break is refused at its
//! line and column, in a workflow and anywhere in an agent file. The CLI can then print any
//! valid definition exactly as it is.

const WORKFLOW: &str = "name: shown\npython: \"3.11\"\nsteps:\n  - id: check\n    explain: Checks the user.\n    code: |\n      def main():\n          is_admin = False\n          # CHECK\n          return is_admin\n";

#[test]
fn g5_a_bidi_control_or_a_control_character_in_a_workflow_is_refused_where_it_is() {
    for (written, code) in [
        ("\u{202e}", "bidi-control"),
        ("\u{2066}", "bidi-control"),
        ("\u{200f}", "bidi-control"),
        ("\u{1b}[2J", "control-character"),
        ("\u{9b}", "control-character"),
        ("\u{7f}", "control-character"),
        ("\u{85}", "control-character"),
    ] {
        let text = WORKFLOW.replace("CHECK", &format!("admins only {written}end"));
        let diagnostics = spec::parse_workflow("shown.yaml", &text).unwrap_err();
        let found = diagnostics
            .iter()
            .find(|diagnostic| diagnostic.code == code)
            .unwrap_or_else(|| panic!("{written:?}: {diagnostics:?}"));
        // Line 9, after `          # admins only `.
        assert_eq!(
            (found.line, found.column),
            (9, 25),
            "{written:?}: {found:?}"
        );
        assert!(found.message.contains(&format!(
            "U+{:04X}",
            u32::from(written.chars().next().unwrap())
        )));
    }
}

#[test]
fn g5_tabs_and_either_line_ending_are_what_a_definition_may_hold() {
    let tabbed = WORKFLOW.replace("# CHECK", "x = '\t'");
    assert!(spec::parse_workflow("tabs.yaml", &tabbed).is_ok());
    let windows = WORKFLOW.replace('\n', "\r\n");
    assert!(spec::parse_workflow("crlf.yaml", &windows).is_ok());
    let lone = WORKFLOW.replace("# CHECK", "# a\rb");
    let diagnostics = spec::parse_workflow("cr.yaml", &lone).unwrap_err();
    assert!(
        diagnostics.iter().any(|d| d.code == "control-character"),
        "{diagnostics:?}"
    );
}

#[test]
fn g5_an_agent_file_holds_no_bidi_control_in_its_front_matter_or_its_prompt() {
    let front =
        "---\nname: digest\ndescription: Writes a digest.\u{202e}\n---\nWrite the digest.\n";
    let body = "---\nname: digest\ndescription: Writes a digest.\n---\nWrite the \u{2067}digest.\n";
    for (text, line) in [(front, 3), (body, 5)] {
        let diagnostics = spec::parse_agent("AGENT.md", text).unwrap_err();
        assert!(
            diagnostics
                .iter()
                .any(|d| d.code == "bidi-control" && d.line == line),
            "{diagnostics:?}"
        );
    }
}

#[test]
fn g5_a_file_full_of_them_gets_a_bounded_number_of_diagnostics() {
    let text = WORKFLOW.replace("CHECK", &"\u{202e}".repeat(10_000));
    let diagnostics = spec::parse_workflow("many.yaml", &text).unwrap_err();
    assert!(diagnostics.len() <= 5, "{}", diagnostics.len());
}
