//! G24: an approve link's token is an HMAC over the length-prefixed (account, run, step,
//! attempt) under a key of its own, checked in constant time; any change of a bit or a field
//! fails, and rotating the key kills every old link.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use auth::{ApproveLinkKey, CsrfKey, KeyRing, LinkError, approve_token, verify_approve_token};
use storage::{AccountId, GateRef, RunId, StepId};

const ACCOUNT: &str = "acct-1";
const RUN: &str = "run-42";
const STEP: &str = "publish";
const ATTEMPT: u32 = 1;

fn gate(account: &str, run: &str, step: &str, attempt: u32) -> GateRef {
    GateRef {
        account: AccountId::parse(account).unwrap(),
        run: RunId::parse(run).unwrap(),
        step: StepId::parse(step).unwrap(),
        attempt,
    }
}

fn ring() -> KeyRing {
    KeyRing::new(ApproveLinkKey::generate().unwrap())
}

fn token(ring: &KeyRing) -> String {
    approve_token(ring.current(), &gate(ACCOUNT, RUN, STEP, ATTEMPT)).unwrap()
}

#[test]
fn g24_approve_link_valid_token_verifies() {
    let ring = ring();
    let token = token(&ring);
    assert_eq!(
        verify_approve_token(&ring, &token, &gate(ACCOUNT, RUN, STEP, ATTEMPT)),
        Ok(())
    );
    // The same gate under the same key gives the same token: nothing needs storing.
    assert_eq!(
        approve_token(ring.current(), &gate(ACCOUNT, RUN, STEP, ATTEMPT)).unwrap(),
        token
    );
}

#[test]
fn g24_approve_link_has_version_key_id_and_base64url_mac() {
    let ring = ring();
    let token = token(&ring);
    let parts: Vec<&str> = token.split('.').collect();
    assert_eq!(parts.len(), 3, "{token}");
    assert_eq!(parts[0], "v1");
    assert_eq!(parts[1], ring.current().key_id().to_hex());
    assert_eq!(URL_SAFE_NO_PAD.decode(parts[2]).unwrap().len(), 32);
}

/// Recomputes the MAC from the documented format with the `hmac` crate directly, so the format
/// is pinned and cannot drift.
#[test]
fn g24_approve_link_mac_is_hmac_sha256_over_length_prefixed_fields() {
    let key = ApproveLinkKey::generate().unwrap();
    let key_file = key.dangerously_encode_key_file();
    let key_hex = key_file.trim_end().split(' ').nth(2).unwrap();
    let key_bytes = hex::decode(key_hex).unwrap();
    let mut message = Vec::new();
    for field in [
        b"stepward/approve-link/v1".as_slice(),
        ACCOUNT.as_bytes(),
        RUN.as_bytes(),
        STEP.as_bytes(),
        &ATTEMPT.to_be_bytes(),
    ] {
        message.extend_from_slice(&u32::try_from(field.len()).unwrap().to_be_bytes());
        message.extend_from_slice(field);
    }
    let mut mac = Hmac::<Sha256>::new_from_slice(&key_bytes).unwrap();
    mac.update(&message);
    let expected = format!(
        "v1.{}.{}",
        key.key_id().to_hex(),
        URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
    );
    assert_eq!(
        approve_token(&key, &gate(ACCOUNT, RUN, STEP, ATTEMPT)).unwrap(),
        expected
    );
}

#[test]
fn g24_approve_link_with_any_bit_of_its_mac_flipped_fails() {
    let ring = ring();
    let token = token(&ring);
    let (prefix, mac_text) = token.rsplit_once('.').unwrap();
    let mac = URL_SAFE_NO_PAD.decode(mac_text).unwrap();
    for bit in 0..mac.len() * 8 {
        let mut flipped = mac.clone();
        flipped[bit / 8] ^= 1 << (bit % 8);
        let tampered = format!("{prefix}.{}", URL_SAFE_NO_PAD.encode(&flipped));
        assert_eq!(
            verify_approve_token(&ring, &tampered, &gate(ACCOUNT, RUN, STEP, ATTEMPT)),
            Err(LinkError::Mismatch),
            "bit {bit}"
        );
    }
}

#[test]
fn g24_approve_link_with_any_character_changed_fails() {
    let ring = ring();
    let token = token(&ring);
    for position in 0..token.len() {
        for replacement in ['A', 'z', '0', '-', '_', '.'] {
            let mut changed = token.clone().into_bytes();
            if changed[position] == replacement as u8 {
                continue;
            }
            changed[position] = replacement as u8;
            let changed = String::from_utf8(changed).unwrap();
            assert!(
                verify_approve_token(&ring, &changed, &gate(ACCOUNT, RUN, STEP, ATTEMPT)).is_err(),
                "{changed} verified"
            );
        }
    }
}

