//! The agent step's own costs (issue 16), each beside its baseline measured in the same run:
//!
//! 1. A file-tool call (Read of a small file) as the platform makes it: a fresh helper process
//!    (this executable, re-run with `--helper`), under uid 65534 when run as root. Baseline:
//!    the same Read in-process, through the same confinement primitive. Target ≤ 2 ms median.
//! 2. The loop's own overhead per turn: the loop against the fake model answering at once
//!    (both wire formats), each turn one call of a tool that returns at once; the time spent
//!    inside the model's turn (HTTP on loopback, the baseline) is measured around each turn and
//!    taken out. Target ≤ 1 ms median per turn.
//!
//! The loop's journal here is an in-memory recorder (no sync). The platform's journal is
//! SQLite in WAL mode: each tool.called event is committed with `synchronous=NORMAL` (it
//! survives a crash of the process), and the attempt's "running, with network" row is synced
//! (`synchronous=FULL`) before the step starts.

// A benchmark is test code: a failed unwrap is a failed measurement, reported as such.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent::helper::{HelperCommand, HelperRequest};
use agent::{
    CallOutcome, Catalogue, LoopJournal, Offered, PathRefusal, Setup, ToolHost, ToolKind, ToolReply,
};
use fake_model::{FakeModel, Format, Script, ScriptTurn};
use llm::{
    Client, ClientOptions, Endpoint, EndpointPolicy, Model, Observer, Provider, ProviderKind,
    PublicEndpoints, StaticResolver, TurnFuture, TurnRequest, Usage,
};
use serde_json::{Map, Value, json};

const READS: usize = 200;
const TURNS: usize = 100;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn ms(duration: Duration) -> String {
    format!("{:.3} ms", duration.as_secs_f64() * 1000.0)
}

fn verdict(value: Duration, target: Duration) -> &'static str {
    if value <= target { "met" } else { "MISSED" }
}

fn file_tools() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("work");
    std::fs::create_dir_all(root.join("shared/notes")).unwrap();
    std::fs::write(
        root.join("shared/notes/week.md"),
        "Monday: v1.2 shipped.\nTuesday: retro.\n".repeat(20),
    )
    .unwrap();
    let is_root = rustix::process::geteuid().is_root();
    if is_root {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
        for path in [
            root.clone(),
            root.join("shared"),
            root.join("shared/notes"),
            root.join("shared/notes/week.md"),
        ] {
            std::os::unix::fs::lchown(&path, Some(65534), Some(65534)).unwrap();
        }
    }
    let mut arguments = Map::new();
    arguments.insert("path".into(), json!("shared/notes/week.md"));
    let request = HelperRequest {
        root: root.clone(),
        agent: "digest".into(),
        scripts: Vec::new(),
        writable: false,
        tool: "Read".into(),
        arguments: arguments.clone(),
    };
    let tools = agent::files::FileTools::new(
        &root,
        "digest",
        workspace::StepWriterRules::new(std::iter::empty()),
        false,
    )
    .unwrap();
    let mut inside = Vec::with_capacity(READS);
    for _ in 0..READS {
        let started = Instant::now();
        let reply = tools.call(&ToolKind::Read, &arguments);
        inside.push(started.elapsed());
        assert_eq!(reply.call_outcome(), CallOutcome::Ok, "{}", reply.content);
    }
    let command = HelperCommand {
        program: std::env::current_exe().unwrap(),
        args: vec!["--helper".into()],
        user: is_root.then_some((65534, 65534)),
    };
    let mut helper = Vec::with_capacity(READS);
    for _ in 0..READS {
        let started = Instant::now();
        let reply =
            agent::helper::call(&command, &request, Duration::from_secs(5), &|_| Ok(())).unwrap();
        helper.push(started.elapsed());
        assert_eq!(reply.call_outcome(), CallOutcome::Ok, "{}", reply.content);
    }
    let (inside, helper) = (median(inside), median(helper));
    println!("== agent 1. a file-tool call (Read of a small file), {READS} calls each ==");
    println!(
        "  helper process{}: median {}  (target <= 2 ms: {})",
        if is_root { " as uid 65534" } else { "" },
        ms(helper),
        verdict(helper, Duration::from_millis(2))
    );
    println!(
        "  baseline, the same Read in-process: median {}  (the helper costs {:.1}x)",
        ms(inside),
        helper.as_secs_f64() / inside.as_secs_f64().max(1e-9)
    );
}

/// Times every turn of the model it wraps.
struct Timed<'a> {
    model: &'a Provider,
    spent: Arc<Mutex<Vec<Duration>>>,
}

impl Model for Timed<'_> {
    fn turn<'b>(
        &'b self,
        request: &'b TurnRequest,
        observer: &'b mut dyn Observer,
    ) -> TurnFuture<'b> {
        let spent = self.spent.clone();
        Box::pin(async move {
            let started = Instant::now();
            let turn = self.model.turn(request, observer).await;
            spent.lock().unwrap().push(started.elapsed());
            turn
        })
    }
}

struct Quiet;

impl ToolHost for Quiet {
    fn call(
        &mut self,
        _: &Offered,
        _: &Map<String, Value>,
        _: Duration,
    ) -> Result<ToolReply, agent::HostStop> {
        Ok(ToolReply::ok("done"))
    }
}

