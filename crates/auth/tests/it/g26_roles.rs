//! G26: four roles ordered by privilege; no one grants above their own role; ownership moves
//! only by transfer and the account keeps exactly one owner; an API key never acts as a person.

use std::collections::BTreeMap;

use auth::{
    AccountPerson, Actor, ActorKind, ApiKeySecret, Denied, Error, OwnerCount, Principal, Role,
    RoleChange, can_change_role, can_grant, can_remove, can_start_session, check_single_owner,
    transfer_ownership,
};

use crate::support::{ACCOUNT, OTHER_ACCOUNT, key, person, stranger};

#[test]
fn g26_roles_are_ordered_by_privilege_and_named() {
    assert!(Role::Viewer < Role::Member);
    assert!(Role::Member < Role::Admin);
    assert!(Role::Admin < Role::Owner);
    for role in Role::ALL {
        assert_eq!(role.as_str().parse::<Role>().unwrap(), role);
        assert_eq!(role.to_string(), role.as_str());
    }
    assert_eq!(
        "Admin".parse::<Role>().unwrap_err().to_string(),
        "`Admin` is not a role; the roles are viewer, member, admin and owner"
    );
}

/// Who may grant what, person or key alike, written out by hand.
#[test]
fn g26_no_one_grants_above_their_own_role() {
    use Role::{Admin, Member, Owner, Viewer};
    let may_grant: [(Role, &[Role]); 4] = [
        (Viewer, &[]),
        (Member, &[]),
        (Admin, &[Viewer, Member, Admin]),
        (Owner, &[Viewer, Member, Admin]),
    ];
    for (granter_role, allowed) in may_grant {
        for granter in [person(granter_role), key(granter_role)] {
            for role in Role::ALL {
                let answer = can_grant(&granter, role);
                assert_eq!(
                    answer.is_ok(),
                    allowed.contains(&role),
                    "{granter:?} granting {role}: {answer:?}"
                );
            }
        }
    }
    assert_eq!(
        can_grant(&person(Member), Viewer),
        Err(Denied::NeedsAdmin {
            actor_kind: ActorKind::Person,
            role: Member
        })
    );
    assert_eq!(
        can_grant(&person(Admin), Owner),
        Err(Denied::OwnershipOnlyByTransfer)
    );
    // The owner too: granting the owner role would make a second owner.
    assert_eq!(
        can_grant(&person(Owner), Owner),
        Err(Denied::OwnershipOnlyByTransfer)
    );
}

#[test]
fn g26_a_key_cannot_create_a_key_above_its_own_role() {
    let (_, stored) = ApiKeySecret::generate(&key(Role::Admin), Role::Admin).unwrap();
    assert_eq!(stored.role, Role::Admin);
    let (_, stored) = ApiKeySecret::generate(&key(Role::Admin), Role::Viewer).unwrap();
    assert_eq!(stored.role, Role::Viewer);
    for (creator, role) in [
        (key(Role::Admin), Role::Owner),
        (key(Role::Member), Role::Member),
        (key(Role::Viewer), Role::Viewer),
        (person(Role::Member), Role::Viewer),
    ] {
        let denied = ApiKeySecret::generate(&creator, role).err().unwrap();
        assert!(
            matches!(denied, Error::Denied(_)),
            "{creator:?} creating a {role} key: {denied}"
        );
    }
}

#[test]
fn g26_a_key_cannot_start_a_session() {
    for role in Role::ALL {
        assert_eq!(can_start_session(&person(role)), Ok(()));
        assert_eq!(
            can_start_session(&key(role)),
            Err(Denied::KeyCannotStartSession)
        );
    }
}

#[test]
fn g26_what_a_key_does_is_recorded_as_the_key() {
    let api_key = Principal::ApiKey {
        key_id: "key-7".to_owned(),
        account_id: ids::AccountId::parse(ACCOUNT).unwrap(),
        role: Role::Admin,
    };
    assert_eq!(api_key.actor(), Actor::ApiKey { key_id: "key-7" });
    let someone = Principal::Person {
        person_id: "person-3".to_owned(),
        account_id: ids::AccountId::parse(ACCOUNT).unwrap(),
        role: Role::Member,
    };
    assert_eq!(
        someone.actor(),
        Actor::Person {
            person_id: "person-3"
        }
    );
}

fn apply(roles: &mut BTreeMap<String, Role>, change: &RoleChange) {
    let current = roles.get_mut(&change.person_id).unwrap();
    assert_eq!(
        *current, change.from,
        "the change starts from the stored role"
    );
    *current = change.to;
}

#[test]
fn g26_ownership_transfer_keeps_exactly_one_owner() {
    let mut roles = BTreeMap::from([
        ("alice".to_owned(), Role::Owner),
        ("bob".to_owned(), Role::Member),
        ("carol".to_owned(), Role::Viewer),
    ]);
    check_single_owner(roles.values().copied()).unwrap();
    let alice = Principal::Person {
        person_id: "alice".to_owned(),
        account_id: ids::AccountId::parse(ACCOUNT).unwrap(),
        role: Role::Owner,
    };
    let bob = AccountPerson {
        person_id: "bob".to_owned(),
        account_id: ids::AccountId::parse(ACCOUNT).unwrap(),
        role: Role::Member,
    };
    let transfer = transfer_ownership(&alice, &bob).unwrap();
    assert_eq!(
        transfer.previous_owner,
        RoleChange {
            person_id: "alice".to_owned(),
            from: Role::Owner,
            to: Role::Admin
        }
    );
    assert_eq!(
        transfer.new_owner,
        RoleChange {
            person_id: "bob".to_owned(),
            from: Role::Member,
            to: Role::Owner
        }
    );
    apply(&mut roles, &transfer.previous_owner);
    apply(&mut roles, &transfer.new_owner);
    check_single_owner(roles.values().copied()).unwrap();
    assert_eq!(roles["bob"], Role::Owner);
    assert_eq!(roles["alice"], Role::Admin);
}

