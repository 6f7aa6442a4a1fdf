//! The whole-app harness: a temp SQLite store with two accounts, their people, sessions and API
//! keys, an engine with an executor that always succeeds, a clock moved by hand, and
//! `router(state)` driven with `oneshot` (no network).

use std::sync::Arc;

use auth::{
    ApiKeySecret, ApproveLinkKey, CsrfKey, CsrfToken, KeyRing, Principal, RateLimit, Role,
    SessionToken, TlsMode, hash_password,
};
use axum::Router;
use axum::body::Body;
use axum::http::{Request, Response, header};
use engine::{
    Clock, Engine, EngineOptions, ExecutionOutcome, ExecutionReport, ExecutionRequest,
    PersonSupervisor, StepExecutor,
};
use http_body_util::BodyExt;
use redact::SecretValue;
use serde_json::json;
use server::{AppOptions, AppState, Backends, ServerKeys, WorkspaceWorkflows};
use storage::people::{
    NewApiKey, NewPerson, NewSession, PeopleChange, PeopleStore, RoleName, TokenHash,
};
use storage::{AccountId, Actor, RunId, RunStatus, Timestamp};
use storage_sqlite::SqliteStore;
use test_support::store::TempStore;
use tower::ServiceExt;
use vault::{RootKeySource, Vault, VaultOptions};

pub const ACCOUNT: &str = "acct";
pub const OTHER_ACCOUNT: &str = "other";
/// A value in the account's vault: it must never reach a record unscrubbed.
pub const VAULT_VALUE: &str = "sk_live_Harness9Vx2Qm7Lp4Tz";
pub const PASSWORD: &str = "correct horse battery staple";
pub const START_MILLIS: i64 = 1_800_000_000_000;

pub use test_support::time::{CountingIds, ManualClock};
pub use test_support::workflows::{FETCH, GATED};

/// A networked step whose first attempt ends `unknown` (it may have acted), so its run needs
/// a person; later attempts succeed.
pub const ATTENTION: &str = r#"name: attention
python: "3.11"
steps:
  - id: send
    explain: Sends the notice.
    network: public_egress
    code: |
      def main():
          return {"sent": True}
"#;

/// Like [`ATTENTION`], but its step `flaky` ends `unknown` on its first two attempts.
pub const FLAKY: &str = r#"name: flaky
python: "3.11"
steps:
  - id: flaky
    explain: Sends the notice over a bad line.
    network: public_egress
    code: |
      def main():
          return {"sent": True}
"#;

/// How long a retried attempt of [`ATTENTION`]'s `send` takes: long enough that a second
/// decision on the run arrives while it runs.
pub const RETRY_TAKES: std::time::Duration = std::time::Duration::from_millis(600);

/// Every step succeeds at once, except the networked ones of [`ATTENTION`] and [`FLAKY`]: their
/// first attempt (`flaky`: first two) ends `unknown`, and a retried `send` takes
/// [`RETRY_TAKES`] before it succeeds.
pub struct SucceedingExecutor;

impl StepExecutor for SucceedingExecutor {
    fn execute(&self, request: ExecutionRequest<'_>) -> ExecutionReport {
        // A step named `mend` needs repair on its first attempt (a third-party import).
        if request.step.id() == "mend" && request.attempt == 1 {
            return ExecutionReport::outcome_only(
                ExecutionOutcome::NeedsRepair {
                    module: "requests".to_owned(),
                    detail: "step.py:1 imports requests".to_owned(),
                },
                "fake",
            );
        }
        let unknown_attempts = match request.step.id() {
            "send" => 1,
            "flaky" => 2,
            _ => 0,
        };
        if request.attempt <= unknown_attempts {
            return ExecutionReport::outcome_only(
                ExecutionOutcome::Unknown {
                    reason: "the connection dropped after the request was sent".to_owned(),
                },
                "fake",
            );
        }
        if request.step.id() == "send" {
            std::thread::sleep(RETRY_TAKES);
        }
        ExecutionReport::outcome_only(
            ExecutionOutcome::Succeeded {
                output: engine::StepOutput::from_value(&json!({"step": request.step.id()})),
            },
            "fake",
        )
    }

