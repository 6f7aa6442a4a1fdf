//! Definitions checked against an account: `model: NAME/MODEL_ID` names a provider the
//! account has (a bare id its default), and no script is handed a model key.

use spec::{AccountNames, ModelRef, parse_agent_for_account, parse_workflow_for_account};

fn account() -> AccountNames {
    AccountNames {
        model_providers: vec!["anthropic".to_owned(), "local-llama".to_owned()],
        default_provider: Some("anthropic".to_owned()),
        people: None,
    }
}

fn agent(front_matter: &str) -> String {
    format!("---\nname: helper\ndescription: Helps with refunds.\n{front_matter}---\nYou help.\n")
}

#[test]
fn a_model_is_split_at_the_first_slash() {
    assert_eq!(
        ModelRef::parse("anthropic/claude-sonnet-4-5"),
        ModelRef {
            provider: Some("anthropic"),
            model: "claude-sonnet-4-5"
        }
    );
    assert_eq!(
        ModelRef::parse("local-llama/meta-llama/Llama-3.1-8B"),
        ModelRef {
            provider: Some("local-llama"),
            model: "meta-llama/Llama-3.1-8B"
        }
    );
    assert_eq!(
        ModelRef::parse("claude-sonnet-4-5"),
        ModelRef {
            provider: None,
            model: "claude-sonnet-4-5"
        }
    );
}

#[test]
fn a_model_of_a_configured_provider_or_a_bare_id_with_a_default_is_accepted() {
    for model in [
        "anthropic/claude-sonnet-4-5",
        "local-llama/meta-llama/Llama-3.1-8B",
        "claude-sonnet-4-5",
    ] {
        let text = agent(&format!("model: {model}\n"));
        parse_agent_for_account("AGENT.md", &text, &spec::LimitMaxima::BUILT_IN, &account())
            .unwrap();
    }
}

#[test]
fn an_unknown_provider_is_an_error_naming_the_accounts_providers() {
    let text = agent("model: meta-llama/Llama-3.1-8B\n");
    let diagnostics =
        parse_agent_for_account("AGENT.md", &text, &spec::LimitMaxima::BUILT_IN, &account())
            .unwrap_err();
    assert_eq!(diagnostics.len(), 1);
    let found = &diagnostics[0];
    assert_eq!(found.code, "unknown-model-provider");
    assert_eq!((found.line, found.column), (4, 8));
    assert!(
        found.help.contains("PROVIDER/meta-llama/Llama-3.1-8B"),
        "{}",
        found.help
    );
    assert!(
        found.help.contains("anthropic, local-llama"),
        "{}",
        found.help
    );
    // The same file is valid without an account: the split alone is not an error.
    spec::parse_agent("AGENT.md", &text).unwrap();
}

#[test]
fn a_bare_model_id_without_a_default_provider_is_an_error() {
    let no_default = AccountNames {
        default_provider: None,
        ..account()
    };
    let text = agent("model: claude-sonnet-4-5\n");
    let diagnostics =
        parse_agent_for_account("AGENT.md", &text, &spec::LimitMaxima::BUILT_IN, &no_default)
            .unwrap_err();
    assert_eq!(diagnostics[0].code, "no-default-model-provider");
    assert!(diagnostics[0].help.contains("stepward models default"));
}

#[test]
fn an_account_without_providers_does_not_check_models() {
    let text = agent("model: claude-sonnet-4-5\n");
    parse_agent_for_account(
        "AGENT.md",
        &text,
        &spec::LimitMaxima::BUILT_IN,
        &AccountNames::default(),
    )
    .unwrap();
    let text = agent("model: anyone/claude-sonnet-4-5\n");
    parse_agent_for_account(
        "AGENT.md",
        &text,
        &spec::LimitMaxima::BUILT_IN,
        &AccountNames::default(),
    )
    .unwrap();
}

#[test]
fn g19_an_agent_secret_that_names_a_model_key_is_an_error() {
    let text = agent("secrets: [GITHUB_TOKEN, ANTHROPIC, LOCAL_LLAMA]\n");
    let diagnostics =
        parse_agent_for_account("AGENT.md", &text, &spec::LimitMaxima::BUILT_IN, &account())
            .unwrap_err();
    let codes: Vec<(&str, u32, u32)> = diagnostics
        .iter()
        .map(|diagnostic| (diagnostic.code, diagnostic.line, diagnostic.column))
        .collect();
    assert_eq!(
        codes,
        [("names-model-key", 4, 25), ("names-model-key", 4, 36)]
    );
    assert!(diagnostics[0].message.contains("provider `anthropic`"));
    assert!(diagnostics[0].help.contains("never reaches a script"));
}

#[test]
fn g19_a_workflow_connection_that_names_a_model_key_is_an_error() {
    let text = "name: refund\npython: \"3.11\"\nsteps:\n  - id: send\n    explain: Sends it.\n    network: public_egress\n    connections: [payments, local_llama]\n    code: |\n      def main():\n          return 1\n";
    let diagnostics = parse_workflow_for_account(
        "refund.yaml",
        text,
        &spec::LimitMaxima::BUILT_IN,
        &account(),
    )
    .unwrap_err();
    assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
    assert_eq!(diagnostics[0].code, "names-model-key");
    assert_eq!((diagnostics[0].line, diagnostics[0].column), (7, 29));
    spec::parse_workflow("refund.yaml", text).unwrap();
    // An account without providers has nothing to collide with.
    parse_workflow_for_account(
        "refund.yaml",
        text,
        &spec::LimitMaxima::BUILT_IN,
        &AccountNames::default(),
    )
    .unwrap();
}

#[test]
fn the_accounts_problems_come_with_the_files_own() {
    let text = agent("secrets: [ANTHROPIC, lower]\n");
    let diagnostics =
        parse_agent_for_account("AGENT.md", &text, &spec::LimitMaxima::BUILT_IN, &account())
            .unwrap_err();
    let codes: Vec<&str> = diagnostics
        .iter()
        .map(|diagnostic| diagnostic.code)
        .collect();
    assert_eq!(codes, ["names-model-key", "invalid-secret-name"]);
}
