//! Accounts.

use rusqlite::{OptionalExtension, params};
use storage::{Account, AccountId, AccountStore, Error, Timestamp};

use crate::rows::{row_tuple, stored_account};
use crate::{Durability, SqliteStore, TxError, backend};

type AccountRow = (String, String, i64);

fn account_from_row((id, name, created_at): AccountRow) -> Result<Account, Error> {
    Ok(Account {
        id: stored_account(&id)?,
        name,
        created_at: Timestamp(created_at),
    })
}

/// The server's own audit chain has an id (`AccountId::server_chain`) but is no account: a row
/// for it would make it one.
fn refuse_server_chain(id: &AccountId) -> Result<(), Error> {
    if id.is_server_chain() {
        return Err(Error::Invalid {
            what: "the server's own audit chain cannot be made an account".to_owned(),
        });
    }
    Ok(())
}

impl AccountStore for SqliteStore {
    fn create_account(&self, account: &Account) -> Result<(), Error> {
        refuse_server_chain(&account.id)?;
        self.transaction(Durability::Synced, |transaction| {
            let inserted = transaction.execute(
                "INSERT INTO accounts (id, name, created_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT(id) DO NOTHING",
                params![account.id.as_str(), account.name, account.created_at.0],
            )?;
            if inserted == 0 {
                return Err(TxError(Error::AlreadyExists {
                    what: format!("account {}", account.id),
                }));
            }
            Ok(())
        })
    }

    fn account(&self, id: &AccountId) -> Result<Option<Account>, Error> {
        self.with_conn(|connection| {
            connection
                .query_row(
                    "SELECT id, name, created_at FROM accounts WHERE id = ?1",
                    params![id.as_str()],
                    row_tuple,
                )
                .optional()
        })
        .map_err(backend("read account"))?
        .map(account_from_row)
        .transpose()
    }

    fn accounts(&self) -> Result<Vec<Account>, Error> {
        self.with_conn(|connection| {
            let mut statement = connection
                .prepare("SELECT id, name, created_at FROM accounts ORDER BY created_at, id")?;
            let rows = statement.query_map([], row_tuple)?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(backend("list accounts"))?
        .into_iter()
        .map(account_from_row)
        .collect()
    }

    fn ensure_account(&self, account: &Account) -> Result<Account, Error> {
        refuse_server_chain(&account.id)?;
        self.transaction(Durability::Synced, |transaction| {
            transaction.execute(
                "INSERT INTO accounts (id, name, created_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT(id) DO NOTHING",
                params![account.id.as_str(), account.name, account.created_at.0],
            )?;
            let row = transaction.query_row(
                "SELECT id, name, created_at FROM accounts WHERE id = ?1",
                params![account.id.as_str()],
                row_tuple,
            )?;
            Ok(account_from_row(row)?)
        })
    }

    fn supervisor_retries(&self, account: &AccountId) -> Result<Option<u32>, Error> {
        self.with_conn(|connection| {
            connection
                .query_row(
                    "SELECT supervisor_retries FROM account_supervisor_settings
                     WHERE account_id = ?1",
                    params![account.as_str()],
                    |row| row.get::<_, Option<i64>>(0),
                )
                .optional()
        })
        .map(|row| row.flatten().and_then(|n| u32::try_from(n).ok()))
        .map_err(backend("read the supervisor's retries"))
    }

    fn set_supervisor_retries(
        &self,
        account: &AccountId,
        retries: Option<u32>,
    ) -> Result<bool, Error> {
        if let Some(retries) = retries.filter(|retries| *retries > 5) {
            return Err(Error::Invalid {
                what: format!(
                    "{retries} supervisor retries per step: an account may set at most 5"
                ),
            });
        }
        self.transaction(Durability::Synced, |transaction| {
            let exists = transaction
                .query_row(
                    "SELECT 1 FROM accounts WHERE id = ?1",
                    params![account.as_str()],
                    |_| Ok(()),
                )
                .optional()?
                .is_some();
            if !exists {
                return Ok(false);
            }
            transaction.execute(
                "INSERT INTO account_supervisor_settings (account_id, supervisor_retries)
                 VALUES (?1, ?2)
                 ON CONFLICT(account_id) DO UPDATE SET supervisor_retries = excluded.supervisor_retries",
                params![account.as_str(), retries.map(i64::from)],
            )?;
            Ok(true)
        })
    }
}