#[test]
fn g26_only_the_owner_as_a_person_transfers_ownership_to_someone_else_of_the_account() {
    let target = AccountPerson {
        person_id: "bob".to_owned(),
        account_id: ids::AccountId::parse(ACCOUNT).unwrap(),
        role: Role::Admin,
    };
    for not_owner in [
        person(Role::Admin),
        person(Role::Member),
        // A key never hands over an account, whatever role it claims.
        key(Role::Owner),
        key(Role::Admin),
    ] {
        assert_eq!(
            transfer_ownership(&not_owner, &target),
            Err(Denied::OnlyTheOwnerTransfers),
            "{not_owner:?}"
        );
    }
    let owner = person(Role::Owner);
    let Actor::Person { person_id } = owner.actor() else {
        panic!("a person acts as a person")
    };
    for bad_target in [
        AccountPerson {
            person_id: "bob".to_owned(),
            account_id: ids::AccountId::parse(OTHER_ACCOUNT).unwrap(),
            role: Role::Admin,
        },
        AccountPerson {
            person_id: person_id.to_owned(),
            account_id: ids::AccountId::parse(ACCOUNT).unwrap(),
            role: Role::Owner,
        },
        AccountPerson {
            person_id: "second-owner".to_owned(),
            account_id: ids::AccountId::parse(ACCOUNT).unwrap(),
            role: Role::Owner,
        },
    ] {
        assert_eq!(
            transfer_ownership(&owner, &bad_target),
            Err(Denied::TransferTargetInvalid),
            "{bad_target:?}"
        );
    }
}

#[test]
fn g26_the_owner_is_never_removed_nor_demoted() {
    for actor in [person(Role::Owner), person(Role::Admin), key(Role::Admin)] {
        assert_eq!(
            can_remove(
                &actor,
                &ids::AccountId::parse(ACCOUNT).unwrap(),
                Role::Owner
            ),
            Err(Denied::OwnerIsPermanent)
        );
        for new in Role::ALL {
            assert_eq!(
                can_change_role(
                    &actor,
                    &ids::AccountId::parse(ACCOUNT).unwrap(),
                    Role::Owner,
                    new
                ),
                Err(Denied::OwnerIsPermanent),
                "{actor:?} changing the owner to {new}"
            );
        }
    }
}

#[test]
fn g26_role_changes_follow_the_grant_rules() {
    use Role::{Admin, Member, Owner, Viewer};
    assert_eq!(
        can_change_role(
            &person(Admin),
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            Viewer,
            Admin
        ),
        Ok(())
    );
    assert_eq!(
        can_change_role(
            &person(Admin),
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            Admin,
            Viewer
        ),
        Ok(())
    );
    assert_eq!(
        can_change_role(
            &key(Admin),
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            Member,
            Admin
        ),
        Ok(())
    );
    assert_eq!(
        can_change_role(
            &person(Owner),
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            Member,
            Admin
        ),
        Ok(())
    );
    assert_eq!(
        can_change_role(
            &person(Admin),
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            Member,
            Owner
        ),
        Err(Denied::OwnershipOnlyByTransfer)
    );
    assert_eq!(
        can_change_role(
            &person(Member),
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            Viewer,
            Member
        ),
        Err(Denied::NeedsAdmin {
            actor_kind: ActorKind::Person,
            role: Member
        })
    );
    assert_eq!(
        can_change_role(
            &key(Member),
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            Viewer,
            Viewer
        ),
        Err(Denied::NeedsAdmin {
            actor_kind: ActorKind::ApiKey,
            role: Member
        })
    );
    assert_eq!(
        can_change_role(
            &stranger(Owner),
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            Viewer,
            Member
        ),
        Err(Denied::AnotherAccount)
    );
}

#[test]
fn g26_removal_needs_an_admin_of_the_account() {
    use Role::{Admin, Member, Owner, Viewer};
    assert_eq!(
        can_remove(
            &person(Admin),
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            Admin
        ),
        Ok(())
    );
    assert_eq!(
        can_remove(
            &person(Owner),
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            Admin
        ),
        Ok(())
    );
    assert_eq!(
        can_remove(
            &key(Admin),
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            Member
        ),
        Ok(())
    );
    assert_eq!(
        can_remove(
            &person(Member),
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            Viewer
        ),
        Err(Denied::NeedsAdmin {
            actor_kind: ActorKind::Person,
            role: Member
        })
    );
    assert_eq!(
        can_remove(
            &stranger(Owner),
            &ids::AccountId::parse(ACCOUNT).unwrap(),
            Viewer
        ),
        Err(Denied::AnotherAccount)
    );
}

#[test]
fn g26_an_account_has_exactly_one_owner() {
    use Role::{Admin, Member, Owner};
    assert_eq!(check_single_owner([Owner, Admin, Member]), Ok(()));
    assert_eq!(
        check_single_owner([Admin, Member]),
        Err(OwnerCount { owners: 0 })
    );
    assert_eq!(
        check_single_owner([Owner, Owner]),
        Err(OwnerCount { owners: 2 })
    );
}
