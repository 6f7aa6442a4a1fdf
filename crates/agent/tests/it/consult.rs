//! `Consult` (G21, issue 16 §4) against the fake model in both wire formats: a colleague works
//! with its own file's tools (never the caller's), its calls are journalled under the step,
//! its turns count against the step's limits, and a consult of anything but a colleague, a
//! cycle or a chain deeper than three is refused with nothing run.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent::{
    Catalogue, Colleague, Colleagues, End, HostStop, Limits, Offered, Setup, ToolHost, ToolReply,
};
use fake_model::{FakeModel, Script, ScriptTurn};
use llm::ProviderKind;
use serde_json::{Map, Value, json};

use crate::looping::{KINDS, Record, provider, redactor};

fn parse(name: &str, front: &str) -> spec::Agent {
    let text =
        format!("---\nname: {name}\ndescription: An agent.\nmodel: m\n{front}---\nYou work.\n");
    spec::parse_agent(&format!("agents/{name}/AGENT.md"), &text).unwrap()
}

/// The step's agent: reads, and may consult `checker`.
fn lead() -> spec::Agent {
    parse(
        "lead",
        "tools: [Read]\ncolleagues: [checker]\nloop: { turns: 6 }\n",
    )
}

/// The colleague: its own custom tool, which the lead does not have.
fn checker(colleagues: &str) -> spec::Agent {
    parse(
        "checker",
        &format!(
            "tools: [lookup]\n{colleagues}custom_tools:\n  lookup:\n    explain: Looks up.\n    \
             script: tools/lookup.py\n    arguments: {{ id: string }}\n"
        ),
    )
}

/// Logs each call it runs as `AGENT:TOOL` into one shared sequence.
struct Host {
    agent: String,
    ran: Arc<Mutex<Vec<String>>>,
}

impl ToolHost for Host {
    fn call(
        &mut self,
        tool: &Offered,
        _: &Map<String, Value>,
        _: Duration,
    ) -> Result<ToolReply, HostStop> {
        self.ran
            .lock()
            .unwrap()
            .push(format!("{}:{}", self.agent, tool.name));
        Ok(ToolReply::ok(format!("{} ran {}", self.agent, tool.name)))
    }
}

/// Opens colleagues from a fixed set of agent files, each with a host of its own.
struct Opener<'f> {
    agents: Vec<spec::Agent>,
    fake: &'f FakeModel,
    kind: ProviderKind,
    ran: Arc<Mutex<Vec<String>>>,
    opened: Vec<String>,
}

impl<'f> Colleagues<'f> for Opener<'f> {
    fn open(
        &mut self,
        _: &spec::Agent,
        name: &str,
    ) -> Result<Colleague<'f>, agent::ColleagueUnavailable> {
        self.opened.push(name.to_owned());
        let agent = self
            .agents
            .iter()
            .find(|agent| agent.name() == name)
            .cloned()
            .ok_or_else(|| agent::ColleagueUnavailable::Definition {
                reason: format!("no agent file agents/{name}/AGENT.md"),
            })?;
        Ok(Colleague {
            model_id: "fake-small".into(),
            model: Box::new(provider(self.kind, self.fake)),
            host: Box::new(Host {
                agent: name.to_owned(),
                ran: self.ran.clone(),
            }),
            agent,
            max_tokens_per_turn: 256,
            maxima: spec::LimitMaxima::BUILT_IN,
        })
    }
}

struct Ran {
    report: agent::Report,
    ran: Vec<String>,
    opened: Vec<String>,
    journal: Record,
    fake: FakeModel,
}

