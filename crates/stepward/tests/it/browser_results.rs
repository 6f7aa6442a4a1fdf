//! Results read as what they are (issue 42, point 2), in a real browser: a step's Markdown
//! reads rendered (a link only to http, https or mailto, shown with its target and
//! `rel="noopener noreferrer nofollow"`; raw HTML as text; an image never fetched) with its
//! plain text one click away; a list of records reads as a table; a long text is folded with
//! "Show all"; the raw JSON is always there. Looked at on a laptop and a phone, axe clean.

use crate::browser::{Browser, look_at, start_server};
use crate::support::Home;

const RESULTS: &str = r##"name: results
python: "3.11"
steps:
  - id: digest
    explain: Writes the week's digest in Markdown.
    code: |
      def main():
          return ("# Weekly digest\n\n- v1.2 **shipped**\n- see [the notes](https://example.com/notes)\n"
                  "- and [this](javascript:alert(1))\n\n<script>document.title = 'owned'</script>\n\n"
                  "![chart](https://203.0.113.9/chart.png)\n")
  - id: customers
    explain: Lists the customers and what they owe.
    code: |
      def main():
          return [{"customer": "Acme", "cents": 1250}, {"customer": "Globex", "cents": 990}]
  - id: log
    explain: Writes a long log.
    code: |
      def main():
          return "".join(f"line {n}\n" for n in range(1, 101))
"##;

#[test]
fn results_read_as_what_they_are_in_a_real_browser_needs_root() {
    let home = Home::new();
    home.put("workflows/results.yaml", RESULTS);
    let (server, address, sign_in_path) = start_server(&home);
    let base = format!("http://{address}");
    let browser = Browser::start();
    browser.sign_in_with_link(&format!("{base}{sign_in_path}"), "ada (owner)");
    browser.open(&format!("{base}/workflows/results"));
    browser.wait_for("the workflow page", |_, source| {
        source.contains("form method=\"post\" action=\"/runs\"")
    });
    browser.click(&browser.find("form[action='/runs'] button[type=submit]"));
    browser.wait_for("the new run's page", |url, _| {
        url.starts_with(&format!("{base}/runs/run_"))
    });
    let run_url = browser.current_url();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while browser.text(&browser.find("#run-status")) != "succeeded" {
        assert!(std::time::Instant::now() < deadline, "the run never ended");
        std::thread::sleep(std::time::Duration::from_millis(200));
        browser.open(&run_url);
    }

    // Markdown, rendered: a heading, strong text, a safe link shown with its target.
    let digest = "#step-digest .markdown";
    assert_eq!(
        browser.text(&browser.find(&format!("{digest} .md-heading"))),
        "Weekly digest"
    );
    let link = browser.find(&format!("{digest} a"));
    assert_eq!(
        browser.execute(
            "return [...document.querySelectorAll('#step-digest .markdown a')]
               .map(a => a.getAttribute('href') + ' ' + a.getAttribute('rel'));"
        ),
        serde_json::json!(["https://example.com/notes noopener noreferrer nofollow"]),
        "only the http link is a link"
    );
    assert_eq!(browser.text(&link), "the notes");
    let shown = browser.text(&browser.find(digest));
    for seen in [
        "(https://example.com/notes)",
        "this (javascript:alert(1))",
        "<script>document.title = 'owned'</script>",
        "[chart] (image: https://203.0.113.9/chart.png)",
    ] {
        assert!(shown.contains(seen), "{seen:?} in {shown}");
    }
    assert_eq!(
        browser.execute("return document.querySelectorAll('.value script, .value img').length;"),
        serde_json::json!(0),
        "no script and no image reach the page"
    );
    assert_ne!(
        browser.execute("return document.title;"),
        serde_json::json!("owned")
    );
    assert!(
        !browser.find_all("#step-digest details.plain").is_empty(),
        "the plain text is one click away"
    );
    // Records as a table; a long text folded; the raw JSON one click away.
    let headers = browser.execute(
        "return [...document.querySelectorAll('#step-customers table.records th')].map(th => th.textContent);",
    );
    assert_eq!(headers, serde_json::json!(["cents", "customer"]));
    assert!(
        browser
            .text(&browser.find("#step-customers table.records"))
            .contains("Globex")
    );
    assert!(!browser.find_all("#step-log details.show-all").is_empty());
    assert!(
        !browser
            .text(&browser.find("#step-log .value > pre"))
            .contains("line 100")
    );
    for step in ["digest", "customers", "log"] {
        assert!(
            !browser
                .find_all(&format!("#step-{step} details.raw-json"))
                .is_empty(),
            "{step} has its raw JSON"
        );
    }
    look_at(&browser, "results");
    drop(browser);
    drop(server);
}
