//! G16: the secret set is built only from the source, carries its run id, grows on resume, and a
//! value scrubbed for one run is refused by a writer for another.

use std::sync::Arc;

use redact::testing::MemorySource;
use redact::{Error, RunSecrets, Scope, ScrubSets, SecretName, SecretRequest, SourceError};

use crate::common::{ACCOUNT, redactor_for};

fn connection_request() -> SecretRequest {
    SecretRequest {
        connections: vec!["warehouse".to_owned()],
        secrets: vec!["deploy-token".to_owned()],
        model_keys: vec!["anthropic".to_owned()],
    }
}

fn sets_over(source: &Arc<MemorySource>) -> ScrubSets {
    ScrubSets::new(source.clone())
}

fn source_with_connection() -> Arc<MemorySource> {
    let source = Arc::new(MemorySource::new());
    source.set_connection_field(ACCOUNT, "warehouse", "user", "warehouse-user-name");
    source.set_connection_field(ACCOUNT, "warehouse", "password", "warehouse-password-1");
    source.set_secret(ACCOUNT, "deploy-token", "deploy-token-value-1");
    source.set_model_key(ACCOUNT, "anthropic", "model-key-value-0001");
    source
}

#[test]
fn g16_redactor_of_another_run_is_rejected() {
    let first = redactor_for("run-a", &["secret-of-run-a"]);
    let second = redactor_for("run-b", &["secret-of-run-b"]);
    let scrubbed = first.scrub("hello");
    assert_eq!(
        scrubbed.scope(),
        &Scope::run(&ids::RunId::parse("run-a").unwrap())
    );
    assert!(
        scrubbed
            .check_scope(&Scope::run(&ids::RunId::parse("run-a").unwrap()))
            .is_ok()
    );
    match scrubbed.check_scope(second.scope()) {
        Err(Error::ForeignScope { expected, found }) => {
            assert_eq!(expected, Scope::run(&ids::RunId::parse("run-b").unwrap()));
            assert_eq!(found, Scope::run(&ids::RunId::parse("run-a").unwrap()));
        }
        other => panic!("expected ForeignScope, got {other:?}"),
    }
}

#[test]
fn g16_every_scrub_output_carries_its_run_id() {
    let redactor = redactor_for("run-ids", &["some-secret-value"]);
    let scope = Scope::run(&ids::RunId::parse("run-ids").unwrap());
    assert_eq!(redactor.scope(), &scope);
    assert_eq!(redactor.scrub("x").scope(), &scope);
    assert_eq!(redactor.scrub_truncated("x", 1).scope(), &scope);
    assert_eq!(redactor.scrub_json(&serde_json::json!(1)).scope(), &scope);
    let mut stream = redactor.stream();
    assert_eq!(stream.push("x").scope(), &scope);
    assert_eq!(stream.finish().scope(), &scope);
}

#[test]
fn g16_collect_resolves_every_field_of_each_connection() {
    let source = source_with_connection();
    let run_secrets = RunSecrets::collect(
        &ids::RunId::parse("run-collect").unwrap(),
        &ids::AccountId::parse(ACCOUNT).unwrap(),
        &sets_over(&source),
        &connection_request(),
    )
    .unwrap();
    assert_eq!(run_secrets.run_id().as_str(), "run-collect");
    assert_eq!(run_secrets.names().len(), 4);
    let password = SecretName::ConnectionField {
        alias: "warehouse".to_owned(),
        field: "password".to_owned(),
    };
    assert_eq!(
        run_secrets.get(&password).unwrap().dangerously_expose(),
        "warehouse-password-1"
    );
    let scrubbed = run_secrets
        .redactor()
        .scrub("u=warehouse-user-name p=warehouse-password-1 d=deploy-token-value-1 m=model-key-value-0001");
    assert_eq!(
        scrubbed.as_str(),
        "u=[REDACTED] p=[REDACTED] d=[REDACTED] m=[REDACTED]"
    );
}

