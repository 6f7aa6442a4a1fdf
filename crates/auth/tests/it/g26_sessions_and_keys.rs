//! G26: sessions are random tokens stored hashed, carried in an HttpOnly, SameSite=Strict,
//! Secure-when-TLS cookie; forms carry a CSRF token bound to the session; API keys are shown
//! once, stored hashed and checked in constant time.

use auth::{
    ApiKeySecret, CsrfKey, CsrfToken, Malformed, Mismatch, Role, SessionLifetime, SessionState,
    SessionToken, SignInLinkToken, TlsMode, clear_session_cookie, session_cookie,
    session_cookie_name, verify_csrf,
};

use crate::support::person;

#[test]
fn g26_session_token_is_stored_only_as_its_hash() {
    let (token, stored) = SessionToken::generate().unwrap();
    let cookie = session_cookie(&token, TlsMode::PlainHttp);
    let text = token.reveal_once();
    assert_eq!(text.len(), 43);
    assert!(cookie.starts_with(&format!("stepward_session={text};")));
    assert_eq!(SessionToken::parse(&text).unwrap().hash(), stored);
    assert!(!stored.to_hex().contains(&text));
    let (other, _) = SessionToken::generate().unwrap();
    assert_ne!(other.hash(), stored);
    for bad in [
        "",
        "short",
        &text[1..],
        &format!("{text}x"),
        &text.replace(|_: char| true, "!"),
    ] {
        assert_eq!(
            SessionToken::parse(bad).err(),
            Some(Malformed {
                what: "session token"
            }),
            "{bad:?}"
        );
    }
}

#[test]
fn g26_session_cookie_is_http_only_strict_and_secure_over_tls() {
    let (token, _) = SessionToken::generate().unwrap();
    let tls = session_cookie(&token, TlsMode::Tls);
    let plain = session_cookie(&token, TlsMode::PlainHttp);
    let value = token.reveal_once();
    assert_eq!(
        tls,
        format!("__Host-stepward_session={value}; Path=/; HttpOnly; SameSite=Strict; Secure")
    );
    assert_eq!(
        plain,
        format!("stepward_session={value}; Path=/; HttpOnly; SameSite=Strict")
    );
    assert_eq!(session_cookie_name(TlsMode::Tls), "__Host-stepward_session");
    assert_eq!(
        clear_session_cookie(TlsMode::Tls),
        "__Host-stepward_session=; Path=/; HttpOnly; SameSite=Strict; Secure; Max-Age=0"
    );
    assert_eq!(
        clear_session_cookie(TlsMode::PlainHttp),
        "stepward_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"
    );
}

#[test]
fn g26_csrf_token_is_bound_to_its_session_and_key() {
    let key = CsrfKey::generate().unwrap();
    let (_, session) = SessionToken::generate().unwrap();
    let (_, other_session) = SessionToken::generate().unwrap();
    let token = CsrfToken::for_session(&key, &session);
    assert_eq!(token.as_str().len(), 43);
    assert_eq!(verify_csrf(&key, &session, token.as_str()), Ok(()));
    assert_eq!(CsrfToken::for_session(&key, &session), token);
    let mismatch = Err(Mismatch { what: "CSRF token" });
    assert_eq!(verify_csrf(&key, &other_session, token.as_str()), mismatch);
    let other_key = CsrfKey::generate().unwrap();
    assert_eq!(verify_csrf(&other_key, &session, token.as_str()), mismatch);
    let mut tampered = token.as_str().to_owned().into_bytes();
    tampered[0] = if tampered[0] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    for bad in ["", "x", &tampered, &format!("{}A", token.as_str())] {
        assert_eq!(verify_csrf(&key, &session, bad), mismatch, "{bad:?}");
    }
    // The key survives its key file.
    let back = CsrfKey::decode_key_file(&key.dangerously_encode_key_file()).unwrap();
    assert_eq!(back.key_id(), key.key_id());
    assert_eq!(verify_csrf(&back, &session, token.as_str()), Ok(()));
}