#[test]
fn g24_approve_link_for_another_gate_fails() {
    let ring = ring();
    let token = token(&ring);
    for (account, run, step, attempt) in [
        ("acct-2", RUN, STEP, ATTEMPT),
        (ACCOUNT, "run-43", STEP, ATTEMPT),
        (ACCOUNT, RUN, "deploy", ATTEMPT),
        (ACCOUNT, RUN, STEP, 2),
        (ACCOUNT, RUN, STEP, 0),
        // An empty account or run id cannot be made at all (`ids`), so no link names one.
    ] {
        assert_eq!(
            verify_approve_token(&ring, &token, &gate(account, run, step, attempt)),
            Err(LinkError::Mismatch),
            "{account} {run} {step} {attempt}"
        );
    }
}

#[test]
fn g24_approve_link_fields_are_length_prefixed_against_ambiguity() {
    let ring = ring();
    let key = ring.current();
    // The same concatenated bytes, split differently between neighbouring fields.
    let splits = [
        (("ab", "c", STEP), ("a", "bc", STEP)),
        ((ACCOUNT, "ab", "c"), (ACCOUNT, "a", "bc")),
        (("abc", "d", STEP), ("ab", "cd", STEP)),
    ];
    for ((account_1, run_1, step_1), (account_2, run_2, step_2)) in splits {
        let first = approve_token(key, &gate(account_1, run_1, step_1, ATTEMPT)).unwrap();
        let second = approve_token(key, &gate(account_2, run_2, step_2, ATTEMPT)).unwrap();
        assert_ne!(first, second);
        assert_eq!(
            verify_approve_token(&ring, &first, &gate(account_2, run_2, step_2, ATTEMPT)),
            Err(LinkError::Mismatch)
        );
    }
}

#[test]
fn g24_approve_link_dies_when_the_key_rotates() {
    let mut ring = ring();
    let old = token(&ring);
    ring.rotate(ApproveLinkKey::generate().unwrap());
    assert_eq!(
        verify_approve_token(&ring, &old, &gate(ACCOUNT, RUN, STEP, ATTEMPT)),
        Err(LinkError::UnknownKey)
    );
    let new = token(&ring);
    assert_ne!(new, old);
    assert_eq!(
        verify_approve_token(&ring, &new, &gate(ACCOUNT, RUN, STEP, ATTEMPT)),
        Ok(())
    );
}

#[test]
fn g24_approve_link_under_a_key_with_a_forged_id_fails() {
    // A token whose key id names the ring's key but whose MAC comes from another key.
    let ring = ring();
    let other = ApproveLinkKey::generate().unwrap();
    let foreign = approve_token(&other, &gate(ACCOUNT, RUN, STEP, ATTEMPT)).unwrap();
    let (_, mac_text) = foreign.rsplit_once('.').unwrap();
    let forged = format!("v1.{}.{mac_text}", ring.current().key_id().to_hex());
    assert_eq!(
        verify_approve_token(&ring, &forged, &gate(ACCOUNT, RUN, STEP, ATTEMPT)),
        Err(LinkError::Mismatch)
    );
}

#[test]
fn g24_malformed_approve_links_are_refused() {
    let ring = ring();
    let token = token(&ring);
    let (prefix, mac_text) = token.rsplit_once('.').unwrap();
    let key_id = ring.current().key_id().to_hex();
    let mut malformed_tokens = vec![
        String::new(),
        "v1".to_owned(),
        format!("v2.{key_id}.{mac_text}"),
        format!("{token}.extra"),
        format!("{prefix}.{}", &mac_text[1..]),
        format!("{prefix}.{mac_text}A"),
        format!("{prefix}.{mac_text}="),
        format!("v1.{}.{mac_text}", &key_id[1..]),
        format!(
            "v1.{}.{mac_text}",
            key_id.to_uppercase().replace(char::is_numeric, "G")
        ),
        format!("{prefix}.{}", mac_text.replace(|_: char| true, "+")),
    ];
    // Key ids have one spelling: lowercase.
    if key_id.to_uppercase() != key_id {
        malformed_tokens.push(format!("v1.{}.{mac_text}", key_id.to_uppercase()));
    }
    for malformed in malformed_tokens {
        assert_eq!(
            verify_approve_token(&ring, &malformed, &gate(ACCOUNT, RUN, STEP, ATTEMPT)),
            Err(LinkError::Malformed),
            "{malformed:?}"
        );
    }
}

#[test]
fn g24_approve_link_key_round_trips_through_its_own_key_file() {
    let key = ApproveLinkKey::generate().unwrap();
    let text = key.dangerously_encode_key_file();
    assert!(text.starts_with("stepward-approve-link-key-v1 "));
    let back = ApproveLinkKey::decode_key_file(&text).unwrap();
    assert_eq!(back.key_id(), key.key_id());
    assert_eq!(
        approve_token(&back, &gate(ACCOUNT, RUN, STEP, ATTEMPT)).unwrap(),
        approve_token(&key, &gate(ACCOUNT, RUN, STEP, ATTEMPT)).unwrap()
    );
    // The signing key is kept apart: another kind of key file does not load as one.
    let csrf = CsrfKey::generate().unwrap();
    assert!(ApproveLinkKey::decode_key_file(&csrf.dangerously_encode_key_file()).is_err());
    assert!(ApproveLinkKey::decode_key_file("stepward-approve-link-key-v1 00 11").is_err());
}