    /// A tool test (issue 40): the secrets it was handed by name (the fake resolves none),
    /// its arguments, and the account's vault value printed in every form the redactor knows,
    /// so a test sees what the engine's scrub makes of it.
    fn test_tool(
        &self,
        run: engine::ToolTestRun<'_>,
    ) -> Result<ExecutionReport, engine::StepRefusal> {
        let secrets: Vec<&String> = if run.with_secrets {
            run.agent.secrets().iter().collect()
        } else {
            Vec::new()
        };
        let mut report = ExecutionReport::outcome_only(
            ExecutionOutcome::Succeeded {
                output: engine::StepOutput::from_value(&json!({
                    "secrets": secrets,
                    "arguments": run.arguments,
                    "leaked": VAULT_VALUE,
                })),
            },
            "fake",
        );
        report.stdout = zeroize::Zeroizing::new(value_forms(VAULT_VALUE).join("\n").into_bytes());
        Ok(report)
    }
}

/// Every form of `value` the redactor knows: what a script that leaks it would print.
pub fn value_forms(value: &str) -> Vec<String> {
    test_support::bytes::secret_forms(value)
}

/// Who makes a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    Nobody,
    /// A person of `acct` with this role, with a fresh session.
    Person(Role),
    /// An API key of `acct` with this role.
    Key(Role),
    /// The owner of the other account, with a fresh session.
    StrangerPerson,
    /// An admin key of the other account.
    StrangerKey,
}

impl Caller {
    pub fn all() -> Vec<Caller> {
        let mut callers = vec![Caller::Nobody];
        callers.extend(Role::ALL.into_iter().map(Caller::Person));
        callers.extend(
            [Role::Viewer, Role::Member, Role::Admin]
                .into_iter()
                .map(Caller::Key),
        );
        callers.extend([Caller::StrangerPerson, Caller::StrangerKey]);
        callers
    }
}

/// Credentials to put on a request.
pub enum Credentials {
    None,
    Session {
        cookie: String,
        csrf: String,
        session_id: String,
    },
    Key {
        text: String,
    },
}

