//! The size limit of every text a request of the JSON API carries, in characters (Unicode
//! scalar values, as JSON Schema's `maxLength` counts them).
//!
//! The limits are written once, here; the wire types name them in their `maxLength`
//! attributes, so the OpenAPI document says them.

/// A decision's note (every door: console, link, API, CLI).
pub const NOTE_CHARS: usize = 2_000;
/// A person's display name.
pub const DISPLAY_NAME_CHARS: usize = 200;
/// An account's name or a person's email (sign-in truncates what it reads to the same).
pub const IDENTIFIER_CHARS: usize = 320;
/// A password (`auth::MAX_PASSWORD_CHARS`; a server test keeps the two equal).
pub const PASSWORD_CHARS: usize = 1_024;
/// The id of a person, a run or a key as a request names it.
pub const ID_CHARS: usize = 200;
/// An API key's name.
pub const KEY_NAME_CHARS: usize = 100;
/// A workflow's name, a model's name.
pub const NAME_CHARS: usize = 200;
/// A model provider's URL.
pub const URL_CHARS: usize = 2_048;
/// A secret's, a connection field's or a model key's value.
pub const SECRET_VALUE_CHARS: usize = 65_536;
/// A connection field's name.
pub const FIELD_NAME_CHARS: usize = 64;
/// The message of a workspace revision.
pub const REVISION_MESSAGE_CHARS: usize = 2_000;
/// A workspace path (`workspace::MAX_PATH_BYTES`; the workspace also counts its bytes).
pub const PATH_CHARS: usize = 4_096;
/// A file's content in a write (the request body is at most 2 MiB in all).
pub const CONTENT_CHARS: usize = 2 * 1024 * 1024;
