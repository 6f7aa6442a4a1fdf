//! The console's admin, vault, files, models and sign-in pages in a real browser (issue 14):
//! headless Chromium through chromedriver, as `browser.rs` drives it. Each page is looked at
//! as a person would (what it says, a screenshot at a laptop's and a phone's width, no
//! accessibility violation of impact `serious` or `critical`), and each form that can be
//! refused keeps what was typed, with the refusal beside it.

use serde_json::json;

use crate::browser::{Browser, PASSWORD, look_at, start_server};
use crate::support::Home;

/// The value of the form field `css` selects, as the browser holds it.
fn value_of(browser: &Browser, css: &str) -> serde_json::Value {
    browser.execute(&format!(
        "return document.querySelector({}).value;",
        serde_json::to_string(css).unwrap()
    ))
}

#[test]
fn g26_console_admin_vault_files_and_models_pages_in_a_real_browser_needs_root() {
    let home = Home::new();
    let (server, address, sign_in_path) = start_server(&home);
    let base = format!("http://{address}");
    let browser = Browser::start();

    // The welcome page of the one-time link, then the home page it signs in to.
    browser.open(&format!("{base}{sign_in_path}"));
    browser.wait_for("the welcome page", |_, source| {
        source.contains("Welcome, ada")
    });
    look_at(&browser, "welcome");
    browser.type_into(&browser.find("input[name=password]"), PASSWORD);
    browser.type_into(&browser.find("input[name=password_again]"), PASSWORD);
    browser.click(&browser.find("button[type=submit]"));
    browser.wait_for("the home page", |_, source| {
        source.contains("Signed in as ada (owner)")
    });
    let links = browser.text(&browser.find("main nav"));
    for page in [
        "People and roles",
        "API keys",
        "Vault",
        "Models",
        "Audit log",
    ] {
        assert!(
            links.contains(page),
            "the owner's home links {page}: {links}"
        );
    }
    look_at(&browser, "home-empty");

    // People: an invitation refused keeps what was typed, with the refusal beside the form.
    browser.open(&format!("{base}/people"));
    browser.wait_for("the people page", |_, source| {
        source.contains("<h1>People</h1>")
    });
    assert!(
        browser
            .text(&browser.find("main"))
            .contains("You are the only person here."),
        "the empty state says what to do next"
    );
    look_at(&browser, "people-alone");
    browser.type_into(&browser.find("#invite-name"), "Ola Nordmann");
    browser.type_into(&browser.find("#invite-email"), "ada@example.test");
    browser.click(&browser.find("form[action='/people'] button[type=submit]"));
    browser.wait_for("the refused invitation", |_, source| {
        source.contains("id=\"error-invite\"")
    });
    assert_eq!(value_of(&browser, "#invite-name"), json!("Ola Nordmann"));
    assert_eq!(
        value_of(&browser, "#invite-email"),
        json!("ada@example.test")
    );
    browser.type_into(&browser.find("#invite-email"), "ola@example.test");
    browser.click(&browser.find("form[action='/people'] button[type=submit]"));
    browser.wait_for("the invitation's link", |_, source| {
        source.contains("<h1>Invited</h1>")
    });
    assert!(
        browser
            .text(&browser.find("#shown-once"))
            .contains("/welcome/")
    );
    look_at(&browser, "invited");
    browser.open(&format!("{base}/people"));
    browser.wait_for("the people page", |_, source| {
        source.contains("Ola Nordmann")
    });
    let people = browser.text(&browser.find("tbody"));
    assert!(
        people.contains("Ola Nordmann") && people.contains("not signed in yet"),
        "{people}"
    );
    look_at(&browser, "people");

    // API keys: the empty state, then a key shown once and listed without its secret.
    browser.open(&format!("{base}/keys"));
    browser.wait_for("the keys page", |_, source| {
        source.contains("<h1>API keys</h1>")
    });
    assert!(
        browser
            .text(&browser.find("main"))
            .contains("No API keys yet.")
    );
    look_at(&browser, "keys-empty");
    browser.type_into(&browser.find("#key-name"), "nightly export");
    browser.click(&browser.find("form[action='/keys'] button[type=submit]"));
    browser.wait_for("the new key", |_, source| {
        source.contains("<h1>New API key</h1>")
    });
    let key = browser.text(&browser.find("#shown-once"));
    assert!(key.starts_with("sw_"), "{key}");
    browser.open(&format!("{base}/keys"));
    browser.wait_for("the keys page", |_, source| {
        source.contains("nightly export")
    });
    assert!(!browser.page_source().contains(&key), "a key is shown once");
    look_at(&browser, "keys");

    // The vault: names only; a value set through the form never comes back.
    browser.open(&format!("{base}/vault"));
    browser.wait_for("the vault page", |_, source| {
        source.contains("<h1>Vault</h1>")
    });
    let vault = browser.text(&browser.find("main"));
    for empty in ["No agent secrets.", "No connections.", "No model keys."] {
        assert!(vault.contains(empty), "{empty} in {vault}");
    }
    look_at(&browser, "vault-empty");
    browser.type_into(&browser.find("#secret-name"), "GITHUB_TOKEN");
    browser.type_into(
        &browser.find("#secret-value"),
        "ghp_browserValueNeverShown42",
    );
    browser.click(&browser.find("form[action='/vault/secrets'] button[type=submit]"));
    browser.wait_for("the vault with the secret", |_, source| {
        source.contains("GITHUB_TOKEN")
    });
    assert!(
        !browser
            .page_source()
            .contains("ghp_browserValueNeverShown42")
    );
    look_at(&browser, "vault");

    // Models: the empty state says what a provider is for and how to add one.
    browser.open(&format!("{base}/models"));
    browser.wait_for("the models page", |_, source| {
        source.contains("<h1>Models</h1>")
    });
    assert!(
        browser
            .text(&browser.find("main"))
            .contains("No model provider yet.")
    );
    look_at(&browser, "models");

    // Files: a refused write keeps the path, the contents and the message.
    browser.open(&format!("{base}/files"));
    browser.wait_for("the files page", |_, source| {
        source.contains("<h1>Files</h1>")
    });
    look_at(&browser, "files");
    browser.type_into(&browser.find("#write-path"), ".secrets");
    browser.type_into(&browser.find("#write-content"), "line one\nline two");
    browser.type_into(&browser.find("#write-message"), "a first plan");
    browser.click(&browser.find("form[action='/files'] button[type=submit]"));
    browser.wait_for("the refused write", |_, source| {
        source.contains("id=\"error-write\"")
    });
    assert!(
        browser
            .text(&browser.find("#error-write"))
            .contains("protected"),
        "the refusal says why"
    );
    assert_eq!(value_of(&browser, "#write-path"), json!(".secrets"));
    assert_eq!(
        value_of(&browser, "#write-content"),
        json!("line one\nline two")
    );
    assert_eq!(value_of(&browser, "#write-message"), json!("a first plan"));
    browser.type_into(&browser.find("#write-path"), "notes/plan <b>.txt");
    browser.click(&browser.find("form[action='/files'] button[type=submit]"));
    browser.wait_for("the written file", |url, _| {
        url.contains("/files/view?path=")
    });
    assert_eq!(
        browser.text(&browser.find("h1")),
        "notes/plan <b>.txt",
        "a name with markup is shown as text"
    );
    assert_eq!(browser.text(&browser.find("pre")), "line one\nline two");
    look_at(&browser, "file");

    // Sessions, share links and an error page.
    browser.open(&format!("{base}/sessions"));
    browser.wait_for("the sessions page", |_, source| {
        source.contains("(this one)")
    });
    look_at(&browser, "sessions");
    browser.open(&format!("{base}/shares"));
    browser.wait_for("the share links", |_, source| {
        source.contains("No share links.")
    });
    look_at(&browser, "shares");
    browser.open(&format!("{base}/runs/run_that_does_not_exist"));
    browser.wait_for("the error page", |_, source| source.contains("Request id"));
    look_at(&browser, "error");

    drop(browser);
    drop(server);
}
