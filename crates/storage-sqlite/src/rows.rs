//! Conversions between stored columns and storage values.

use std::str::FromStr;

use storage::{AccountId, Error, InvalidId, RunId, UnknownName};

/// Parses a stored vocabulary name (a status, a door, ...).
pub(crate) fn parse_name<T: FromStr<Err = UnknownName>>(text: &str) -> Result<T, Error> {
    text.parse::<T>().map_err(|unknown| Error::Corrupt {
        what: unknown.vocabulary,
        detail: unknown.to_string(),
    })
}

fn corrupt_id(invalid: InvalidId) -> Error {
    Error::Corrupt {
        what: invalid.kind(),
        detail: invalid.to_string(),
    }
}

/// A stored account id.
pub(crate) fn stored_account(text: &str) -> Result<AccountId, Error> {
    AccountId::parse(text).map_err(corrupt_id)
}

/// A stored account id of the audit log, which also holds the server's own chain.
pub(crate) fn stored_chain(text: &str) -> Result<AccountId, Error> {
    AccountId::parse_stored(text).map_err(corrupt_id)
}

/// A stored run id.
pub(crate) fn stored_run(text: &str) -> Result<RunId, Error> {
    RunId::parse(text).map_err(corrupt_id)
}

/// An account id column, read inside a rusqlite row mapping.
pub(crate) fn account_column(row: &rusqlite::Row<'_>, index: usize) -> rusqlite::Result<AccountId> {
    let text: String = row.get(index)?;
    AccountId::parse(&text).map_err(|invalid| {
        rusqlite::Error::FromSqlConversionFailure(
            index,
            rusqlite::types::Type::Text,
            Box::new(invalid),
        )
    })
}

/// Parses a stored JSON column.
pub(crate) fn parse_json(what: &'static str, text: &str) -> Result<serde_json::Value, Error> {
    serde_json::from_str(text).map_err(|error| Error::Corrupt {
        what,
        detail: error.to_string(),
    })
}

/// Parses an optional stored JSON column.
pub(crate) fn parse_optional_json(
    what: &'static str,
    text: Option<String>,
) -> Result<Option<serde_json::Value>, Error> {
    text.map(|text| parse_json(what, &text)).transpose()
}

/// Converts a stored integer to an attempt number or sequence number.
pub(crate) fn to_u32(what: &'static str, value: i64) -> Result<u32, Error> {
    u32::try_from(value).map_err(|_| Error::Corrupt {
        what,
        detail: format!("{value} is out of range"),
    })
}

pub(crate) fn to_u64(what: &'static str, value: i64) -> Result<u64, Error> {
    u64::try_from(value).map_err(|_| Error::Corrupt {
        what,
        detail: format!("{value} is out of range"),
    })
}

/// The columns of a row as a tuple, in the order the query selects them (rusqlite converts each
/// column with `FromSql`).
pub(crate) fn row_tuple<T>(row: &rusqlite::Row<'_>) -> rusqlite::Result<T>
where
    T: for<'a> TryFrom<&'a rusqlite::Row<'a>, Error = rusqlite::Error>,
{
    T::try_from(row)
}
