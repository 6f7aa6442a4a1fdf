//! What an audit entry records: one closed vocabulary (issue 37), so every writer names an
//! action the readers know, and a stored name never changes. The names are stored text:
//! [`AuditAction::as_str`] is what every version wrote, and [`AuditAction::parse`] reads every
//! name a version of stepward ever stored (a fixture holds the list: renaming one fails it).
//! An entry whose action a reader does not know (a newer version's) is still read and shown
//! by its stored name: [`crate::AuditEntry::action`] is that text.

/// Declares the actions: the variant, its stored name, and the names older versions stored
/// for the same action (read as it, never written).
macro_rules! actions {
    ($($variant:ident = $name:literal $(| $legacy:literal)*,)+) => {
        /// One action of the audit log.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum AuditAction {
            $($variant,)+
        }

        impl AuditAction {
            /// Every action, in the order declared.
            pub const ALL: &'static [AuditAction] = &[$(AuditAction::$variant,)+];

            /// The stored name (`session.sign_in`, `vault.secret_set`, ...).
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(AuditAction::$variant => $name,)+
                }
            }

            /// The names older versions stored for this action (the CLI named some vault
            /// and key actions apart from the server until issue 37).
            pub const fn legacy_names(self) -> &'static [&'static str] {
                match self {
                    $(AuditAction::$variant => &[$($legacy),*],)+
                }
            }

            /// The action of a stored name, its own or a legacy one; `None` for a name this
            /// version does not know.
            pub fn parse(name: &str) -> Option<AuditAction> {
                match name {
                    $($name $(| $legacy)* => Some(AuditAction::$variant),)+
                    _ => None,
                }
            }
        }
    };
}

actions! {
    AccountCreate = "account.create",
    AccountInviteOwner = "account.invite_owner",
    PersonInvite = "person.invite",
    PersonRemove = "person.remove",
    PersonSignInLinkReissue = "person.sign_in_link_reissue",
    RoleChange = "role.change",
    OwnershipTransfer = "ownership.transfer",
    SessionSignIn = "session.sign_in",
    SessionSignInFailed = "session.sign_in_failed",
    SessionSignOut = "session.sign_out",
    SessionRevoke = "session.revoke",
    SessionRevokeAll = "session.revoke_all",
    SessionRevokeAllByAdmin = "session.revoke_all_by_admin",
    WelcomeRefused = "welcome.refused",
    ApiKeyCreate = "api_key.create",
    ApiKeyRevoke = "api_key.revoke",
    ApiKeyUse = "api_key.use",
    ApiKeyRefused = "api_key.refused",
    ShareCreate = "share.create",
    ShareRevoke = "share.revoke",
    VaultSecretSet = "vault.secret_set" | "secret.set",
    VaultSecretRemove = "vault.secret_remove" | "secret.remove",
    VaultConnectionSet = "vault.connection_set" | "connection.add",
    VaultConnectionRemove = "vault.connection_remove" | "connection.remove",
    VaultConnectionRevoke = "vault.connection_revoke",
    VaultModelKeySet = "vault.model_key_set",
    VaultModelKeyRemove = "vault.model_key_remove",
    KeyRotateAccount = "key.rotate_account",
    KeyRotateRoot = "key.rotate_root",
    KeyRotateRootFinished = "key.rotate_root_finished",
    KeyRotateLinks = "key.rotate_links",
    ModelAdd = "model.add",
    ModelRemove = "model.remove",
    ModelDefault = "model.default",
    ModelTest = "model.test",
    ToolTest = "tool.test",
    GateMail = "gate.mail",
    SupervisorRetries = "supervisor.retries",
    RunStart = "run.start",
    RunApprove = "run.approve",
    RunReject = "run.reject",
    RunRetry = "run.retry",
    RunStop = "run.stop",
    RepairProposed = "repair.proposed",
    RepairAcceptRefused = "repair.accept_refused",
    InterviewStarted = "interview.started",
    InterviewConfirmed = "interview.confirmed",
    InterviewConfirmRefused = "interview.confirm_refused",
    WorkflowSave = "workflow.save",
    WorkflowSaveRefused = "workflow.save_refused",
    WorkflowVersion = "workflow.version",
    WorkspaceWrite = "workspace.write",
    WorkspaceWriteRefused = "workspace.write_refused",
    WorkspaceWriteIntent = "workspace.write_intent",
    WorkspaceWriteRecovered = "workspace.write_recovered",
}

impl std::fmt::Display for AuditAction {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.as_str())
    }
}
