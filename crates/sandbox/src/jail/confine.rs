//! Landlock: a second, path-based fence inside the already minimal root. Read (and execute)
//! only what the plan lists, write only `/work`, `/tmp` and the null device; signals and
//! abstract unix sockets scoped to the sandbox where the kernel can. Best effort: a kernel
//! without Landlock gets a recorded note, never a failure.

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr,
    RulesetStatus, Scope, path_beneath_rules,
};

use crate::jail::plan::LandlockPlan;
use crate::jail::sys::LandlockOutcome;

/// The newest ABI this code was written against; older kernels get the subset they know.
const TARGET_ABI: ABI = ABI::V6;

pub(crate) fn apply_landlock(plan: &LandlockPlan) -> LandlockOutcome {
    let read_execute = AccessFs::from_read(TARGET_ABI);
    let read_write = AccessFs::from_all(TARGET_ABI) & !AccessFs::Execute;
    let write_files = AccessFs::from_file(TARGET_ABI) & !AccessFs::Execute;
    let result = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(TARGET_ABI))
        .and_then(|ruleset| ruleset.scope(Scope::AbstractUnixSocket | Scope::Signal))
        .and_then(|ruleset| ruleset.create())
        .and_then(|ruleset| ruleset.add_rules(path_beneath_rules(&plan.read_execute, read_execute)))
        .and_then(|ruleset| ruleset.add_rules(path_beneath_rules(&plan.read_write, read_write)))
        .and_then(|ruleset| ruleset.add_rules(path_beneath_rules(&plan.write_files, write_files)))
        .and_then(|ruleset| ruleset.restrict_self());
    match result {
        Ok(status) => match status.ruleset {
            RulesetStatus::FullyEnforced => LandlockOutcome::Enforced,
            RulesetStatus::PartiallyEnforced => LandlockOutcome::PartiallyEnforced {
                detail: String::from("the kernel's Landlock ABI is older than v6"),
            },
            RulesetStatus::NotEnforced => LandlockOutcome::Unavailable {
                detail: String::from(
                    "the kernel does not enforce Landlock (not built or not enabled in lsm=)",
                ),
            },
        },
        Err(error) => LandlockOutcome::Unavailable {
            detail: error.to_string(),
        },
    }
}