thread_local! {
    /// Set while [`Harness::queued`] builds its harness.
    static QUEUED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

pub struct Harness {
    pub _dir: tempfile::TempDir,
    pub store: Arc<SqliteStore>,
    pub vault: Arc<Vault>,
    pub clock: Arc<ManualClock>,
    pub engine: Arc<Engine>,
    engine_options: EngineOptions,
    pub csrf_key: CsrfKey,
    pub app: Router,
    pub state: AppState,
    keys: std::sync::Mutex<Vec<(Caller, String)>>,
}

impl Harness {
    /// An engine like the harness's, over another secret source.
    /// The working folder of `account` on this host, as the workspace lays it out: for a test
    /// that writes a file by hand, as an operator would (no crate above `workspace` is handed
    /// this path, issue 39).
    pub fn working_folder(&self, account: &str) -> std::path::PathBuf {
        self._dir
            .path()
            .join("workspaces")
            .join(account)
            .join("workspace")
    }

    pub fn engine_over(&self, scrub_sets: redact::ScrubSets) -> Engine {
        Engine::new(
            self.engine_options.clone(),
            self.store.clone(),
            Arc::new(SucceedingExecutor),
            scrub_sets,
            Arc::new(PersonSupervisor),
            self.clock.clone(),
            Arc::new(CountingIds::default()),
        )
    }
}

pub fn person_id(role: Role) -> String {
    format!("p-{}", role.as_str())
}

pub const STRANGER: &str = "p-stranger";

fn role_name(role: Role) -> RoleName {
    match role {
        Role::Viewer => RoleName::Viewer,
        Role::Member => RoleName::Member,
        Role::Admin => RoleName::Admin,
        Role::Owner => RoleName::Owner,
    }
}

/// The options of [`Harness::new`]: the matrix sends many sign-ins from one (unknown) address;
/// the limits are tested on their own with the default options.
fn test_options() -> AppOptions {
    AppOptions {
        sign_in_limit: RateLimit {
            burst: 1000,
            refill_every_millis: 1,
            max_keys: 1000,
        },
        account_sign_in_limit: RateLimit {
            burst: 1000,
            refill_every_millis: 1,
            max_keys: 1000,
        },
        address_sign_in_limit: RateLimit {
            burst: 1000,
            refill_every_millis: 1,
            max_keys: 1000,
        },
        unauthenticated_limit: RateLimit {
            burst: 100_000,
            refill_every_millis: 1,
            max_keys: 1000,
        },
        welcome_limit: RateLimit {
            burst: 1000,
            refill_every_millis: 1,
            max_keys: 1000,
        },
        ..AppOptions::new(TlsMode::PlainHttp, server::StepIsolation::Sandboxed)
    }
}

/// The one model endpoint the default harness exempts: port 9 of loopback, where nothing
/// listens, so a test of a provider there fails at once without leaving the machine.
pub const NO_MODEL: &str = "127.0.0.1:9";

impl Harness {
    pub fn new() -> Harness {
        Harness::with_options(test_options())
    }

    pub fn with_options(options: AppOptions) -> Harness {
        Harness::with_options_and_quota(options, workspace::DEFAULT_QUOTA_BYTES, &[NO_MODEL])
    }

    /// The default test options, each account's workspace history holding at most
    /// `quota_bytes`.
    pub fn with_workspace_quota(quota_bytes: u64) -> Harness {
        Harness::with_options_and_quota(test_options(), quota_bytes, &[NO_MODEL])
    }

    /// The default test options, with these model endpoints (`HOST:PORT`) exempted by the
    /// operator: the only ones the server's model client may reach.
    pub fn with_model_endpoints(exempt: &[&str]) -> Harness {
        Harness::with_options_and_quota(test_options(), workspace::DEFAULT_QUOTA_BYTES, exempt)
    }

    /// [`Harness::with_model_endpoints`] whose engine has `repairs` as its repair assistant.
    pub fn with_repairs(exempt: &[&str], repairs: Arc<dyn engine::RepairAssistant>) -> Harness {
        Harness::build(
            test_options(),
            workspace::DEFAULT_QUOTA_BYTES,
            exempt,
            Some(repairs),
        )
    }

    fn with_options_and_quota(options: AppOptions, quota_bytes: u64, exempt: &[&str]) -> Harness {
        Harness::build(options, quota_bytes, exempt, None)
    }

    /// The default harness whose engine answers every door at once ([`Driving::Queue`], as
    /// `stepward serve` builds it): a worker the test starts runs the steps.
    pub fn queued() -> Harness {
        QUEUED.with(|queued| queued.set(true));
        let harness = Harness::new();
        QUEUED.with(|queued| queued.set(false));
        harness
    }

    fn build(
        options: AppOptions,
        quota_bytes: u64,
        exempt: &[&str],
        repairs: Option<Arc<dyn engine::RepairAssistant>>,
    ) -> Harness {
        let temp = TempStore::with_account(ACCOUNT, ACCOUNT);
        temp.add_account(OTHER_ACCOUNT, OTHER_ACCOUNT);
        let TempStore { dir, store } = temp;
        let password_hash = hash_password(PASSWORD).unwrap();
        for role in [Role::Owner, Role::Admin, Role::Member, Role::Viewer] {
            let change = store
                .create_person(&NewPerson {
                    id: person_id(role),
                    account: AccountId::parse(ACCOUNT).unwrap(),
                    display_name: format!("The {role}"),
                    email: format!("{role}@example.test"),
                    role: role_name(role),
                    password_hash: Some(password_hash.as_phc_str().to_owned()),
                    created_at: Timestamp(1),
                })
                .unwrap();
            assert_eq!(change, PeopleChange::Done);
        }
        store
            .create_person(&NewPerson {
                id: STRANGER.into(),
                account: AccountId::parse(OTHER_ACCOUNT).unwrap(),
                display_name: "A stranger".into(),
                email: "stranger@example.test".into(),
                role: RoleName::Owner,
                password_hash: Some(password_hash.as_phc_str().to_owned()),
                created_at: Timestamp(1),
            })
            .unwrap();
        let (vault, _notice) = Vault::open(
            &VaultOptions {
                root_key: RootKeySource::DefaultFile,
                user_config_dir: Some(dir.path().join("config")),
                data_dir: None,
            },
            store.clone(),
        )
        .unwrap();
        let vault = Arc::new(vault);
        vault
            .secrets()
            .set(
                &AccountId::parse(ACCOUNT).unwrap(),
                "DEPLOY_TOKEN",
                SecretValue::new(VAULT_VALUE.into()),
            )
            .unwrap();
        let clock = Arc::new(ManualClock::at(START_MILLIS));
        let mut engine_options = EngineOptions::new(
            workspace::Workspaces::new(dir.path().join("workspaces")).with_quota(quota_bytes),
        );
        if QUEUED.with(std::cell::Cell::get) {
            engine_options.driving = engine::Driving::Queue;
        }
        let engine = Engine::new(
            engine_options.clone(),
            store.clone(),
            Arc::new(SucceedingExecutor),
            redact::ScrubSets::new(vault.clone()),
            Arc::new(PersonSupervisor),
            clock.clone(),
            Arc::new(CountingIds::default()),
        );
        let engine = Arc::new(match repairs {
            Some(repairs) => engine.with_repairs(repairs),
            None => engine,
        });
        // The account's workflows are files of its workspace (issue 16 §1); `broken.yaml` as an
        // older layout could have left it (a person's save is parsed first).
        test_support::workflows::commit_files(
            &engine_options.workspaces,
            &AccountId::parse(ACCOUNT).unwrap(),
            &workspace::Author::Platform {
                reason: "test setup".into(),
            },
            &[
                ("workflows/gated.yaml", GATED),
                ("workflows/fetch.yaml", FETCH),
                ("workflows/broken.yaml", "name: broken\nsteps: 7\n"),
            ],
        );
        let csrf_key = CsrfKey::generate().unwrap();
        let server_key = CsrfKey::decode_key_file(&csrf_key.dangerously_encode_key_file()).unwrap();
        let state = AppState::new(
            options,
            Backends {
                store: store.clone(),
                engine: engine.clone(),
                vault: Some(vault.clone()),
                workflows: Some(Arc::new(WorkspaceWorkflows::new(
                    engine_options.workspaces.clone(),
                ))),
                clock: clock.clone(),
                models: Some(crate::models::client(exempt)),
            },
            ServerKeys {
                csrf: server_key,
                approve_links: KeyRing::new(ApproveLinkKey::generate().unwrap()),
            },
        );
        let harness = Harness {
            _dir: dir,
            engine_options,
            store,
            vault,
            clock,
            engine,
            csrf_key,
            app: server::router(state.clone()),
            state,
            keys: std::sync::Mutex::new(Vec::new()),
        };
        for role in [Role::Viewer, Role::Member, Role::Admin] {
            let text = harness.create_key(ACCOUNT, role);
            harness.keys.lock().unwrap().push((Caller::Key(role), text));
        }
        let text = harness.create_key(OTHER_ACCOUNT, Role::Admin);
        harness
            .keys
            .lock()
            .unwrap()
            .push((Caller::StrangerKey, text));
        harness
    }

    /// Adds a person without a password.
    pub fn add_person(&self, id: &str, account: &str, role: RoleName) {
        let change = self
            .store
            .create_person(&NewPerson {
                id: id.into(),
                account: AccountId::parse(account).unwrap(),
                display_name: format!("Person {id}"),
                email: format!("{id}@example.test"),
                role,
                password_hash: None,
                created_at: Timestamp(START_MILLIS),
            })
            .unwrap();
        assert_eq!(change, PeopleChange::Done);
    }

    /// Creates an API key of `account` with `role` (as its owner would) and returns its text.
    pub fn create_key(&self, account: &str, role: Role) -> String {
        let creator = Principal::Person {
            person_id: "creator".into(),
            account_id: AccountId::parse(account).unwrap(),
            role: Role::Owner,
        };
        let (secret, stored) = ApiKeySecret::generate(&creator, role).unwrap();
        self.store
            .create_api_key(&NewApiKey {
                key_id: stored.key_id.clone(),
                token_hash: TokenHash(*stored.hash.as_bytes()),
                account: AccountId::parse(account).unwrap(),
                role: role_name(role),
                name: format!("{role} key"),
                created_by: person_id(Role::Owner),
                created_at: Timestamp(START_MILLIS),
            })
            .unwrap();
        secret.reveal_once()
    }

    /// A fresh session for a person, as the cookie header and the CSRF token.
    pub fn session_for(&self, person: &str) -> Credentials {
        let (token, hash) = SessionToken::generate().unwrap();
        let session_id = format!("ses-{}", hash.to_hex());
        self.store
            .create_session(&NewSession {
                id: session_id.clone(),
                token_hash: TokenHash(*hash.as_bytes()),
                person_id: person.into(),
                created_at: self.clock.now(),
                browser: None,
                address: None,
            })
            .unwrap();
        Credentials::Session {
            cookie: format!("stepward_session={}", token.reveal_once()),
            csrf: CsrfToken::for_session(&self.csrf_key, &hash)
                .as_str()
                .to_owned(),
            session_id,
        }
    }

    pub fn credentials(&self, caller: Caller) -> Credentials {
        match caller {
            Caller::Nobody => Credentials::None,
            Caller::Person(role) => self.session_for(&person_id(role)),
            Caller::StrangerPerson => self.session_for(STRANGER),
            Caller::Key(_) | Caller::StrangerKey => {
                let keys = self.keys.lock().unwrap();
                let text = keys
                    .iter()
                    .find(|(key_caller, _)| *key_caller == caller)
                    .map(|(_, text)| text.clone())
                    .unwrap();
                Credentials::Key { text }
            }
        }
    }

    /// Saves `text` as `workflows/{name}.yaml` of [`ACCOUNT`]'s workspace, unchecked.
    pub fn commit_workflow(&self, name: &str, text: &str) {
        test_support::workflows::commit_files(
            &self.engine_options.workspaces,
            &AccountId::parse(ACCOUNT).unwrap(),
            &workspace::Author::Platform {
                reason: "test setup".into(),
            },
            &[(&format!("workflows/{name}.yaml"), text)],
        );
    }

    /// Starts a run of `GATED` in `account`; it parks at `ship`.
    pub fn parked_run(&self, account: &str) -> RunId {
        let summary = self.start(account, "gated.yaml", GATED);
        assert_eq!(summary.waiting_at.as_deref(), Some("ship"));
        summary.run
    }

    /// Starts the workflow `text` in `account` through the engine, as the CLI would.
    pub fn start(&self, account: &str, file: &str, text: &str) -> engine::RunSummary {
        let workflow = spec::parse_workflow(file, text).unwrap();
        self.engine
            .start_run(
                &AccountId::parse(account).unwrap(),
                &workflow,
                json!({}),
                Actor::Cli {
                    os_user: "tester".into(),
                },
            )
            .unwrap()
    }

    /// A run of [`ATTENTION`] in `needs_attention` at `send`.
    pub fn attention_run(&self, account: &str) -> RunId {
        self.attention_run_of(account, ATTENTION)
    }

    /// A run of `text` in `needs_attention` at its first step.
    pub fn attention_run_of(&self, account: &str, text: &str) -> RunId {
        let summary = self.start(account, "attention.yaml", text);
        assert_eq!(summary.status, RunStatus::NeedsAttention, "{summary:?}");
        summary.run
    }

    pub async fn send(&self, request: Request<Body>) -> Answer {
        let response = self.app.clone().oneshot(request).await.unwrap();
        Answer::read(response).await
    }

    pub async fn call(
        &self,
        method: &str,
        path: &str,
        credentials: &Credentials,
        body: Option<(&str, String)>,
    ) -> Answer {
        self.send(request(method, path, credentials, body)).await
    }
}

/// A request with credentials (and the CSRF header for a session) and an optional
/// (content type, body).
pub fn request(
    method: &str,
    path: &str,
    credentials: &Credentials,
    body: Option<(&str, String)>,
) -> Request<Body> {
    let mut builder = Request::builder().method(method).uri(path);
    match credentials {
        Credentials::None => {}
        Credentials::Session { cookie, csrf, .. } => {
            builder = builder
                .header(header::COOKIE, cookie)
                .header("x-csrf-token", csrf);
        }
        Credentials::Key { text } => {
            builder = builder.header(header::AUTHORIZATION, format!("Bearer {text}"));
        }
    }
    match body {
        Some((content_type, body)) => builder
            .header(header::CONTENT_TYPE, content_type)
            .body(Body::from(body))
            .unwrap(),
        None => builder.body(Body::empty()).unwrap(),
    }
}

/// A whole answer, read.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Vec<u8>,
}

impl Answer {
    pub async fn read(response: Response<Body>) -> Answer {
        let (parts, body) = response.into_parts();
        let body = body.collect().await.unwrap().to_bytes().to_vec();
        Answer {
            status: parts.status.as_u16(),
            headers: parts
                .headers
                .iter()
                .map(|(name, value)| (name.as_str().to_owned(), value.as_bytes().to_vec()))
                .collect(),
            body,
        }
    }

    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .iter()
            .find(|(header_name, _)| header_name == name)
            .map(|(_, value)| String::from_utf8_lossy(value).into_owned())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|error| panic!("not JSON ({error}): {}", self.text()))
    }

    /// The session cookie set by this answer, as a `Cookie` header value.
    pub fn session_cookie(&self) -> Option<String> {
        let set_cookie = self.header("set-cookie")?;
        let pair = set_cookie.split(';').next()?.to_owned();
        Some(pair)
    }
}