async fn run(
    kind: ProviderKind,
    lead: spec::Agent,
    colleagues: Vec<spec::Agent>,
    turns: Vec<ScriptTurn>,
) -> Ran {
    let fake = FakeModel::start(Script::new(turns)).await.unwrap();
    let model = provider(kind, &fake);
    let catalogue = Catalogue::for_agent(&lead);
    let ran = Arc::new(Mutex::new(Vec::new()));
    let mut host = Host {
        agent: lead.name().to_owned(),
        ran: ran.clone(),
    };
    let mut journal = Record::default();
    let setup = Setup {
        model_id: "fake-large".into(),
        agent: &lead,
        catalogue: &catalogue,
        task: "Check ticket 7.".into(),
        inputs: json!({}),
        limits: Limits::of(lead.loop_limits()),
        max_tokens_per_turn: 512,
    };
    let (report, opened) = {
        let mut opener = Opener {
            agents: colleagues,
            fake: &fake,
            kind,
            ran: ran.clone(),
            opened: Vec::new(),
        };
        let report = agent::run_with(
            &model,
            &redactor(),
            setup,
            &mut host,
            &mut journal,
            &mut opener,
        )
        .await;
        (report, opener.opened)
    };
    let ran = ran.lock().unwrap().clone();
    Ran {
        report,
        ran,
        opened,
        journal,
        fake,
    }
}

