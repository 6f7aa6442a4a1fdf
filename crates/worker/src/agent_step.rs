//! Runs an agent step (`agent: NAME`, issue 16): the agent file from the account's workspace,
//! the model from the account's providers, the loop of the `agent` crate, and the calls it
//! makes: file tools in the file-tool helper, `Run` and custom tools in the agent's session of
//! the backend (`sandbox::session`: one per agent, destroyed when it ends, also on failure;
//! each call its own process tree, gone when the call ends).
//!
//! The agent sees one tree (its view, staged into a scratch folder of its own): its folder at
//! the root, the workspace's `shared/` and the account `library/` inside. What changed in the
//! view at the end goes back to the workspace through the engine's copy-back, mapped to
//! workspace paths, and an agent with no tool that writes gets no copy-back at all.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use agent::helper::{HelperCommand, HelperRequest};
use agent::{Catalogue, End, HostStop, Offered, ToolHost, ToolKind, ToolReply};
use engine::{
    CodePhase, ExecutionOutcome, ExecutionReport, ExecutionRequest, PinnedDefinitions, StepError,
};
use redact::{SecretName, SecretRequest, SecretSource, SecretValue};
use sandbox::session::{Call, Session, SessionSpec};
use sandbox::{EnvVar, Isolation, Limits, NetworkMode, Outcome, PythonPin};
use serde_json::{Map, Value};
use storage::AccountId;

use workspace::{AgentView, RelPath, StepWriterRules};
use zeroize::Zeroizing;

use crate::agent_view::View;

/// The uid and gid the file-tool helper runs as when the platform is root.
pub(crate) const HELPER_USER: (u32, u32) = (65534, 65534);
/// The most output tokens one turn may ask for.
pub(crate) const MAX_TOKENS_PER_TURN: u32 = 4096;
/// Folders a view may not hold at its root: the tree's own `shared/` and `library/` go there.
pub(crate) const RESERVED: &[&str] = &["shared", "library"];

/// What an agent step needs of the platform.
pub struct AgentRuntime {
    pub backend: Arc<dyn Isolation>,
    pub store: Arc<dyn crate::Stores>,
    pub secrets: Arc<dyn SecretSource>,
    pub client: crate::model_client::LazyModelClient,
    pub helper: HelperCommand,
    /// Where each step's view is staged; swept at start.
    pub views_dir: PathBuf,
    pub limits: Limits,
    pub maxima: spec::LimitMaxima,
}

/// Reads the agent `name` as the run pinned it when it started (issue 16 §1), parsed against
/// the account; a run from before runs pinned reads the step's `files`.
pub fn load_agent(
    store: &dyn crate::Stores,
    account: &AccountId,
    files: &workspace::StepFiles,
    definitions: &PinnedDefinitions,
    name: &str,
    maxima: &spec::LimitMaxima,
) -> Result<(spec::Agent, Vec<u8>), String> {
    let path = RelPath::parse(&format!("agents/{name}/AGENT.md")).map_err(|e| e.to_string())?;
    let missing = |detail: String| {
        format!(
            "the agent `{name}` cannot be read from the workspace ({detail}); add \
             agents/{name}/AGENT.md with `stepward files put agents/{name}/AGENT.md`"
        )
    };
    let bytes = if definitions.is_pinned() {
        definitions
            .agent_file(name, "AGENT.md")?
            .ok_or_else(|| missing("it was not there when the run started".to_owned()))?
    } else {
        let tree = files.reader().map_err(|error| error.to_string())?;
        tree.read(&path, 0, 1024 * 1024)
            .map_err(|error| missing(error.to_string()))?
            .0
    };
    let text = String::from_utf8(bytes.clone())
        .map_err(|_| format!("agents/{name}/AGENT.md is not UTF-8 text"))?;
    let providers = store
        .model_providers(account)
        .map_err(|error| format!("the account's model providers cannot be read: {error}"))?;
    let names = spec::AccountNames {
        model_providers: providers.iter().map(|p| p.name.clone()).collect(),
        default_provider: providers
            .iter()
            .find(|p| p.is_default)
            .map(|p| p.name.clone()),
        people: None,
    };
    let agent = spec::parse_agent_for_account(path.as_str(), &text, maxima, &names).map_err(
        |diagnostics| {
            let first = diagnostics
                .first()
                .map(ToString::to_string)
                .unwrap_or_default();
            format!(
                "agents/{name}/AGENT.md is invalid ({} problem(s)); the first: {first}",
                diagnostics.len()
            )
        },
    )?;
    Ok((agent, bytes))
}

