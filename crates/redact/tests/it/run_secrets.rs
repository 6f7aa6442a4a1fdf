//! G16: the secret set is built only from the source, carries its run id, grows on resume, and a
//! value scrubbed for one run is refused by a writer for another.

use redact::testing::MemorySource;
use redact::{Error, Redactor, RunSecrets, SecretName, SecretRequest, SourceError};

use crate::common::{ACCOUNT, redactor_for};

fn connection_request() -> SecretRequest {
    SecretRequest {
        connections: vec!["warehouse".to_owned()],
        secrets: vec!["deploy-token".to_owned()],
        model_keys: vec!["anthropic".to_owned()],
    }
}

fn source_with_connection() -> MemorySource {
    let source = MemorySource::new();
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
    assert_eq!(scrubbed.run_id(), "run-a");
    assert!(scrubbed.check_run("run-a").is_ok());
    match scrubbed.check_run(second.run_id()) {
        Err(Error::ForeignRun { expected, found }) => {
            assert_eq!(expected, "run-b");
            assert_eq!(found, "run-a");
        }
        other => panic!("expected ForeignRun, got {other:?}"),
    }
}

#[test]
fn g16_every_scrub_output_carries_its_run_id() {
    let redactor = redactor_for("run-ids", &["some-secret-value"]);
    assert_eq!(redactor.run_id(), "run-ids");
    assert_eq!(redactor.scrub("x").run_id(), "run-ids");
    assert_eq!(redactor.scrub_truncated("x", 1).run_id(), "run-ids");
    assert_eq!(
        redactor.scrub_json(&serde_json::json!(1)).run_id(),
        "run-ids"
    );
    let mut stream = redactor.stream();
    assert_eq!(stream.push("x").run_id(), "run-ids");
    assert_eq!(stream.finish().run_id(), "run-ids");
}

#[test]
fn g16_collect_resolves_every_field_of_each_connection() {
    let source = source_with_connection();
    let run_secrets =
        RunSecrets::collect("run-collect", ACCOUNT, &source, &connection_request()).unwrap();
    assert_eq!(run_secrets.run_id(), "run-collect");
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
    let source = MemorySource::new();
    let request = SecretRequest {
        secrets: vec!["absent".to_owned()],
        ..connection_request()
    };
    match RunSecrets::collect("run-missing", ACCOUNT, &source, &request) {
        Err(Error::Source {
            run_id,
            source: SourceError::Missing { names },
            ..
        }) => {
            assert_eq!(run_id, "run-missing");
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
    let mut run_secrets = RunSecrets::collect("run-revoke", ACCOUNT, &source, &request).unwrap();
    source.revoke(
        ACCOUNT,
        SecretName::ConnectionField {
            alias: "warehouse".to_owned(),
            field: "password".to_owned(),
        },
    );
    let refused = run_secrets.refresh(&source, &request);
    assert!(
        matches!(refused, Err(Error::Source { source: SourceError::Revoked { ref names }, .. }) if names == &["connection:warehouse.password".to_owned()]),
        "{refused:?}"
    );
}

#[test]
fn g16_refresh_adds_rotated_values_and_keeps_old_ones() {
    let source = source_with_connection();
    let request = connection_request();
    let mut run_secrets = RunSecrets::collect("run-resume", ACCOUNT, &source, &request).unwrap();
    let redactor_before_refresh = run_secrets.redactor();
    source.set_secret(ACCOUNT, "deploy-token", "deploy-token-value-2");
    run_secrets.refresh(&source, &request).unwrap();

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
    run_secrets.refresh(&source, &request).unwrap();
    assert_eq!(run_secrets.redactor().scrub(text).as_str(), expected);
}

#[test]
fn g16_empty_and_reserved_run_ids_are_refused() {
    let source = source_with_connection();
    let request = SecretRequest::default();
    assert!(matches!(
        RunSecrets::collect("", ACCOUNT, &source, &request),
        Err(Error::EmptyRunId { .. })
    ));
    assert!(matches!(
        RunSecrets::collect("account:someone", ACCOUNT, &source, &request),
        Err(Error::ReservedRunId { .. })
    ));
}

#[test]
fn g16_account_redactor_scrubs_every_current_value() {
    let source = source_with_connection();
    let redactor = Redactor::for_account(ACCOUNT, &source).unwrap();
    assert_eq!(redactor.run_id(), format!("account:{ACCOUNT}"));
    let scrubbed = redactor.scrub("warehouse-password-1 model-key-value-0001 deploy-token-value-1");
    assert_eq!(scrubbed.as_str(), "[REDACTED] [REDACTED] [REDACTED]");
    assert!(scrubbed.check_run("run-x").is_err());
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
        "run-resumed",
        ACCOUNT,
        &source,
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
    assert!(!scrubbed.contains("warehouse-password-1"), "{scrubbed}");
    assert!(!scrubbed.contains("warehouse-password-2"), "{scrubbed}");
    assert!(scrubbed.contains("deploy-token-value-1"), "{scrubbed}");
    assert!(scrubbed.contains("other-token-value-1"), "{scrubbed}");

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

    // A plain collect (a new run) knows nothing of the history.
    let fresh = RunSecrets::collect("run-new", ACCOUNT, &source, &connection_request()).unwrap();
    let scrubbed = fresh
        .redactor()
        .scrub("old=warehouse-password-1")
        .into_inner();
    assert!(scrubbed.contains("warehouse-password-1"), "{scrubbed}");
}

#[test]
fn g16_values_removed_or_revoked_while_waiting_are_kept_for_scrubbing() {
    let source = source_with_connection();
    let password = SecretName::ConnectionField {
        alias: "warehouse".to_owned(),
        field: "password".to_owned(),
    };
    let mut resumed =
        RunSecrets::collect_for_resume("run-gone", ACCOUNT, &source, &SecretRequest::default(), 0)
            .unwrap();
    source.revoke(ACCOUNT, password.clone());
    source.remove(
        ACCOUNT,
        &SecretName::AgentSecret {
            name: "deploy-token".to_owned(),
        },
    );
    resumed
        .keep_superseded(&source, &connection_request(), 0)
        .unwrap();
    let scrubbed = resumed
        .redactor()
        .scrub("a=warehouse-password-1 b=deploy-token-value-1")
        .into_inner();
    assert!(!scrubbed.contains("warehouse-password-1"), "{scrubbed}");
    assert!(!scrubbed.contains("deploy-token-value-1"), "{scrubbed}");
    assert!(resumed.get(&password).is_none());
    assert!(resumed.names().is_empty());
}
