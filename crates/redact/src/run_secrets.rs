//! `RunSecrets`: every value one run can observe, collected from the secret source only.

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError, RwLock};

use crate::error::Error;
use crate::live::{AccountSet, OwnValues, ScrubSets};
use crate::redactor::Redactor;
use crate::scope::Scope;
use crate::secret::{SecretName, SecretRequest, SecretSource, SecretValue};
use ids::{AccountId, RunId};

/// Every value one run is granted, collected from the secret source only; carries the run id
/// and its account's live scrub set, so the run's [`Redactor`] scrubs every value of the
/// account as well as the run's own.
///
/// There is no public constructor besides [`RunSecrets::collect`], no `Default` and no `Clone`:
/// an empty set made by hand, which would scrub nothing, cannot exist.
pub struct RunSecrets {
    run_id: RunId,
    account_id: AccountId,
    source: Arc<dyn SecretSource>,
    current: BTreeMap<SecretName, SecretValue>,
    /// Values replaced by a refresh: a resumed run's earlier output may still hold them.
    replaced: Vec<SecretValue>,
    own: Arc<RwLock<Arc<OwnValues>>>,
    account: Arc<AccountSet>,
}

impl RunSecrets {
    /// Asks the source (the one behind `sets`) for everything `request` names, once, when the
    /// run starts.
    pub fn collect(
        run_id: &RunId,
        account_id: &AccountId,
        sets: &ScrubSets,
        request: &SecretRequest,
    ) -> Result<RunSecrets, Error> {
        let account = sets.account(account_id)?;
        let source = Arc::clone(sets.source());
        let resolved = source
            .resolve(account_id, request)
            .map_err(|source| Error::Source {
                account_id: account_id.clone(),
                source,
            })?;
        let current: BTreeMap<SecretName, SecretValue> = resolved.into_iter().collect();
        let own = OwnValues::new(
            &format!("run {run_id}"),
            current.values().map(|value| value.dangerously_expose()),
        )?;
        Ok(RunSecrets {
            run_id: run_id.clone(),
            account_id: account_id.clone(),
            source,
            current,
            replaced: Vec::new(),
            own: Arc::new(RwLock::new(Arc::new(own))),
            account,
        })
    }

    /// On resume in a process that did not keep the run's set (every CLI command is a new
    /// process): asks the source for everything `request` names, as [`RunSecrets::collect`]
    /// does, and also for the values of those names superseded since the run started
    /// (`run_started_millis`, milliseconds since the Unix epoch). The superseded values only
    /// join the scrub set: [`RunSecrets::get`] and [`RunSecrets::names`] see current values
    /// alone, so a step's environment never holds an old value.
    pub fn collect_for_resume(
        run_id: &RunId,
        account_id: &AccountId,
        sets: &ScrubSets,
        request: &SecretRequest,
        run_started_millis: i64,
    ) -> Result<RunSecrets, Error> {
        let mut secrets = RunSecrets::collect(run_id, account_id, sets, request)?;
        secrets.keep_superseded(request, run_started_millis)?;
        Ok(secrets)
    }

    /// Adds to the scrub set (only) the values of the names `request` names that the source
    /// says were superseded at or after `since_millis`; useful for names the run may have seen
    /// but can no longer resolve (removed or revoked while it waited).
    pub fn keep_superseded(
        &mut self,
        request: &SecretRequest,
        since_millis: i64,
    ) -> Result<(), Error> {
        let superseded = self
            .source
            .superseded_values(&self.account_id, request, since_millis)
            .map_err(|source| Error::Source {
                account_id: self.account_id.clone(),
                source,
            })?;
        let mut grew = false;
        for (_name, value) in superseded {
            let known = self
                .current
                .values()
                .chain(self.replaced.iter())
                .any(|kept| kept.same_value_as(&value));
            if !known {
                self.replaced.push(value);
                grew = true;
            }
        }
        if grew {
            self.rebuild_set()?;
        }
        Ok(())
    }

    /// On resume: looks every value up again; new values join the scrub set, old ones stay in
    /// it. Every clone of this run's [`Redactor`] sees the grown set; a [`crate::StreamScrubber`]
    /// already started keeps the set it started with.
    pub fn refresh(&mut self, request: &SecretRequest) -> Result<(), Error> {
        let resolved = self
            .source
            .resolve(&self.account_id, request)
            .map_err(|source| Error::Source {
                account_id: self.account_id.clone(),
                source,
            })?;
        let refreshed: BTreeMap<SecretName, SecretValue> = resolved.into_iter().collect();
        for (_name, previous) in std::mem::take(&mut self.current) {
            let still_current = refreshed
                .values()
                .any(|value| value.same_value_as(&previous));
            let already_kept = self
                .replaced
                .iter()
                .any(|value| value.same_value_as(&previous));
            if !still_current && !already_kept {
                self.replaced.push(previous);
            }
        }
        self.current = refreshed;
        self.rebuild_set()
    }

    /// Compiles the current and replaced values into the redactor every clone shares.
    fn rebuild_set(&mut self) -> Result<(), Error> {
        let own = OwnValues::new(
            &format!("run {}", self.run_id),
            self.current
                .values()
                .chain(self.replaced.iter())
                .map(|value| value.dangerously_expose()),
        )?;
        *self.own.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(own);
        Ok(())
    }

    /// The run these values belong to.
    pub fn run_id(&self) -> &RunId {
        &self.run_id
    }

    /// The current value of `name`.
    pub fn get(&self, name: &SecretName) -> Option<&SecretValue> {
        self.current.get(name)
    }

    /// Every name the run holds a current value for, sorted.
    pub fn names(&self) -> Vec<SecretName> {
        self.current.keys().cloned().collect()
    }

    /// The run's redactor: the run's own values and every value of its account (cheap: shares
    /// the compiled sets).
    pub fn redactor(&self) -> Redactor {
        Redactor::new(
            Scope::run(&self.run_id),
            Some(Arc::clone(&self.own)),
            Arc::clone(&self.account),
        )
    }
}