impl AgentRuntime {
    /// The network of the agent step's scripts: its agent file's.
    pub fn network_of(
        &self,
        account: &AccountId,
        files: &workspace::StepFiles,
        definitions: &PinnedDefinitions,
        agent: &str,
    ) -> Result<spec::Network, engine::StepRefusal> {
        let (agent, _) = load_agent(
            self.store.as_ref(),
            account,
            files,
            definitions,
            agent,
            &self.maxima,
        )
        .map_err(engine::StepRefusal::Definition)?;
        Ok(self
            .closure(account, files, definitions, &agent)
            .map_err(engine::StepRefusal::Definition)?
            .network())
    }

    /// The agent and every colleague it can consult (G21: it holds what they hold), each as
    /// the run pinned it; a cycle, a chain too deep or a colleague that cannot be used refuses
    /// the step.
    pub fn closure(
        &self,
        account: &AccountId,
        files: &workspace::StepFiles,
        definitions: &PinnedDefinitions,
        agent: &spec::Agent,
    ) -> Result<spec::Closure, String> {
        let closure = spec::colleague_closure(agent, &|name| {
            load_agent(
                self.store.as_ref(),
                account,
                files,
                definitions,
                name,
                &self.maxima,
            )
            .map(|(found, _)| found)
        });
        match closure.problems.first() {
            Some(problem) => Err(format!("{problem}; nothing was run")),
            None => Ok(closure),
        }
    }

