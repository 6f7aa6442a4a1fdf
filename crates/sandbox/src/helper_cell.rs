//! A cell for an unprivileged helper process of the platform's (an agent step's file-tool
//! helper): a host uid and gid of its own, distinct from every sandbox's and every other live
//! cell's (a slot, as for sandboxes), and a cgroup with a memory and a task limit, which the
//! platform moves the helper into before it hands it any work. Dropping the cell kills what
//! is left in the group, removes it and frees the slot.

use std::path::Path;

use crate::Error;
use crate::cgroup::{CgroupLayout, SandboxCgroup};
use crate::slot::{Slot, SlotAllocator};

/// The memory a helper's group may use: a file tool holds at most a few times its 16 MiB
/// message and a 4 MiB file.
pub const HELPER_MEMORY_BYTES: u64 = 256 * 1024 * 1024;
/// The tasks a helper's group may hold: the helper is one single-threaded process.
pub const HELPER_TASKS: u32 = 8;
/// How many cells may be alive at once (one per agent view).
pub const HELPER_CELLS: u32 = 256;

/// Where a backend takes its cells from.
#[derive(Debug)]
pub(crate) struct HelperCells {
    slots: SlotAllocator,
    uid_base: u32,
}

impl HelperCells {
    pub(crate) fn new(state_dir: &Path, uid_base: u32) -> Result<HelperCells, Error> {
        Ok(HelperCells {
            slots: SlotAllocator::new(&state_dir.join("helper-slots"), HELPER_CELLS)?,
            uid_base,
        })
    }

    /// A fresh cell: its slot's uid and gid, and a group of its own under `cgroups`.
    pub(crate) fn open(&self, cgroups: &CgroupLayout) -> Result<HelperCell, Error> {
        let slot = self.slots.acquire()?;
        let id = self
            .uid_base
            .checked_add(slot.index())
            .ok_or_else(|| Error::LayerFailed {
                layer: String::from("uid/gid maps"),
                detail: String::from("the helpers' uid base + slot overflows"),
            })?;
        let limits = crate::Limits {
            memory_bytes: HELPER_MEMORY_BYTES,
            pids: HELPER_TASKS,
            ..crate::Limits::default()
        };
        let group = cgroups.create_sandbox(
            &format!("helper-{}-{}", slot.index(), crate::unique_nanos()),
            &limits,
        )?;
        Ok(HelperCell {
            user: Some((id, id)),
            group: Some(group),
            _slot: Some(slot),
        })
    }
}

/// One helper cell; see the module docs.
#[derive(Debug)]
pub struct HelperCell {
    user: Option<(u32, u32)>,
    group: Option<SandboxCgroup>,
    _slot: Option<Slot>,
}

impl HelperCell {
    /// A cell that changes nothing: the helper runs as the platform's user, in its group
    /// (the `unisolated` backend, "your laptop, your call").
    pub fn unconfined() -> HelperCell {
        HelperCell {
            user: None,
            group: None,
            _slot: None,
        }
    }

    /// The uid and gid the helper runs as, and owns its tree as; `None` to keep the
    /// platform's.
    pub fn user(&self) -> Option<(u32, u32)> {
        self.user
    }

    /// Moves the process `pid` (a helper the caller started, not yet handed any work) into
    /// the cell's group.
    pub fn enter(&self, pid: u32) -> Result<(), Error> {
        match &self.group {
            Some(group) => group.add_process(pid),
            None => Ok(()),
        }
    }

    /// The group's directories, for tests and diagnostics.
    pub fn group_dirs(&self) -> Vec<std::path::PathBuf> {
        self.group
            .as_ref()
            .map(SandboxCgroup::dirs)
            .unwrap_or_default()
    }
}
