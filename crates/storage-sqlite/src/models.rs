//! The model providers of migration 0006 ([`storage::models::ModelProviderStore`]).

use rusqlite::{OptionalExtension, params};
use storage::models::{ModelProvider, ModelProviderStore, NewModelProvider, SavedModelProvider};
use storage::{AccountId, Error, Timestamp};

use crate::rows::account_column;
use crate::{Durability, SqliteStore, backend};

const SELECT: &str = "SELECT account_id, name, kind, base_url, assistant_model, is_default,
            created_at, updated_at
     FROM model_providers";

fn read(row: &rusqlite::Row<'_>) -> rusqlite::Result<ModelProvider> {
    Ok(ModelProvider {
        account: account_column(row, 0)?,
        name: row.get(1)?,
        kind: row.get(2)?,
        base_url: row.get(3)?,
        assistant_model: row.get(4)?,
        is_default: row.get::<_, i64>(5)? == 1,
        created_at: Timestamp(row.get(6)?),
        updated_at: Timestamp(row.get(7)?),
    })
}

impl ModelProviderStore for SqliteStore {
    fn save_model_provider(
        &self,
        provider: &NewModelProvider,
    ) -> Result<SavedModelProvider, Error> {
        self.transaction(Durability::Synced, |transaction| {
            let existed: bool = transaction
                .query_row(
                    "SELECT 1 FROM model_providers WHERE account_id = ?1 AND name = ?2",
                    params![provider.account.as_str(), provider.name],
                    |_| Ok(()),
                )
                .optional()?
                .is_some();
            if existed {
                transaction.execute(
                    "UPDATE model_providers
                     SET kind = ?3, base_url = ?4, assistant_model = ?5, updated_at = ?6
                     WHERE account_id = ?1 AND name = ?2",
                    params![
                        provider.account.as_str(),
                        provider.name,
                        provider.kind,
                        provider.base_url,
                        provider.assistant_model,
                        provider.at.0
                    ],
                )?;
            } else {
                transaction.execute(
                    "INSERT INTO model_providers
                       (account_id, name, kind, base_url, assistant_model, is_default,
                        created_at, updated_at)
                     VALUES (?1, ?2, ?3, ?4, ?5,
                       NOT EXISTS (SELECT 1 FROM model_providers
                                   WHERE account_id = ?1 AND is_default = 1),
                       ?6, ?6)",
                    params![
                        provider.account.as_str(),
                        provider.name,
                        provider.kind,
                        provider.base_url,
                        provider.assistant_model,
                        provider.at.0
                    ],
                )?;
            }
            let stored = transaction.query_row(
                &format!("{SELECT} WHERE account_id = ?1 AND name = ?2"),
                params![provider.account.as_str(), provider.name],
                read,
            )?;
            Ok(SavedModelProvider {
                provider: stored,
                replaced: existed,
            })
        })
    }

    fn model_providers(&self, account: &AccountId) -> Result<Vec<ModelProvider>, Error> {
        self.with_conn(|connection| {
            let mut statement =
                connection.prepare(&format!("{SELECT} WHERE account_id = ?1 ORDER BY name"))?;
            let rows = statement.query_map(params![account.as_str()], read)?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        })
        .map_err(backend("list model providers"))
    }

    fn remove_model_provider(&self, account: &AccountId, name: &str) -> Result<bool, Error> {
        self.transaction(Durability::Synced, |transaction| {
            let removed = transaction.execute(
                "DELETE FROM model_providers WHERE account_id = ?1 AND name = ?2",
                params![account.as_str(), name],
            )?;
            Ok(removed > 0)
        })
    }

    fn set_default_model_provider(
        &self,
        account: &AccountId,
        name: &str,
        at: Timestamp,
    ) -> Result<bool, Error> {
        self.transaction(Durability::Synced, |transaction| {
            let exists = transaction
                .query_row(
                    "SELECT 1 FROM model_providers WHERE account_id = ?1 AND name = ?2",
                    params![account.as_str(), name],
                    |_| Ok(()),
                )
                .optional()?
                .is_some();
            if !exists {
                return Ok(false);
            }
            transaction.execute(
                "UPDATE model_providers SET is_default = 0, updated_at = ?2
                 WHERE account_id = ?1 AND is_default = 1 AND name <> ?3",
                params![account.as_str(), at.0, name],
            )?;
            transaction.execute(
                "UPDATE model_providers SET is_default = 1, updated_at = ?3
                 WHERE account_id = ?1 AND name = ?2",
                params![account.as_str(), name, at.0],
            )?;
            Ok(true)
        })
    }
}