    pub fn execute(
        &self,
        request: ExecutionRequest<'_>,
        agent_name: &str,
        task: &str,
    ) -> ExecutionReport {
        let backend = self.backend.name();
        let refused = |reason: String| {
            ExecutionReport::outcome_only(ExecutionOutcome::Refused { reason }, backend)
        };
        let (agent, _) = match load_agent(
            self.store.as_ref(),
            request.account,
            request.files,
            request.definitions,
            agent_name,
            &self.maxima,
        ) {
            Ok(loaded) => loaded,
            Err(reason) => return refused(reason),
        };
        let closure =
            match self.closure(request.account, request.files, request.definitions, &agent) {
                Ok(closure) => closure,
                Err(reason) => return refused(reason),
            };
        if let Some(refusal) =
            crate::agent_readiness::apply_before_gate(request.step, &agent, &closure)
        {
            return refused(refusal);
        }
        let (model_id, provider) = match self.provider(request.account, &agent, request.definitions)
        {
            Ok(found) => found,
            Err(reason) => return refused(reason),
        };
        let catalogue = Catalogue::for_agent(&agent);
        let python = crate::executor::sandbox_python(request.python);
        let shared = Rc::new(RefCell::new(Shared::default()));
        let mut host = match self.host_for(
            request.account,
            request.files,
            request.definitions,
            &agent,
            python,
            &shared,
        ) {
            Ok(host) => host,
            Err(reason) => return refused(reason),
        };
        let mut journal = crate::agent_record::Journal {
            journal: request.journal,
        };
        let setup = agent::Setup {
            model_id,
            agent: &agent,
            catalogue: &catalogue,
            task: task.to_owned(),
            inputs: request.inputs.clone(),
            limits: agent::Limits::within(agent.loop_limits(), &self.maxima),
            max_tokens_per_turn: MAX_TOKENS_PER_TURN,
        };
        let runtime = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(runtime) => runtime,
            Err(error) => return refused(format!("the agent loop cannot start: {error}")),
        };
        let mut colleagues = crate::agent_colleagues::StepColleagues {
            runtime: self,
            account: request.account.clone(),
            files: request.files.clone(),
            definitions: request.definitions,
            python,
            shared: shared.clone(),
        };
        let report = runtime.block_on(agent::run_with(
            &provider,
            request.redactor,
            setup,
            &mut host,
            &mut journal,
            &mut colleagues,
        ));
        if let Err(error) = host.finish() {
            shared.borrow_mut().notes.push(format!(
                "the agent's sandbox session could not be removed: {error}"
            ));
        }
        let (script_started, networked_started, mut notes, views) = {
            let mut shared = shared.borrow_mut();
            (
                shared.script_started,
                shared.networked_started,
                std::mem::take(&mut shared.notes),
                std::mem::take(&mut shared.views),
            )
        };
        notes.push(format!(
            "agent {}: {} turn(s), {} call(s), {} refusal(s), {} input and {} output tokens",
            agent.name(),
            report.turns,
            report.calls,
            report.refusals,
            report.usage.input_tokens,
            report.usage.output_tokens
        ));
        if backend == "unisolated" {
            notes.push("not isolated: the agent's scripts ran as plain child processes".to_owned());
        }
        // G14: a networked script of the step (its agent's or a colleague's) may have acted;
        // when no agent of the step has network, any script that ran counts as code that
        // started (its effects stayed in the discarded tree).
        let script_started =
            networked_started || (script_started && closure.network() == spec::Network::None);
        let phase = if script_started {
            CodePhase::CodeStarted
        } else {
            CodePhase::BeforeCode
        };
        let failed = |kind: &str, message: String| ExecutionOutcome::Failed {
            error: StepError {
                kind: kind.to_owned(),
                message,
                traceback: String::new(),
            },
            phase,
        };
        let outcome = match report.end {
            End::Answered { text } => {
                match crate::agent_record::answer_output(request.step.output(), text) {
                    Ok(output) => ExecutionOutcome::Succeeded { output },
                    Err((kind, message)) => failed(kind, message),
                }
            }
            End::Limit { limit, detail } => failed("LimitExceeded", format!("{limit}: {detail}")),
            End::Model { error } => failed("ModelError", error),
            End::Journal { error } => ExecutionOutcome::Unknown {
                reason: format!("the journal could not record the step's next event: {error}"),
            },
            End::Host(HostStop::NeedsRepair {
                script,
                module,
                detail,
            }) => ExecutionOutcome::NeedsRepair {
                module,
                detail: format!("the script {script} of agent {}: {detail}", agent.name()),
            },
            End::Host(HostStop::Unknown { reason }) => ExecutionOutcome::Unknown { reason },
            End::Host(HostStop::Failed { reason }) => failed("ToolError", reason),
            // The loop unwraps a colleague's end into the step's; should one arrive wrapped,
            // nothing about its scripts is known.
            End::Host(HostStop::Ended(_)) => ExecutionOutcome::Unknown {
                reason: "a colleague's loop ended the step without saying how".to_owned(),
            },
        };
        let (file_changes, copy_back_refusals) =
            crate::agent_record::changes_of(&views, engine::CopyBackCaps::default());
        ExecutionReport {
            outcome,
            stdout: Zeroizing::default(),
            stderr: Zeroizing::default(),
            interpreter_version: None,
            backend: backend.to_owned(),
            isolation_notes: notes,
            file_changes,
            copy_back_refusals,
        }
    }

    /// The host of one agent of the step: its own tree (staged now), its scripts as they are
    /// now, its own secrets and network. Registered with the step's `shared` for the end.
    pub(crate) fn host_for(
        &self,
        account: &AccountId,
        files: &workspace::StepFiles,
        definitions: &PinnedDefinitions,
        agent: &spec::Agent,
        python: PythonPin,
        shared: &Rc<RefCell<Shared>>,
    ) -> Result<StepHost<'_>, String> {
        let writable = Catalogue::for_agent(agent).writes(agent);
        // One view per agent for the whole step: a colleague consulted again works in the tree
        // it left, and its folder, `shared/` and `library/` are staged once, not per consult.
        let staged = shared
            .borrow()
            .views
            .iter()
            .find(|(_, known, _)| known.name() == agent.name())
            .map(|(view, _, _)| view.clone());
        let fresh = staged.is_none();
        let view = match staged {
            Some(view) => view,
            None => {
                let cell = self
                    .backend
                    .helper_cell()
                    .map_err(|error| format!("the file tools cannot be set up: {error}"))?;
                let mut view = View::stage(&self.views_dir, files, agent.name(), cell)?;
                // The view holds the agent file and scripts as the run pinned them, whatever
                // the folder holds now (issue 16 §1).
                view.overlay_pinned(definitions, agent)?;
                Rc::new(view)
            }
        };
        // Pinned: the scripts as they were when the agent started; nothing an agent writes
        // changes what a tool runs.
        let mut scripts = BTreeMap::new();
        for tool in agent.custom_tools() {
            scripts.insert(tool.name().to_owned(), view.read_original(tool.script())?);
        }
        let env = self.agent_secrets(account, agent)?;
        let rules_scripts: Vec<String> = agent
            .custom_tools()
            .iter()
            .map(|tool| format!("agents/{}/{}", agent.name(), tool.script()))
            .collect();
        let network = agent.network();
        // One session for this agent's part of the step; dropped with the host on any end.
        let session = self
            .backend
            .open_session(SessionSpec {
                python,
                network,
                limits: self.limits.clone(),
                tree: view.root.clone(),
                screen: Arc::new(NoScreen),
            })
            .map_err(|error| format!("the agent's sandbox session cannot start: {error}"))?;
        if fresh {
            shared
                .borrow_mut()
                .views
                .push((view.clone(), agent.clone(), writable));
        }
        Ok(StepHost {
            session: Some(session),
            runtime: self,
            view,
            agent: agent.clone(),
            writable,
            scripts,
            rules_scripts,
            env,
            network,
            shared: shared.clone(),
        })
    }

    /// The model id and the account's provider an agent file names; for a run that pinned
    /// its models, only the provider it pinned (same name, kind and base URL; its key as it is
    /// now, G18): one removed or changed while the run waited is refused with the reason.
    pub(crate) fn provider(
        &self,
        account: &AccountId,
        agent: &spec::Agent,
        definitions: &PinnedDefinitions,
    ) -> Result<(String, llm::Provider), String> {
        if let Some(pinned) = definitions.model_of(agent.name()) {
            let providers = self.store.model_providers(account).map_err(|error| {
                format!("the account's model providers cannot be read: {error}")
            })?;
            let Some(current) = providers
                .iter()
                .find(|provider| provider.name == pinned.provider)
            else {
                return Err(format!(
                    "the model provider `{}` this run was started with ({} at {}) was removed \
                     while the run waited; the run talks to no other. Add it again, or stop this \
                     run and start a new one",
                    pinned.provider, pinned.kind, pinned.base_url
                ));
            };
            let base_url = current.base_url.clone().unwrap_or_default();
            if current.kind != pinned.kind || base_url != pinned.base_url {
                return Err(format!(
                    "the model provider `{}` changed while the run waited, from {} at {} to {} \
                     at {}; the run talks only to the endpoint it was started (and approved) \
                     with. Change it back, or stop this run and start a new one",
                    pinned.provider, pinned.kind, pinned.base_url, current.kind, base_url
                ));
            }
        }
        let Some(model) = agent.model() else {
            return Err(format!(
                "the agent `{}` names no `model:`; add `model: PROVIDER/MODEL_ID`",
                agent.name()
            ));
        };
        let reference = spec::ModelRef::parse(model);
        let providers = self
            .store
            .model_providers(account)
            .map_err(|error| format!("the account's model providers cannot be read: {error}"))?;
        let name = match reference.provider {
            Some(name) => name.to_owned(),
            None => providers
                .iter()
                .find(|provider| provider.is_default)
                .map(|provider| provider.name.clone())
                .ok_or_else(|| {
                    "the account has no default model provider; add one with `stepward models add`"
                        .to_owned()
                })?,
        };
        let (_, provider) = platform::providers::provider(
            self.store.as_ref(),
            self.secrets.as_ref(),
            account,
            &name,
            self.client.get().map_err(|error| format!("{error:#}"))?,
        )
        .map_err(|error| format!("{error:#}"))?;
        Ok((reference.model.to_owned(), provider))
    }

    /// The agent's `secrets:`, for its custom tools' environment only (G19).
    pub(crate) fn agent_secrets(
        &self,
        account: &AccountId,
        agent: &spec::Agent,
    ) -> Result<Vec<(String, SecretValue)>, String> {
        if agent.secrets().is_empty() {
            return Ok(Vec::new());
        }
        let request = SecretRequest {
            secrets: agent.secrets().to_vec(),
            ..SecretRequest::default()
        };
        let resolved = self
            .secrets
            .resolve(account, &request)
            .map_err(|error| format!("the agent's secrets cannot be read: {error}"))?;
        Ok(resolved
            .into_iter()
            .filter_map(|(name, value)| match name {
                SecretName::AgentSecret { name } => Some((name, value)),
                _ => None,
            })
            .collect())
    }
}