#[test]
fn g16_missing_names_are_an_error_that_names_them() {
    let source = Arc::new(MemorySource::new());
    let request = SecretRequest {
        secrets: vec!["absent".to_owned()],
        ..connection_request()
    };
    match RunSecrets::collect(
        &ids::RunId::parse("run-missing").unwrap(),
        &ids::AccountId::parse(ACCOUNT).unwrap(),
        &sets_over(&source),
        &request,
    ) {
        Err(Error::Source {
            account_id,
            source: SourceError::Missing { names },
        }) => {
            assert_eq!(account_id, ids::AccountId::parse(ACCOUNT).unwrap());
            assert!(
                names.contains(&"connection:warehouse".to_owned()),
                "{names:?}"
            );
            assert!(names.contains(&"secret:absent".to_owned()), "{names:?}");
            assert!(
                names.contains(&"model_key:anthropic".to_owned()),
                "{names:?}"
            );
        }
        Err(other) => panic!("expected Missing, got {other:?}"),
        Ok(_) => panic!("expected Missing, got a secret set"),
    }
}

#[test]
fn g16_revoked_connection_is_refused_on_resume() {
    let source = source_with_connection();
    let request = connection_request();
    let mut run_secrets = RunSecrets::collect(
        &ids::RunId::parse("run-revoke").unwrap(),
        &ids::AccountId::parse(ACCOUNT).unwrap(),
        &sets_over(&source),
        &request,
    )
    .unwrap();
    source.revoke(
        ACCOUNT,
        SecretName::ConnectionField {
            alias: "warehouse".to_owned(),
            field: "password".to_owned(),
        },
    );
    let refused = run_secrets.refresh(&request);
    assert!(
        matches!(refused, Err(Error::Source { source: SourceError::Revoked { ref names }, .. }) if names == &["connection:warehouse.password".to_owned()]),
        "{refused:?}"
    );
}

#[test]
fn g16_refresh_adds_rotated_values_and_keeps_old_ones() {
    let source = source_with_connection();
    let request = connection_request();
    let mut run_secrets = RunSecrets::collect(
        &ids::RunId::parse("run-resume").unwrap(),
        &ids::AccountId::parse(ACCOUNT).unwrap(),
        &sets_over(&source),
        &request,
    )
    .unwrap();
    let redactor_before_refresh = run_secrets.redactor();
    source.set_secret(ACCOUNT, "deploy-token", "deploy-token-value-2");
    run_secrets.refresh(&request).unwrap();

    let token = SecretName::AgentSecret {
        name: "deploy-token".to_owned(),
    };
    assert_eq!(
        run_secrets.get(&token).unwrap().dangerously_expose(),
        "deploy-token-value-2"
    );
    let text = "old deploy-token-value-1 new deploy-token-value-2";
    let expected = "old [REDACTED] new [REDACTED]";
    assert_eq!(run_secrets.redactor().scrub(text).as_str(), expected);
    // A clone taken before the refresh sees the grown set too.
    assert_eq!(redactor_before_refresh.scrub(text).as_str(), expected);
    // Rotating back and forth does not lose either value.
    source.set_secret(ACCOUNT, "deploy-token", "deploy-token-value-1");
    run_secrets.refresh(&request).unwrap();
    assert_eq!(run_secrets.redactor().scrub(text).as_str(), expected);
}

#[test]
fn g16_an_empty_run_id_cannot_be_made() {
    // A secret set without a run cannot be checked by writers: the id's type has no empty value.
    assert!(ids::RunId::parse("").is_err());
}

#[test]
fn g16_account_redactor_scrubs_every_current_value() {
    let source = source_with_connection();
    let redactor = sets_over(&source)
        .for_account(&ids::AccountId::parse(ACCOUNT).unwrap())
        .unwrap();
    assert_eq!(
        redactor.scope(),
        &Scope::account(&ids::AccountId::parse(ACCOUNT).unwrap())
    );
    let scrubbed = redactor.scrub("warehouse-password-1 model-key-value-0001 deploy-token-value-1");
    assert_eq!(scrubbed.as_str(), "[REDACTED] [REDACTED] [REDACTED]");
    assert!(
        scrubbed
            .check_scope(&Scope::run(&ids::RunId::parse("run-x").unwrap()))
            .is_err()
    );
}

