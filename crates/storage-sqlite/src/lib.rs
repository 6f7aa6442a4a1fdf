//! The embedded SQLite backend of the storage traits, with its own migrations.

#![forbid(unsafe_code)]
