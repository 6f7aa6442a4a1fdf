//! Workspace paths: confinement, protected entries, did-you-mean suggestions, revisions with authors.

#![forbid(unsafe_code)]
