//! People and roles (G26): invite a person with a role (a one-time sign-in link, shown once),
//! change a role, remove a person, hand ownership over. Every rule is the `auth` crate's
//! (`can_grant`, `can_change_role`, `can_remove`, `transfer_ownership`); storage checks the
//! single owner in the transaction that changes roles. Every change is audited.

use std::str::FromStr;

use api_types::{
    InvitePersonRequest, OwnershipRequest, PersonInvited, PersonView, RoleChangeRequest,
};
use auth::Principal;
use auth::{AccountPerson, Role, can_change_role, can_grant, can_remove};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::json;
use storage::people::{
    ApiKeyRecord, KeysOfRemoved, NewPerson, PeopleChange, PeopleWrite, PersonRecord, Written,
};

use crate::authn::{Authenticated, auth_role, stored_role};
use crate::handlers::{Audited, audited_write, ensure_same_account, random_id};
use crate::state::Shared;
use crate::{AppState, Error};

fn view(person: PersonRecord) -> PersonView {
    PersonView {
        id: person.id,
        display_name: person.display_name,
        email: person.email,
        role: person.role.as_str().to_owned(),
        has_password: person.password_hash.is_some(),
        created_at: person.created_at.0,
    }
}

fn parse_role(text: &str) -> Result<Role, Error> {
    Role::from_str(text).map_err(|unknown| Error::InvalidInput {
        field: "role",
        reason: unknown.to_string(),
    })
}

/// The person with this id if they belong to the principal's account; otherwise the same 404
/// as for a person that does not exist.
pub(crate) fn person_in_scope(
    shared: &Shared,
    authenticated: &Authenticated,
    person_id: &str,
) -> Result<PersonRecord, Error> {
    let person = shared
        .store
        .person(person_id)
        .map_err(Error::storage("read person"))?
        .ok_or_else(|| Error::NotFound {
            what: "person",
            id: person_id.to_owned(),
        })?;
    ensure_same_account(authenticated, &person.account, "person", person_id)?;
    Ok(person)
}

/// Maps a refusal of storage to an answer; only [`PeopleChange::Done`] is success.
fn expect_done(operation: &'static str, change: PeopleChange) -> Result<(), Error> {
    match change {
        PeopleChange::Done => Ok(()),
        PeopleChange::NoSuchPerson { person_id, .. } => Err(Error::NotFound {
            what: "person",
            id: person_id,
        }),
        PeopleChange::OwnerOnlyByTransfer { .. } => Err(Error::RoleRule {
            operation,
            source: auth::Denied::OwnershipOnlyByTransfer,
        }),
        PeopleChange::WouldBreakSingleOwner { account, owners } => Err(Error::PeopleRefused {
            operation,
            answer: format!("account {account} would have {owners} owners"),
        }),
        PeopleChange::KeysChanged { person_id, .. } => Err(Error::KeysChanged {
            operation,
            person: person_id,
        }),
        PeopleChange::NewOwnerNeverSignedIn { person_id, .. } => {
            Err(Error::NewOwnerNeverSignedIn {
                operation,
                person: person_id,
            })
        }
        PeopleChange::AlreadySignedIn { person_id, .. } => Err(Error::AlreadySignedIn {
            operation,
            person: person_id,
        }),
    }
}

/// Maps what an audited people write did to an answer.
fn expect_written(operation: &'static str, written: Written) -> Result<(), Error> {
    match written {
        Written::People(change) => expect_done(operation, change),
        Written::Revoked(_) | Written::RevokedCount(_) | Written::Created => Ok(()),
    }
}

/// `GET /api/people`.
pub(crate) async fn list(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
) -> Result<Json<Vec<PersonView>>, Error> {
    let people = state
        .shared
        .store
        .people(&authenticated.account())
        .map_err(Error::storage("list people"))?;
    Ok(Json(people.into_iter().map(view).collect()))
}

