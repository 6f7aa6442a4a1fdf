//! The colleagues of an agent step (issue 16 §4, G21): each consult opens the colleague from
//! its own agent file, through the same function that reads the step's agent, with its own
//! model, its own tree (staged when it is first consulted), its own scripts and its own
//! `secrets:`: nothing of the caller's. Its sandboxes and file-tool helper calls are its own;
//! what it changes comes back through the step's copy-back with the rest.

use std::cell::RefCell;
use std::rc::Rc;

use agent::{Colleague, ColleagueUnavailable, Colleagues};
use engine::PinnedDefinitions;
use sandbox::PythonPin;
use storage::AccountId;

use crate::agent_step::{AgentRuntime, MAX_TOKENS_PER_TURN, Shared, load_agent};

/// Opens the colleagues of one step.
pub struct StepColleagues<'a> {
    pub runtime: &'a AgentRuntime,
    pub account: AccountId,
    pub files: workspace::StepFiles,
    /// What the run pinned when it started: each colleague is read as it was then.
    pub definitions: &'a PinnedDefinitions,
    pub python: PythonPin,
    pub(crate) shared: Rc<RefCell<Shared>>,
}

impl<'a> Colleagues<'a> for StepColleagues<'a> {
    fn open(
        &mut self,
        caller: &spec::Agent,
        name: &str,
    ) -> Result<Colleague<'a>, ColleagueUnavailable> {
        // The loop holds the name to the caller's file; the opener holds it again, so a
        // colleague is only ever what an agent file of the step names.
        if !caller
            .colleagues()
            .iter()
            .any(|colleague| colleague == name)
        {
            return Err(ColleagueUnavailable::NotNamed {
                name: name.to_owned(),
                caller: caller.name().to_owned(),
            });
        }
        let runtime = self.runtime;
        let (agent, _) = load_agent(
            runtime.store.as_ref(),
            &self.account,
            &self.files,
            self.definitions,
            name,
            &runtime.maxima,
        )
        .map_err(|reason| ColleagueUnavailable::Definition { reason })?;
        let (model_id, provider) = runtime
            .provider(&self.account, &agent, self.definitions)
            .map_err(|reason| ColleagueUnavailable::Model { reason })?;
        let host = runtime
            .host_for(
                &self.account,
                &self.files,
                self.definitions,
                &agent,
                self.python,
                &self.shared,
            )
            .map_err(|reason| ColleagueUnavailable::Tools { reason })?;
        Ok(Colleague {
            agent,
            model_id,
            model: Box::new(provider),
            host: Box::new(host),
            max_tokens_per_turn: MAX_TOKENS_PER_TURN,
            maxima: runtime.maxima,
        })
    }
}
