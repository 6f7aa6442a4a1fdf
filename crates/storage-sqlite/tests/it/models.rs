//! Model providers: the first one added is the default, one default per account, removing the
//! default picks no other, and accounts never see each other's.

use storage::models::{ModelProviderStore, NewModelProvider};
use storage::{Account, AccountId, AccountStore, Timestamp};
use storage_sqlite::SqliteStore;

fn store_with_accounts(dir: &tempfile::TempDir, accounts: &[&str]) -> SqliteStore {
    let store = SqliteStore::open(&dir.path().join("models.db")).unwrap();
    for id in accounts {
        store
            .create_account(&Account {
                id: AccountId::parse(id).unwrap(),
                name: (*id).to_owned(),
                created_at: Timestamp(1),
            })
            .unwrap();
    }
    store
}

fn new(account: &str, name: &str, kind: &str, at: i64) -> NewModelProvider {
    NewModelProvider {
        account: AccountId::parse(account).unwrap(),
        name: name.to_owned(),
        kind: kind.to_owned(),
        base_url: None,
        assistant_model: None,
        at: Timestamp(at),
    }
}

fn defaults(store: &SqliteStore, account: &str) -> Vec<String> {
    store
        .model_providers(&AccountId::parse(account).unwrap())
        .unwrap()
        .into_iter()
        .filter(|provider| provider.is_default)
        .map(|provider| provider.name)
        .collect()
}

#[test]
fn the_first_provider_added_is_the_default_and_there_is_only_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_accounts(&dir, &["acct", "other"]);
    let first = store
        .save_model_provider(&new("acct", "claude", "anthropic", 10))
        .unwrap();
    assert!(first.provider.is_default && !first.replaced);
    let second = store
        .save_model_provider(&new("acct", "local", "openai", 11))
        .unwrap();
    assert!(!second.provider.is_default);
    assert_eq!(defaults(&store, "acct"), ["claude"]);
    // Another account's first provider is its own default.
    store
        .save_model_provider(&new("other", "local", "openai", 12))
        .unwrap();
    assert_eq!(defaults(&store, "other"), ["local"]);
    let acct = AccountId::parse("acct").unwrap();
    assert!(
        store
            .set_default_model_provider(&acct, "local", Timestamp(13))
            .unwrap()
    );
    assert_eq!(defaults(&store, "acct"), ["local"]);
    assert!(
        !store
            .set_default_model_provider(&acct, "missing", Timestamp(14))
            .unwrap()
    );
    assert_eq!(defaults(&store, "acct"), ["local"]);
}

#[test]
fn replacing_keeps_the_default_and_removing_the_default_picks_no_other() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_with_accounts(&dir, &["acct"]);
    let acct = AccountId::parse("acct").unwrap();
    store
        .save_model_provider(&new("acct", "claude", "anthropic", 10))
        .unwrap();
    store
        .save_model_provider(&new("acct", "local", "openai", 11))
        .unwrap();
    let mut changed = new("acct", "claude", "anthropic", 20);
    changed.base_url = Some("https://gateway.example.test".to_owned());
    changed.assistant_model = Some("claude-sonnet".to_owned());
    let saved = store.save_model_provider(&changed).unwrap();
    assert!(saved.replaced && saved.provider.is_default);
    assert_eq!(saved.provider.created_at, Timestamp(10));
    assert_eq!(saved.provider.updated_at, Timestamp(20));
    assert_eq!(
        saved.provider.base_url.as_deref(),
        Some("https://gateway.example.test")
    );
    assert!(store.remove_model_provider(&acct, "claude").unwrap());
    assert!(!store.remove_model_provider(&acct, "claude").unwrap());
    assert!(defaults(&store, "acct").is_empty());
    // With no default left, the next provider added becomes it.
    store
        .save_model_provider(&new("acct", "third", "openai", 30))
        .unwrap();
    assert_eq!(defaults(&store, "acct"), ["third"]);
    let names: Vec<String> = store
        .model_providers(&acct)
        .unwrap()
        .into_iter()
        .map(|provider| provider.name)
        .collect();
    assert_eq!(names, ["local", "third"]);
}