#[test]
fn g16_a_run_redactor_scrubs_every_value_of_its_account_not_only_its_own() {
    let source = source_with_connection();
    source.set_secret(ACCOUNT, "never-granted", "value-the-run-was-never-granted");
    let request = SecretRequest {
        connections: vec!["warehouse".to_owned()],
        ..SecretRequest::default()
    };
    let run_secrets = RunSecrets::collect(
        &ids::RunId::parse("run-narrow").unwrap(),
        &ids::AccountId::parse(ACCOUNT).unwrap(),
        &sets_over(&source),
        &request,
    )
    .unwrap();
    // The run is handed its connection only...
    assert_eq!(run_secrets.names().len(), 2);
    // ...and scrubs every value of the account.
    let scrubbed = run_secrets
        .redactor()
        .scrub("a=value-the-run-was-never-granted b=model-key-value-0001 c=deploy-token-value-1");
    assert_eq!(scrubbed.as_str(), "a=[REDACTED] b=[REDACTED] c=[REDACTED]");
}

#[test]
fn g16_a_value_set_after_the_redactor_was_made_is_scrubbed_from_its_next_use() {
    let source = source_with_connection();
    let sets = sets_over(&source);
    let redactor = RunSecrets::collect(
        &ids::RunId::parse("run-late").unwrap(),
        &ids::AccountId::parse(ACCOUNT).unwrap(),
        &sets,
        &SecretRequest::default(),
    )
    .unwrap()
    .redactor();
    let account = sets
        .for_account(&ids::AccountId::parse(ACCOUNT).unwrap())
        .unwrap();
    let text = "later: a-value-set-while-the-run-lived";
    assert_eq!(redactor.scrub(text).as_str(), text);
    source.set_secret(ACCOUNT, "late", "a-value-set-while-the-run-lived");
    assert_eq!(redactor.scrub(text).as_str(), "later: [REDACTED]");
    assert_eq!(account.scrub(text).as_str(), "later: [REDACTED]");
}

#[test]
fn g16_a_run_scrubs_its_own_values_after_the_account_forgot_them() {
    let source = source_with_connection();
    let request = connection_request();
    let sets = sets_over(&source);
    let mut run_secrets = RunSecrets::collect(
        &ids::RunId::parse("run-kept").unwrap(),
        &ids::AccountId::parse(ACCOUNT).unwrap(),
        &sets,
        &request,
    )
    .unwrap();
    source.forget_superseded_values();
    source.set_secret(ACCOUNT, "deploy-token", "deploy-token-value-2");
    run_secrets.refresh(&request).unwrap();
    // The account no longer has the old token (its retention passed); the run still does.
    let text = "old deploy-token-value-1 new deploy-token-value-2";
    assert_eq!(
        sets.for_account(&ids::AccountId::parse(ACCOUNT).unwrap())
            .unwrap()
            .scrub(text)
            .as_str(),
        "old deploy-token-value-1 new [REDACTED]"
    );
    assert_eq!(
        run_secrets.redactor().scrub(text).as_str(),
        "old [REDACTED] new [REDACTED]"
    );
}

#[test]
fn g16_secret_names_display_without_values() {
    let name = SecretName::ConnectionField {
        alias: "db".to_owned(),
        field: "password".to_owned(),
    };
    assert_eq!(name.to_string(), "connection:db.password");
    assert_eq!(
        SecretName::ModelKey {
            provider: "p".to_owned()
        }
        .to_string(),
        "model_key:p"
    );
}