/// What every host of one step (its agent's, each colleague's) reports to the step.
#[derive(Default)]
pub(crate) struct Shared {
    /// Whether any script or custom tool has been handed to the sandbox (G14).
    script_started: bool,
    /// Whether one of a `public_egress` agent has.
    networked_started: bool,
    notes: Vec<String>,
    /// Each agent's tree, for the copy-back at the end: (tree, agent, whether it may write).
    views: Vec<(Rc<View>, spec::Agent, bool)>,
}

/// Runs the calls of one agent of the step (its own, or a colleague's in its own tree).
pub(crate) struct StepHost<'a> {
    runtime: &'a AgentRuntime,
    /// The agent's sandbox session; `None` once it was destroyed.
    session: Option<Box<dyn Session + 'a>>,
    view: Rc<View>,
    agent: spec::Agent,
    writable: bool,
    /// Each custom tool's script as pinned when the step started.
    scripts: BTreeMap<String, Vec<u8>>,
    rules_scripts: Vec<String>,
    env: Vec<(String, SecretValue)>,
    network: NetworkMode,
    shared: Rc<RefCell<Shared>>,
}

/// Lets the sandbox's copy-back ask whether a file holds a value; a Run never holds one, and
/// the engine screens every file again before it reaches the workspace.
struct NoScreen;