#[test]
fn g26_api_key_is_shown_once_and_stored_hashed() {
    let (secret, stored) = ApiKeySecret::generate(&person(Role::Admin), Role::Member).unwrap();
    assert_eq!(stored.role, Role::Member);
    assert_eq!(secret.key_id(), stored.key_id);
    let text = secret.reveal_once();
    let parts: Vec<&str> = text.split('_').collect();
    assert_eq!(parts.len(), 3, "{text}");
    assert_eq!(parts[0], "sw");
    assert_eq!(parts[1], stored.key_id);
    assert_eq!(parts[1].len(), 16);
    assert_eq!(parts[2].len(), 64);
    // What is stored says nothing of the secret.
    let stored_text = format!("{stored:?} {}", stored.hash.to_hex());
    assert!(!stored_text.contains(parts[2]));
    let presented = ApiKeySecret::parse(&text).unwrap();
    assert_eq!(presented.key_id(), stored.key_id);
    assert_eq!(presented.verify(&stored.hash), Ok(()));
}

#[test]
fn g26_api_key_with_a_changed_character_or_another_hash_fails() {
    let (secret, stored) = ApiKeySecret::generate(&person(Role::Owner), Role::Admin).unwrap();
    let (_, other) = ApiKeySecret::generate(&person(Role::Owner), Role::Admin).unwrap();
    let text = secret.reveal_once();
    let mismatch = Err(Mismatch { what: "API key" });
    assert_eq!(
        ApiKeySecret::parse(&text).unwrap().verify(&other.hash),
        mismatch
    );
    for position in 3..text.len() {
        let mut changed = text.clone().into_bytes();
        if changed[position] == b'_' {
            continue;
        }
        changed[position] = if changed[position] == b'0' {
            b'1'
        } else {
            b'0'
        };
        let changed = String::from_utf8(changed).unwrap();
        assert_eq!(
            ApiKeySecret::parse(&changed).unwrap().verify(&stored.hash),
            mismatch,
            "{changed}"
        );
    }
}

#[test]
fn g26_malformed_api_keys_are_one_failure() {
    let (secret, _) = ApiKeySecret::generate(&person(Role::Owner), Role::Viewer).unwrap();
    let text = secret.reveal_once();
    let malformed = Some(Malformed { what: "API key" });
    for bad in [
        String::new(),
        text[1..].to_owned(),
        text.replacen("sw_", "sk_", 1),
        format!("{text}0"),
        text[..text.len() - 1].to_owned(),
        text.to_uppercase().replacen("SW_", "sw_", 1),
        text.replacen('_', "-", 2),
        format!("sw__{}", "0".repeat(64)),
    ] {
        assert_eq!(ApiKeySecret::parse(&bad).err(), malformed, "{bad:?}");
    }
}

#[test]
fn g26_session_ends_when_idle_or_old() {
    let lifetime = SessionLifetime {
        idle_millis: 100,
        absolute_millis: 1_000,
    };
    assert_eq!(lifetime.state(0, 0, 99), SessionState::Live);
    assert_eq!(lifetime.state(0, 0, 100), SessionState::IdleExpired);
    assert_eq!(lifetime.state(0, 950, 999), SessionState::Live);
    assert_eq!(lifetime.state(0, 950, 1_000), SessionState::Expired);
    // A clock that went backwards counts as no time passed, never as a negative age.
    assert_eq!(lifetime.state(500, 500, 10), SessionState::Live);
}

#[test]
fn g26_sign_in_link_token_is_one_time_material_stored_hashed() {
    let (token, stored) = SignInLinkToken::generate().unwrap();
    let text = token.reveal_once();
    assert_eq!(text.len(), 43);
    assert_eq!(SignInLinkToken::parse(&text).unwrap().hash(), stored);
    // The same bytes as a session token hash differently: the kinds are kept apart.
    let as_session = SessionToken::parse(&text).unwrap().hash();
    assert_ne!(as_session.as_bytes(), stored.as_bytes());
    assert_eq!(
        SignInLinkToken::parse(&text[1..]).err(),
        Some(Malformed {
            what: "sign-in link token"
        })
    );
}
