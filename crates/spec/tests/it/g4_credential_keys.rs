//! G4 (review "credentials" A14): a key names a credential when, after NFKC, case folding and
//! the UTS #39 confusable skeleton, its components (split at every non-alphanumeric character,
//! zero-width ones included, and at lower→upper case changes) contain `secret`, `secrets`,
//! `credential`, `credentials`, `token`, `password`, `passwd`, `apikey`, or `api` then `key`.

use spec::is_forbidden_key;

#[test]
fn g4_keys_that_name_a_credential_by_their_components_are_forbidden() {
    for key in [
        "access_token",
        "client_secret",
        "password",
        "db_password",
        "passwd",
        "private_api_key",
        "apiKey",
        "myAPIKey",
        "API-KEY",
        "pageToken",
        "page_token",
        "refresh-token",
        "tok\u{0435}n",
        "access_tok\u{0435}n",
        "T0KEN",
        "secret\u{200b}value",
        "credential_file",
        "user_credentials",
        "t.o.k.e.n",
    ] {
        assert!(is_forbidden_key(key), "{key:?} should be forbidden");
    }
}

#[test]
fn g4_keys_that_only_resemble_one_are_allowed() {
    for key in [
        "key",
        "max_tokens",
        "tokens_used",
        "tokenizer",
        "secretary",
        "api",
        "api_version",
        "key_id",
        "monkey",
        "passport",
        "page_cursor",
        "ticket_id",
    ] {
        assert!(!is_forbidden_key(key), "{key:?} should be allowed");
    }
}

#[test]
fn g4_a_pagination_token_gets_a_rename_suggested() {
    let text = "name: w\npython: \"3.11\"\nsteps:\n  - id: s\n    explain: Lists a page.\n    \
                inputs: { page_token: \"abc\" }\n    code: |\n      def main(page_token):\n          \
                return 1\n";
    let diagnostics = spec::parse_workflow("w.yaml", text).unwrap_err();
    let forbidden = diagnostics
        .iter()
        .find(|diagnostic| diagnostic.code == "forbidden-key")
        .unwrap_or_else(|| panic!("{diagnostics:?}"));
    assert!(forbidden.help.contains("page_cursor"), "{}", forbidden.help);
}