impl sandbox::copyback::SecretScreen for NoScreen {
    fn holds_secret(&self, _content: &[u8]) -> bool {
        false
    }

    fn unreadable_archives(&self) -> workspace::UnreadableArchives {
        workspace::UnreadableArchives::Accept
    }
}

impl StepHost<'_> {
    /// Destroys the agent's session (dropping the host does the same, quietly).
    pub(crate) fn finish(mut self) -> Result<(), sandbox::Error> {
        match self.session.take() {
            Some(session) => session.destroy(),
            None => Ok(()),
        }
    }

    fn file_tool(
        &self,
        tool: &Offered,
        arguments: &Map<String, Value>,
        timeout: Duration,
    ) -> Result<ToolReply, HostStop> {
        let request = HelperRequest {
            root: self.view.root.clone(),
            agent: self.agent.name().to_owned(),
            scripts: self.rules_scripts.clone(),
            writable: self.writable,
            tool: tool.name.clone(),
            arguments: arguments.clone(),
        };
        let command = HelperCommand {
            user: self.view.helper_user(),
            ..self.runtime.helper.clone()
        };
        let cell = &self.view.cell;
        agent::helper::call(&command, &request, timeout, &|pid| {
            cell.enter(pid).map_err(|error| error.to_string())
        })
        .map_err(|reason| HostStop::Failed { reason })
    }

    fn script(
        &mut self,
        code: String,
        inputs: Value,
        env: Vec<EnvVar>,
        timeout: Duration,
    ) -> Result<sandbox::Observation, HostStop> {
        let call = Call {
            code,
            inputs_json: inputs.to_string(),
            env,
            wall: timeout.max(Duration::from_secs(1)),
        };
        let Some(session) = self.session.as_mut() else {
            return Err(HostStop::Failed {
                reason: "the agent's sandbox session has ended; the script was not started"
                    .to_owned(),
            });
        };
        // G14: from here the script may have acted, unless the backend says it never started.
        let before = {
            let mut shared = self.shared.borrow_mut();
            let before = (shared.script_started, shared.networked_started);
            shared.script_started = true;
            shared.networked_started |= self.network == NetworkMode::PublicEgress;
            before
        };
        let observation = session.run(call).map_err(|error| {
            if crate::executor::before_code(&error) {
                let mut shared = self.shared.borrow_mut();
                (shared.script_started, shared.networked_started) = before;
                HostStop::Failed {
                    reason: format!("the script was not started: {error}"),
                }
            } else if self.network == NetworkMode::PublicEgress {
                HostStop::Unknown {
                    reason: format!("the sandbox failed while a script ran: {error}"),
                }
            } else {
                HostStop::Failed {
                    reason: format!("the sandbox failed: {error}"),
                }
            }
        })?;
        self.shared
            .borrow_mut()
            .notes
            .extend(observation.isolation_notes.iter().cloned());
        Ok(observation)
    }

    /// Puts what a script wrote into the view, through the one confinement primitive.
    fn apply(&mut self, copy_back: &sandbox::copyback::CopyBack) -> Vec<String> {
        let mut refused = Vec::new();
        let Some(session) = self.session.as_mut() else {
            refused.push("the agent's sandbox session has ended; nothing was kept".to_owned());
            return refused;
        };
        let view = AgentView::new(self.agent.name());
        let rules = StepWriterRules::new(
            self.rules_scripts
                .iter()
                .filter_map(|script| RelPath::parse(script).ok()),
        );
        for file in &copy_back.files {
            let allowed = view
                .to_workspace(&file.path)
                .ok()
                .and_then(|target| rules.refusal(&target).map(|refusal| refusal.to_string()));
            match allowed {
                Some(reason) => refused.push(format!("{}: {reason}", file.path)),
                None => match file.contents() {
                    Some(contents) => {
                        if let Err(error) = session.write_file(&file.path, contents) {
                            refused.push(format!("{}: {error}", file.path));
                        }
                    }
                    None => refused.push(format!("{}: a deletion is not kept", file.path)),
                },
            }
        }
        for refusal in &copy_back.refusals {
            refused.push(format!("{}: {}", refusal.path, refusal.reason));
        }
        let _ = self.view.hand_to_helper();
        refused
    }
}