/// `POST /api/people`: invites a person with a role no higher than the inviter's (never the
/// owner), and answers the one-time sign-in link once.
pub(crate) async fn invite(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Json(request): Json<InvitePersonRequest>,
) -> Result<(StatusCode, Json<PersonInvited>), Error> {
    let shared = &state.shared;
    let role = parse_role(&request.role)?;
    can_grant(&authenticated.principal, role).map_err(Error::denied("invite a person"))?;
    let display_name = request.display_name.trim().to_owned();
    let email = request.email.trim().to_lowercase();
    if display_name.is_empty() || email.is_empty() || !email.contains('@') {
        return Err(Error::InvalidInput {
            field: "person",
            reason: "a person needs a display name and an email address".to_owned(),
        });
    }
    // A name and an address go into mail headers (issue 41): no line breaks, no control
    // characters, no white space inside an address.
    if display_name.chars().any(char::is_control)
        || email
            .chars()
            .any(|character| character.is_control() || character.is_whitespace())
    {
        return Err(Error::InvalidInput {
            field: "person",
            reason: "a display name holds no line break or control character, and an email \
                     address no space"
                .to_owned(),
        });
    }
    let account = authenticated.account();
    let person_id = random_id("per")?;
    let now = shared.now();
    let (token, link) = crate::bootstrap::new_sign_in_link(
        &person_id,
        now,
        shared.options.sign_in_link_lifetime_millis,
    )?;
    let expires_at = link.expires_at;
    let person = NewPerson {
        id: person_id.clone(),
        account: account.clone(),
        display_name,
        email: email.clone(),
        role: stored_role(role),
        password_hash: None,
        created_at: now,
    };
    let written = audited_write(
        shared,
        "invite a person",
        Audited {
            account: &account,
            actor: authenticated.actor.clone(),
            action: storage::AuditAction::PersonInvite,
            detail: &json!({"person": person_id, "email": email, "role": role.as_str()}),
        },
        PeopleWrite::Invite {
            person: &person,
            link: &link,
        },
    )?;
    expect_written("invite a person", written)?;
    Ok((
        StatusCode::CREATED,
        Json(PersonInvited {
            person_id,
            sign_in_path: format!("/welcome/{}", token.reveal_once()),
            expires_at: expires_at.0,
        }),
    ))
}

/// `PUT /api/people/{id}/role`.
pub(crate) async fn change_role(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(person_id): Path<String>,
    Json(request): Json<RoleChangeRequest>,
) -> Result<Json<PersonView>, Error> {
    let shared = &state.shared;
    let person = person_in_scope(shared, &authenticated, &person_id)?;
    let new_role = parse_role(&request.role)?;
    let current = auth_role(person.role);
    can_change_role(&authenticated.principal, &person.account, current, new_role)
        .map_err(Error::denied("change a role"))?;
    // The person's keys above the new role are revoked with the change (a demoted person keeps
    // no key they could no longer create); storage refuses if they differ from these.
    let revoke_keys: Vec<String> = live_keys_of(shared, &person)?
        .into_iter()
        .filter(|key| key.role > stored_role(new_role))
        .map(|key| key.key_id)
        .collect();
    let written = audited_write(
        shared,
        "change a role",
        Audited {
            account: &person.account,
            actor: authenticated.actor.clone(),
            action: storage::AuditAction::RoleChange,
            detail: &json!({
                "person": person.id,
                "from": current.as_str(),
                "to": new_role.as_str(),
                "revoked_keys": revoke_keys,
            }),
        },
        PeopleWrite::ChangeRole {
            account: &person.account,
            person_id: &person.id,
            role: stored_role(new_role),
            revoke_keys: &revoke_keys,
            at: shared.now(),
        },
    )?;
    expect_written("change a role", written)?;
    let changed = person_in_scope(shared, &authenticated, &person_id)?;
    Ok(Json(view(changed)))
}

/// The live keys `person` created.
pub(crate) fn live_keys_of(
    shared: &Shared,
    person: &PersonRecord,
) -> Result<Vec<ApiKeyRecord>, Error> {
    Ok(shared
        .store
        .api_keys(&person.account)
        .map_err(Error::storage("list API keys"))?
        .into_iter()
        .filter(|key| key.revoked_at.is_none() && key.created_by.as_deref() == Some(&person.id))
        .collect())
}

/// `?keep_keys=ID,ID` of `DELETE /api/people/{id}`: the removed person's keys to keep, each
/// re-assigned to the person who removes (the others are revoked).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct RemoveQuery {
    #[serde(default)]
    keep_keys: String,
}

/// `DELETE /api/people/{id}`: removes a person (never the owner), ending their sessions and
/// revoking every key they created, except the keys to keep, which move to the remover.
pub(crate) async fn remove(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(person_id): Path<String>,
    Query(query): Query<RemoveQuery>,
) -> Result<StatusCode, Error> {
    let keep: Vec<String> = query
        .keep_keys
        .split(',')
        .map(str::trim)
        .filter(|key_id| !key_id.is_empty())
        .map(str::to_owned)
        .collect();
    remove_keeping(&state, &authenticated, &person_id, &keep)?;
    Ok(StatusCode::NO_CONTENT)
}