#[test]
fn g16_resume_in_a_new_process_scrubs_values_superseded_since_the_run_started() {
    let source = source_with_connection();
    let run_started_millis = 1_000;
    // Replaced before the run started: the run never saw it, so it is not asked for.
    source.set_at(
        ACCOUNT,
        SecretName::AgentSecret {
            name: "deploy-token".to_owned(),
        },
        "deploy-token-value-2",
        run_started_millis - 1,
    );
    // Replaced while the run waited at a gate (in another process).
    source.set_at(
        ACCOUNT,
        SecretName::ConnectionField {
            alias: "warehouse".to_owned(),
            field: "password".to_owned(),
        },
        "warehouse-password-2",
        run_started_millis + 5,
    );
    // Replaced, but not a name this run asks for.
    source.set_at(
        ACCOUNT,
        SecretName::AgentSecret {
            name: "other-token".to_owned(),
        },
        "other-token-value-1",
        run_started_millis - 10,
    );
    source.set_at(
        ACCOUNT,
        SecretName::AgentSecret {
            name: "other-token".to_owned(),
        },
        "other-token-value-2",
        run_started_millis + 10,
    );

    let resumed = RunSecrets::collect_for_resume(
        &ids::RunId::parse("run-resumed").unwrap(),
        &ids::AccountId::parse(ACCOUNT).unwrap(),
        &sets_over(&source),
        &connection_request(),
        run_started_millis,
    )
    .unwrap();
    let scrubbed = resumed
        .redactor()
        .scrub(
            "old=warehouse-password-1 new=warehouse-password-2 \
             before=deploy-token-value-1 other=other-token-value-1",
        )
        .into_inner();
    // Every value the account keeps is scrubbed, whenever it was replaced and whoever held it.
    assert!(!scrubbed.contains("warehouse-password-1"), "{scrubbed}");
    assert!(!scrubbed.contains("warehouse-password-2"), "{scrubbed}");
    assert!(!scrubbed.contains("deploy-token-value-1"), "{scrubbed}");
    assert!(!scrubbed.contains("other-token-value-1"), "{scrubbed}");

    // The old value is only scrubbed: the run's values are the current ones.
    let password = resumed
        .get(&SecretName::ConnectionField {
            alias: "warehouse".to_owned(),
            field: "password".to_owned(),
        })
        .unwrap();
    assert_eq!(password.dangerously_expose(), "warehouse-password-2");
    for name in resumed.names() {
        let value = resumed.get(&name).unwrap().dangerously_expose();
        assert_ne!(value, "warehouse-password-1", "{name}");
    }

    // A new run scrubs the values the account keeps too, though it was never handed them.
    let fresh = RunSecrets::collect(
        &ids::RunId::parse("run-new").unwrap(),
        &ids::AccountId::parse(ACCOUNT).unwrap(),
        &sets_over(&source),
        &connection_request(),
    )
    .unwrap();
    let scrubbed = fresh
        .redactor()
        .scrub("old=warehouse-password-1")
        .into_inner();
    assert_eq!(scrubbed, "old=[REDACTED]");
}

#[test]
fn g16_values_removed_or_revoked_while_waiting_are_kept_for_scrubbing() {
    let source = source_with_connection();
    let password = SecretName::ConnectionField {
        alias: "warehouse".to_owned(),
        field: "password".to_owned(),
    };
    let mut resumed = RunSecrets::collect_for_resume(
        &ids::RunId::parse("run-gone").unwrap(),
        &ids::AccountId::parse(ACCOUNT).unwrap(),
        &sets_over(&source),
        &SecretRequest::default(),
        0,
    )
    .unwrap();
    source.revoke(ACCOUNT, password.clone());
    source.remove(
        ACCOUNT,
        &SecretName::AgentSecret {
            name: "deploy-token".to_owned(),
        },
    );
    resumed.keep_superseded(&connection_request(), 0).unwrap();
    let scrubbed = resumed
        .redactor()
        .scrub("a=warehouse-password-1 b=deploy-token-value-1")
        .into_inner();
    assert!(!scrubbed.contains("warehouse-password-1"), "{scrubbed}");
    assert!(!scrubbed.contains("deploy-token-value-1"), "{scrubbed}");
    assert!(resumed.get(&password).is_none());
    assert!(resumed.names().is_empty());
}