fn printed(observation: &sandbox::Observation) -> String {
    let mut text = String::from_utf8_lossy(&observation.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&observation.stderr);
    if !stderr.is_empty() {
        text.push_str("\n[stderr]\n");
        text.push_str(&stderr);
    }
    text
}

impl ToolHost for StepHost<'_> {
    fn call(
        &mut self,
        tool: &Offered,
        arguments: &Map<String, Value>,
        timeout: Duration,
    ) -> Result<ToolReply, HostStop> {
        match &tool.kind {
            ToolKind::Read | ToolKind::Write | ToolKind::Edit | ToolKind::Glob | ToolKind::Grep => {
                self.file_tool(tool, arguments, timeout)
            }
            ToolKind::Run => {
                let code = arguments.get("code").and_then(Value::as_str).unwrap_or("");
                // The model's code is the module itself; `main` only lets the harness finish.
                let module = format!("{code}\n\n\ndef main():\n    return None\n");
                let observation =
                    self.script(module, Value::Object(Map::new()), Vec::new(), timeout)?;
                let refused = self.apply(&observation.copy_back);
                let mut text = printed(&observation);
                if !refused.is_empty() {
                    text.push_str(&format!("\n[files not kept]\n{}", refused.join("\n")));
                }
                Ok(match observation.outcome {
                    Outcome::Succeeded { .. } => ToolReply::ok(text),
                    Outcome::NeedsRepair { module, .. } => ToolReply::error(format!(
                        "refused before it ran: `{module}` is not in Python's standard library, \
                         and only the standard library exists here"
                    )),
                    Outcome::Failed { error, .. } => ToolReply::error(format!(
                        "{text}\n{}: {}\n{}",
                        error.kind,
                        error.message,
                        error.traceback.join("\n")
                    )),
                    Outcome::Unknown { reason } if self.network == NetworkMode::PublicEgress => {
                        return Err(HostStop::Unknown {
                            reason: format!(
                                "a Run call ended unobserved: {}",
                                crate::executor::unknown_reason(&reason, &self.runtime.limits)
                            ),
                        });
                    }
                    Outcome::Unknown { reason } => ToolReply::error(format!(
                        "{text}\nthe code was stopped: {}",
                        crate::executor::unknown_reason(&reason, &self.runtime.limits)
                    )),
                    Outcome::Refused { reason } => ToolReply::error(format!("not run: {reason}")),
                })
            }
            // The loop runs a consult itself, through the step's colleagues.
            ToolKind::Consult => Err(HostStop::Failed {
                reason: "Consult is not a tool a host runs".to_owned(),
            }),
            ToolKind::Custom { script } => {
                let Some(source) = self.scripts.get(&tool.name) else {
                    return Err(HostStop::Failed {
                        reason: format!("the script of {} was not pinned", tool.name),
                    });
                };
                let Ok(source) = String::from_utf8(source.clone()) else {
                    return Err(HostStop::Failed {
                        reason: format!("the script {script} is not UTF-8 text"),
                    });
                };
                let env = self
                    .env
                    .iter()
                    .map(|(name, value)| crate::executor::env_var(name, value))
                    .collect();
                let observation =
                    self.script(source, Value::Object(arguments.clone()), env, timeout)?;
                let writes = self
                    .agent
                    .custom_tool(&tool.name)
                    .is_some_and(spec::CustomTool::writes);
                if writes {
                    self.apply(&observation.copy_back);
                }
                match observation.outcome {
                    Outcome::Succeeded { result_json } => {
                        Ok(ToolReply::ok(result_json.to_string()))
                    }
                    Outcome::NeedsRepair { module, detail } => Err(HostStop::NeedsRepair {
                        script: format!("agents/{}/{script}", self.agent.name()),
                        module,
                        detail,
                    }),
                    Outcome::Failed { error, .. } if self.network == NetworkMode::PublicEgress => {
                        Err(HostStop::Unknown {
                            reason: format!(
                                "the networked tool {} failed after it started: {}: {}",
                                tool.name, error.kind, error.message
                            ),
                        })
                    }
                    Outcome::Failed { error, .. } => Ok(ToolReply::error(format!(
                        "{}: {}\n{}",
                        error.kind,
                        error.message,
                        error.traceback.join("\n")
                    ))),
                    Outcome::Unknown { reason } => Err(HostStop::Unknown {
                        reason: format!(
                            "the tool {} ended unobserved: {}",
                            tool.name,
                            crate::executor::unknown_reason(&reason, &self.runtime.limits)
                        ),
                    }),
                    Outcome::Refused { reason } => Err(HostStop::Failed { reason }),
                }
            }
        }
    }
}