/// Removes a person, keeping `keep` of their keys for the remover and revoking the others, in
/// one transaction with its audit entry. A key to keep that is not one of the person's live
/// keys refuses the removal (409); a key cannot keep keys (it cannot hold one).
pub(crate) fn remove_keeping(
    state: &AppState,
    authenticated: &Authenticated,
    person_id: &str,
    keep: &[String],
) -> Result<(), Error> {
    let shared = &state.shared;
    let person = person_in_scope(shared, authenticated, person_id)?;
    can_remove(
        &authenticated.principal,
        &person.account,
        auth_role(person.role),
    )
    .map_err(Error::denied("remove a person"))?;
    let remover = match &authenticated.principal {
        Principal::Person { person_id, .. } => person_id.clone(),
        Principal::ApiKey { .. } if keep.is_empty() => String::new(),
        Principal::ApiKey { .. } => {
            return Err(Error::Forbidden {
                principal: "an API key".to_owned(),
                method: "keep the keys of".to_owned(),
                route: "a removed person".to_owned(),
            });
        }
    };
    let live = live_keys_of(shared, &person)?;
    // A kept key becomes the remover's: it must be one they could have created themselves.
    let remover_role = authenticated.principal.role();
    if let Some(key) = live
        .iter()
        .find(|key| keep.contains(&key.key_id) && auth_role(key.role) > remover_role)
    {
        return Err(Error::RoleRule {
            operation: "keep a key of a removed person",
            source: auth::Denied::AboveOwnRole {
                granter: remover_role,
                role: auth_role(key.role),
            },
        });
    }
    let revoke: Vec<String> = live
        .into_iter()
        .map(|key| key.key_id)
        .filter(|key_id| !keep.contains(key_id))
        .collect();
    let written = audited_write(
        shared,
        "remove a person",
        Audited {
            account: &person.account,
            actor: authenticated.actor.clone(),
            action: storage::AuditAction::PersonRemove,
            detail: &json!({
                "person": person.id,
                "role": person.role.as_str(),
                "revoked_keys": revoke,
                "reassigned_keys": keep,
                "reassigned_to": if keep.is_empty() { None } else { Some(&remover) },
            }),
        },
        PeopleWrite::RemovePerson {
            account: &person.account,
            person_id: &person.id,
            keys: KeysOfRemoved {
                revoke: &revoke,
                reassign: keep,
                reassign_to: &remover,
            },
            at: shared.now(),
        },
    )?;
    expect_written("remove a person", written)
}

/// `POST /api/people/{id}/sign-in-link`: a new one-time sign-in link for a person who has
/// never signed in (their first one expired or was lost); every earlier link of theirs stops
/// working, and the re-issue is audited. Like inviting, a person's act (a key never receives a
/// link), by an owner or admin whose role is not below the person's; the owner's own link is
/// re-issued by the operator (`stepward accounts invite-owner`).
pub(crate) async fn reissue_link(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Path(person_id): Path<String>,
) -> Result<(StatusCode, Json<PersonInvited>), Error> {
    let shared = &state.shared;
    let person = person_in_scope(shared, &authenticated, &person_id)?;
    can_remove(
        &authenticated.principal,
        &person.account,
        auth_role(person.role),
    )
    .map_err(Error::denied("re-issue a sign-in link"))?;
    let now = shared.now();
    let (token, link) = crate::bootstrap::new_sign_in_link(
        &person.id,
        now,
        shared.options.sign_in_link_lifetime_millis,
    )?;
    let expires_at = link.expires_at;
    let written = audited_write(
        shared,
        "re-issue a sign-in link",
        Audited {
            account: &person.account,
            actor: authenticated.actor.clone(),
            action: storage::AuditAction::PersonSignInLinkReissue,
            detail: &json!({"person": person.id, "expires_at": expires_at.0}),
        },
        PeopleWrite::ReissueSignInLink {
            account: &person.account,
            link: &link,
        },
    )?;
    expect_written("re-issue a sign-in link", written)?;
    Ok((
        StatusCode::CREATED,
        Json(PersonInvited {
            person_id: person.id,
            sign_in_path: format!("/welcome/{}", token.reveal_once()),
            expires_at: expires_at.0,
        }),
    ))
}

/// `POST /api/ownership`: the owner, signed in as a person, hands the account to another
/// person of it who has signed in at least once, and becomes an admin; both changes in one
/// transaction.
pub(crate) async fn transfer(
    State(state): State<AppState>,
    Extension(authenticated): Extension<Authenticated>,
    Json(request): Json<OwnershipRequest>,
) -> Result<StatusCode, Error> {
    let shared = &state.shared;
    let new_owner = person_in_scope(shared, &authenticated, &request.new_owner)?;
    let transfer = auth::transfer_ownership(
        &authenticated.principal,
        &AccountPerson {
            person_id: new_owner.id.clone(),
            account_id: new_owner.account.clone(),
            role: auth_role(new_owner.role),
        },
    )
    .map_err(Error::denied("transfer ownership"))?;
    let written = audited_write(
        shared,
        "transfer ownership",
        Audited {
            account: &new_owner.account,
            actor: authenticated.actor.clone(),
            action: storage::AuditAction::OwnershipTransfer,
            detail: &json!({
                "from": transfer.previous_owner.person_id,
                "to": transfer.new_owner.person_id,
                "new_owner_was": transfer.new_owner.from.as_str(),
            }),
        },
        PeopleWrite::TransferOwnership {
            account: &new_owner.account,
            current_owner: &transfer.previous_owner.person_id,
            new_owner: &transfer.new_owner.person_id,
        },
    )?;
    expect_written("transfer ownership", written)?;
    Ok(StatusCode::NO_CONTENT)
}