#[derive(Default)]
struct Memory(Vec<String>);

impl LoopJournal for Memory {
    fn turn(&mut self, turn: u64, _: Usage, _: &str) -> Result<(), agent::NotRecorded> {
        self.0.push(format!("turn {turn}"));
        Ok(())
    }
    fn tool_called(
        &mut self,
        _: u64,
        id: &str,
        _: &str,
        _: &Value,
    ) -> Result<(), agent::NotRecorded> {
        self.0.push(id.to_owned());
        Ok(())
    }
    fn tool_finished(
        &mut self,
        id: &str,
        _: &str,
        _: CallOutcome,
        _: &str,
        _: Option<&PathRefusal>,
    ) -> Result<(), agent::NotRecorded> {
        self.0.push(id.to_owned());
        Ok(())
    }
    fn call_refused(
        &mut self,
        _: u64,
        id: &str,
        _: &str,
        _: &str,
    ) -> Result<(), agent::NotRecorded> {
        self.0.push(id.to_owned());
        Ok(())
    }
    fn limit(&mut self, limit: &str, _: &str) -> Result<(), agent::NotRecorded> {
        self.0.push(limit.to_owned());
        Ok(())
    }
}

async fn loop_overhead(kind: ProviderKind) {
    let format = match kind {
        ProviderKind::Anthropic => Format::Anthropic,
        ProviderKind::OpenAi => Format::OpenAi,
    };
    let mut turns: Vec<ScriptTurn> = (0..TURNS - 1)
        .map(|index| ScriptTurn::call("Glob", json!({"pattern": format!("shared/{index}/*")})))
        .collect();
    turns.push(ScriptTurn::text("done"));
    let fake = FakeModel::start(Script::new(turns)).await.unwrap();
    let options = ClientOptions {
        endpoints: EndpointPolicy {
            exempt: vec![fake.endpoint().parse::<Endpoint>().unwrap()],
            public: PublicEndpoints::Allowed,
            denied: Vec::new(),
        },
        resolver: Arc::new(StaticResolver::new()),
        ..ClientOptions::default()
    };
    let provider = Provider::new(
        &ids::AccountId::parse("bench").unwrap_or_else(|error| panic!("{error}")),
        kind,
        Some(&fake.base_url(format)),
        redact::SecretValue::new("sk-bench-key-0123456789".to_owned()),
        Client::new(options).unwrap(),
    )
    .unwrap();
    let spent = Arc::new(Mutex::new(Vec::new()));
    let model = Timed {
        model: &provider,
        spent: spent.clone(),
    };
    let text = format!(
        "---\nname: digest\ndescription: Digests.\nmodel: m\ntools: [Glob]\nloop: {{ turns: {} \
         }}\n---\nYou digest.\n",
        TURNS + 1
    );
    let agent = spec::parse_agent("agents/digest/AGENT.md", &text).unwrap();
    let catalogue = Catalogue::for_agent(&agent);
    let source = redact::testing::MemorySource::new();
    source.set_secret("acct", "RELEASES", "tok-bench-secret-6b1f0e4d9a2c");
    let redactor = redact::ScrubSets::new(Arc::new(source))
        .for_account(&ids::AccountId::parse("acct").unwrap_or_else(|error| panic!("{error}")))
        .unwrap();
    let setup = Setup {
        model_id: "fake-large".into(),
        agent: &agent,
        catalogue: &catalogue,
        task: "Digest the week.".into(),
        inputs: json!({"period": {"start": "2026-11-23"}}),
        limits: agent::Limits::of(agent.loop_limits()),
        max_tokens_per_turn: 512,
    };
    let mut journal = Memory::default();
    let started = Instant::now();
    let report = agent::run(&model, &redactor, setup, &mut Quiet, &mut journal).await;
    let total = started.elapsed();
    assert!(
        matches!(report.end, agent::End::Answered { .. }),
        "{:?}",
        report.end
    );
    let spent = spent.lock().unwrap().clone();
    let in_model: Duration = spent.iter().sum();
    let per_turn = (total.saturating_sub(in_model)) / u32::try_from(spent.len()).unwrap();
    let model_median = median(spent.clone());
    println!(
        "  {}: the loop's own time per turn {} (mean of {} turns; target <= 1 ms: {}); \
         baseline, the model's turn on loopback: median {}",
        kind.as_str(),
        ms(per_turn),
        spent.len(),
        verdict(per_turn, Duration::from_millis(1)),
        ms(model_median)
    );
}

fn main() {
    if std::env::args().any(|arg| arg == "--helper") {
        let code = agent::helper::serve(&mut std::io::stdin(), &mut std::io::stdout());
        std::process::exit(code);
    }
    if std::env::args().any(|arg| arg == "--bench") || std::env::args().count() <= 1 {
        file_tools();
        println!(
            "== agent 2. the loop's own overhead per turn (fake model answering at once; journal \
             in memory, no sync) =="
        );
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        for kind in [ProviderKind::Anthropic, ProviderKind::OpenAi] {
            runtime.block_on(loop_overhead(kind));
        }
    }
}
