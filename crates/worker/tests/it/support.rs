//! An engine wired as the binary wires it, in this process: a SQLite store in a temporary
//! folder, the account's secrets in memory, the unisolated backend (no root needed), this
//! crate's executor with its agent runtime, and the account's assistant as the supervisor.

use std::sync::Arc;

use engine::{Engine, EngineOptions, RandomRunIds, SystemClock};
use redact::ScrubSets;
use redact::testing::MemorySource;
use sandbox::Isolation;
use storage::AccountId;
use storage_sqlite::SqliteStore;
use test_support::store::TempStore;
use workspace::Author;

pub const ACCOUNT: &str = "local";

pub fn account() -> AccountId {
    AccountId::parse(ACCOUNT).unwrap()
}

pub struct Harness {
    pub dir: tempfile::TempDir,
    pub store: Arc<SqliteStore>,
    pub secrets: Arc<MemorySource>,
    pub options: EngineOptions,
    pub backend: Arc<dyn Isolation>,
    pub client: worker::model_client::LazyModelClient,
}

impl Harness {
    /// Everything but a model provider; `endpoint` (`HOST:PORT`) is exempted for providers, as
    /// the operator's `--allow-model-endpoint` does.
    pub fn new(endpoint: &str) -> Harness {
        let TempStore { dir, store } = TempStore::with_account(ACCOUNT, "local");
        let options = EngineOptions::new(workspace::Workspaces::new(dir.path().join("accounts")));
        let backend: Arc<dyn Isolation> = Arc::new(
            sandbox::unisolated::UnisolatedBackend::new(
                sandbox::unisolated::UnisolatedOptions::new(dir.path().join("sandbox")),
            )
            .unwrap(),
        );
        let client = worker::model_client::LazyModelClient::new(llm::ClientOptions {
            endpoints: llm::EndpointPolicy {
                exempt: vec![endpoint.parse().unwrap()],
                ..llm::EndpointPolicy::default()
            },
            ..llm::ClientOptions::default()
        });
        Harness {
            dir,
            store,
            secrets: Arc::new(MemorySource::new()),
            options,
            backend,
            client,
        }
    }

    /// The fake model at `url` as the account's default provider `fake`, with `assistant` as
    /// its assistant model and `key` as its key.
    pub fn add_provider(&self, url: &str, assistant: &str, key: &str) {
        test_support::model::add_default_provider(
            self.store.as_ref(),
            &self.secrets,
            &account(),
            "fake",
            url,
            assistant,
            key,
        );
    }

    /// Saves `files` as one revision of the account's workspace.
    pub fn write(&self, files: &[(&str, &str)]) {
        test_support::workflows::commit_files(
            &self.options.workspaces,
            &account(),
            &Author::Person { id: "p-1".into() },
            files,
        );
    }

    /// This crate's executor (code and agent steps) over the backend, as the binary builds it.
    pub fn executor(&self) -> worker::executor::SandboxExecutor {
        let runtime = worker::agent_step::AgentRuntime {
            backend: self.backend.clone(),
            store: self.store.clone(),
            secrets: self.secrets.clone(),
            client: self.client.clone(),
            helper: agent::helper::HelperCommand {
                program: "/nonexistent/stepward".into(),
                args: Vec::new(),
                user: None,
            },
            views_dir: self.dir.path().join("views"),
            limits: sandbox::Limits::default(),
            maxima: spec::LimitMaxima::BUILT_IN,
        };
        worker::executor::SandboxExecutor::new(
            self.backend.clone(),
            ScrubSets::new(self.secrets.clone()),
            sandbox::Limits::default(),
        )
        .with_agents(Arc::new(runtime))
    }

    /// The engine as the binary builds it: [`Harness::executor`], and the account's assistant
    /// as the supervisor.
    pub fn engine(&self) -> Engine {
        let scrub_sets = ScrubSets::new(self.secrets.clone());
        let executor = self.executor();
        let supervisor = Arc::new(worker::supervisor::ModelSupervisor {
            store: self.store.clone(),
            secrets: self.secrets.clone(),
            scrub_sets: scrub_sets.clone(),
            client: self.client.clone(),
        });
        Engine::new(
            self.options.clone(),
            self.store.clone(),
            Arc::new(executor),
            scrub_sets,
            supervisor,
            Arc::new(SystemClock),
            Arc::new(RandomRunIds),
        )
    }
}

pub fn cli() -> storage::Actor {
    storage::Actor::Cli {
        os_user: "tester".into(),
    }
}
