//! G24: a share link's token is 24 random bytes, shown once, stored only as a hash; every
//! malformed token is the same failure, and every failed fetch gets the same body.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

use auth::{Malformed, SHARE_NOT_FOUND_BODY, ShareToken, ShareTokenHash};

#[test]
fn g24_share_token_is_24_random_bytes_in_base64url() {
    let (first, _) = ShareToken::generate().unwrap();
    let (second, _) = ShareToken::generate().unwrap();
    let first = first.reveal_once();
    let second = second.reveal_once();
    assert_eq!(first.len(), 32);
    assert_eq!(URL_SAFE_NO_PAD.decode(&first).unwrap().len(), 24);
    assert!(
        first
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
    );
    assert_ne!(first, second);
}

#[test]
fn g24_share_token_is_found_by_its_stored_hash_only() {
    let (token, stored) = ShareToken::generate().unwrap();
    let text = token.reveal_once();
    let presented = ShareToken::parse(&text).unwrap();
    assert_eq!(presented.hash(), stored);
    assert!(presented.hash().matches(&stored));
    // The stored hash is not the token, nor its plain SHA-256 (it is domain-separated).
    let raw = URL_SAFE_NO_PAD.decode(&text).unwrap();
    let plain: [u8; 32] = Sha256::digest(&raw).into();
    assert_ne!(stored, ShareTokenHash::from_bytes(plain));
    assert!(!stored.to_hex().contains(&hex::encode(&raw)));
    // Another token never has the same hash.
    let (_, other) = ShareToken::generate().unwrap();
    assert!(!other.matches(&stored));
    assert_eq!(ShareTokenHash::from_bytes(*stored.as_bytes()), stored);
}

#[test]
fn g24_every_malformed_share_token_is_the_same_failure() {
    let (token, _) = ShareToken::generate().unwrap();
    let good = token.reveal_once();
    let mut bad = vec![
        String::new(),
        good[..31].to_owned(),
        format!("{good}A"),
        format!("{good}="),
        format!("{}=", &good[..31]),
        format!("{}+", &good[..31]),
        format!("{}/", &good[..31]),
        format!("{}.", &good[..31]),
        format!(" {}", &good[..31]),
        format!("{}é", &good[..30]),
        "%2e%2e%2f".repeat(4),
        "A".repeat(44),
    ];
    // A valid-looking token of another length (a session token is 32 bytes).
    bad.push(URL_SAFE_NO_PAD.encode([7_u8; 32]));
    bad.push(URL_SAFE_NO_PAD.encode([7_u8; 23]));
    for text in bad {
        assert_eq!(
            ShareToken::parse(&text).err(),
            Some(Malformed {
                what: "share token"
            }),
            "{text:?}"
        );
    }
}

#[test]
fn g24_the_share_not_found_body_is_one_constant_that_names_no_reason() {
    // The body cannot say which failure happened: it is a constant, and it names them all.
    for word in ["expired", "revoked", "mistyped"] {
        assert!(SHARE_NOT_FOUND_BODY.contains(word));
    }
    assert!(SHARE_NOT_FOUND_BODY.starts_with("<!doctype html>"));
    insta::assert_snapshot!(SHARE_NOT_FOUND_BODY);
}
