//! Where a step's code is written, so a place inside the code (a Python syntax error found by
//! `stepward check`) is reported at the workflow file's own line and column (G5).

const WORKFLOW: &str = "name: origin\npython: \"3.11\"\nsteps:\n  - id: literal\n    explain: Returns one.\n    code: |\n      def main():\n\n          return 1\n  - id: quoted\n    explain: Returns two.\n    code: \"def main():\\n    return 2\\n\"\n";

#[test]
fn g5_a_literal_block_maps_line_for_line_and_other_styles_to_their_start() {
    let workflow = spec::parse_workflow("origin.yaml", WORKFLOW).unwrap();
    let literal = workflow.step("literal").unwrap().body_origin();
    assert!(literal.line_for_line);
    // Line 3 of the code (`    return 1`), column 5, is the file's line 9, column 11.
    assert_eq!(literal.locate(3, 5), (9, 11));
    assert_eq!(literal.locate(1, 1), (7, 7));
    let quoted = workflow.step("quoted").unwrap().body_origin();
    assert!(!quoted.line_for_line);
    assert_eq!(quoted.locate(2, 5), (12, 11));
}

#[test]
fn g5_a_custom_tool_script_is_placed_where_the_agent_file_names_it() {
    let agent = spec::parse_agent(
        "AGENT.md",
        "---\nname: digest\ndescription: Writes a digest.\ntools: [notes]\ncustom_tools:\n  notes:\n    explain: Reads the notes.\n    script: tools/notes.py\n---\nWrite the digest.\n",
    )
    .unwrap();
    let tool = agent.custom_tool("notes").unwrap();
    assert_eq!(tool.script_origin().locate(1, 1), (8, 13));
}