fn tools_offered(request: &fake_model::RecordedRequest) -> Vec<String> {
    let body = request.json();
    body["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|tool| {
            tool["name"]
                .as_str()
                .or_else(|| tool["function"]["name"].as_str())
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

#[tokio::test]
async fn g21_a_colleague_works_with_its_own_tools_and_the_caller_never_holds_them() {
    for kind in KINDS {
        let ran = run(
            kind,
            lead(),
            vec![checker("")],
            vec![
                // The lead's own turn: it may not call the colleague's tool itself.
                ScriptTurn::call("lookup", json!({"id": "7"})).with_call(
                    "Consult",
                    json!({"colleague": "checker", "task": "Look up 7."}),
                ),
                // The colleague's turns, with its own tools.
                ScriptTurn::call("lookup", json!({"id": "7"})),
                ScriptTurn::text("ticket 7 is open"),
                ScriptTurn::text("checked: ticket 7 is open"),
            ],
        )
        .await;
        assert_eq!(
            ran.report.end,
            End::Answered {
                text: "checked: ticket 7 is open".into()
            },
            "{kind:?} {:?}",
            ran.journal.log
        );
        assert_eq!(
            ran.ran,
            ["checker:lookup"],
            "{kind:?}: only the colleague ran it"
        );
        assert_eq!(ran.opened, ["checker"]);
        let requests = ran.fake.requests();
        assert_eq!(requests.len(), 4);
        assert_eq!(tools_offered(&requests[0]), ["Read", "Consult"]);
        assert_eq!(
            tools_offered(&requests[1]),
            ["lookup"],
            "the colleague's own file"
        );
        let colleague_first = requests[1].as_text();
        assert!(colleague_first.contains("Look up 7."), "{colleague_first}");
        assert!(
            !colleague_first.contains("Check ticket 7."),
            "the caller's task is not passed"
        );
        // The lead's refused call and its consult, then the colleague's call under it.
        let log = ran.journal.log.join("\n");
        assert!(
            log.contains("refused lookup refused: there is no tool `lookup`"),
            "{log}"
        );
        let consult = log.find("called Consult").expect("consult journalled");
        let nested = log.find("called lookup ").expect("nested call journalled");
        let ended = log
            .find("finished Consult ok ticket 7 is open")
            .expect("{log}");
        assert!(consult < nested && nested < ended, "{log}");
        let nested_line = ran
            .journal
            .log
            .iter()
            .find(|l| l.starts_with("called lookup"))
            .unwrap();
        assert!(nested_line.contains("/checker/"), "{nested_line}");
        // Turns are the step's: four of them, however they were shared.
        assert_eq!(ran.report.turns, 4);
    }
}

#[tokio::test]
async fn g21_a_consult_of_anything_but_a_colleague_is_refused_and_opens_nothing() {
    for kind in KINDS {
        let ran = run(
            kind,
            lead(),
            vec![
                checker(""),
                parse("admin", "tools: [Run]\nnetwork: public_egress\n"),
            ],
            vec![
                ScriptTurn::call("Consult", json!({"colleague": "admin", "task": "Apply."})),
                ScriptTurn::text("done"),
            ],
        )
        .await;
        assert!(ran.opened.is_empty(), "{:?}", ran.opened);
        assert!(ran.ran.is_empty());
        assert_eq!(ran.report.refusals, 1);
        let told = ran.fake.requests()[1].as_text();
        assert!(told.contains("must be one of checker"), "{told}");
    }
}

#[tokio::test]
async fn g21_a_colleagues_turns_count_against_the_calling_steps_limits() {
    for kind in KINDS {
        let lead = parse(
            "lead",
            "tools: [Read]\ncolleagues: [checker]\nloop: { turns: 3 }\n",
        );
        let ran = run(
            kind,
            lead,
            vec![checker("")],
            vec![
                ScriptTurn::call("Consult", json!({"colleague": "checker", "task": "Loop."})),
                ScriptTurn::call("lookup", json!({"id": "1"})),
                ScriptTurn::call("lookup", json!({"id": "2"})),
                ScriptTurn::call("lookup", json!({"id": "3"})),
                ScriptTurn::text("never"),
            ],
        )
        .await;
        assert!(
            matches!(&ran.report.end, End::Limit { limit: "turns", detail } if detail.contains("agent step")),
            "{kind:?}: {:?}",
            ran.report.end
        );
        assert_eq!(ran.report.turns, 3);
        assert_eq!(
            ran.fake.requests().len(),
            3,
            "no turn past the step's limit"
        );
        assert!(ran.journal.log.iter().any(|l| l.starts_with("limit turns")));
    }
}

#[tokio::test]
async fn g21_a_cycle_and_a_chain_deeper_than_three_are_refused_at_run_time() {
    for kind in KINDS {
        // checker names lead back (a cycle `stepward check` reports; held here too).
        let ran = run(
            kind,
            lead(),
            vec![checker("colleagues: [lead]\n"), lead()],
            vec![
                ScriptTurn::call("Consult", json!({"colleague": "checker", "task": "Ask."})),
                ScriptTurn::call("Consult", json!({"colleague": "lead", "task": "Back."})),
                ScriptTurn::text("no"),
                ScriptTurn::text("done"),
            ],
        )
        .await;
        assert_eq!(ran.opened, ["checker"], "the cycle opened nothing");
        let told = ran.fake.requests()[2].as_text();
        assert!(
            told.contains("would be a cycle (lead → checker → lead)"),
            "{told}"
        );
        // a → b → c → d → e: the fourth consult is refused.
        let chain = |name: &str, next: Option<&str>| {
            parse(
                name,
                &match next {
                    Some(next) => format!("tools: [Read]\ncolleagues: [{next}]\n"),
                    None => "tools: [Read]\n".to_owned(),
                },
            )
        };
        let consult =
            |next: &str| ScriptTurn::call("Consult", json!({"colleague": next, "task": "Go on."}));
        let ran = run(
            kind,
            chain("a", Some("b")),
            vec![
                chain("b", Some("c")),
                chain("c", Some("d")),
                chain("d", Some("e")),
                chain("e", None),
            ],
            vec![
                consult("b"),
                consult("c"),
                consult("d"),
                consult("e"),
                ScriptTurn::text("d done"),
                ScriptTurn::text("c done"),
                ScriptTurn::text("b done"),
                ScriptTurn::text("a done"),
            ],
        )
        .await;
        assert_eq!(ran.opened, ["b", "c", "d"], "{kind:?}");
        assert_eq!(
            ran.report.end,
            End::Answered {
                text: "a done".into()
            }
        );
        let told = ran.fake.requests()[4].as_text();
        assert!(told.contains("deeper than 3 colleagues"), "{told}");
    }
}
