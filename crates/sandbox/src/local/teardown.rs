//! What one sandbox holds on the host, torn down in one written order (issue 18 §3), not in
//! whatever order struct fields or `let` bindings happen to drop in: moving a field must never
//! free a host uid or remove a scratch folder while the sandbox still runs.
//!
//! The order, on success, on every error path (a sandbox that was only partly built holds
//! only its first parts) and on panic:
//! 1. the helper: killing it takes the sandbox's pid namespace, and every process in it, along;
//! 2. the egress network (its veth and namespace);
//! 3. the cgroups: every member killed, the groups removed;
//! 4. the scratch folder (`/work`'s tmpfs and the folder);
//! 5. the slot: its host uid and addresses are free again only when nothing of the sandbox
//!    is left.
//!
//! The guard is generic over its parts so that a test can check the order with recording
//! fakes, without root.

use crate::Error;

/// One sandbox's parts; dropping it tears them down in the order above.
pub(crate) struct Teardown<Helper, Network, Cgroup, Scratch, Slot> {
    helper: Option<Helper>,
    network: Option<Network>,
    cgroup: Option<Cgroup>,
    scratch: Option<Scratch>,
    slot: Option<Slot>,
}

fn gone(part: &str) -> Error {
    Error::HelperProtocol {
        detail: format!("the sandbox's {part} was already torn down"),
    }
}

impl<Helper, Network, Cgroup, Scratch, Slot> Teardown<Helper, Network, Cgroup, Scratch, Slot> {
    /// A sandbox holding its slot only (the first thing taken).
    pub(crate) fn new(slot: Slot) -> Self {
        Self {
            helper: None,
            network: None,
            cgroup: None,
            scratch: None,
            slot: Some(slot),
        }
    }

    pub(crate) fn hold_scratch(&mut self, scratch: Scratch) {
        self.scratch = Some(scratch);
    }

    pub(crate) fn hold_cgroup(&mut self, cgroup: Cgroup) {
        self.cgroup = Some(cgroup);
    }

    pub(crate) fn hold_network(&mut self, network: Network) {
        self.network = Some(network);
    }

    pub(crate) fn hold_helper(&mut self, helper: Helper) {
        self.helper = Some(helper);
    }

    pub(crate) fn helper(&mut self) -> Result<&mut Helper, Error> {
        self.helper.as_mut().ok_or_else(|| gone("helper"))
    }

    pub(crate) fn network(&self) -> Option<&Network> {
        self.network.as_ref()
    }

    pub(crate) fn cgroup(&self) -> Result<&Cgroup, Error> {
        self.cgroup.as_ref().ok_or_else(|| gone("cgroup"))
    }

    /// The helper and the cgroups at once (the watch reads one and may destroy the other).
    pub(crate) fn helper_and_cgroup(&mut self) -> Result<(&mut Helper, &mut Cgroup), Error> {
        match (self.helper.as_mut(), self.cgroup.as_mut()) {
            (Some(helper), Some(cgroup)) => Ok((helper, cgroup)),
            (None, _) => Err(gone("helper")),
            (_, None) => Err(gone("cgroup")),
        }
    }

    pub(crate) fn scratch(&self) -> Result<&Scratch, Error> {
        self.scratch.as_ref().ok_or_else(|| gone("scratch folder"))
    }

    /// Removes the egress network now, ahead of the rest (callers expect it gone when the
    /// step's observation arrives); the others keep their order.
    pub(crate) fn drop_network(&mut self) {
        drop(self.network.take());
    }

    fn tear_down(&mut self) {
        drop(self.helper.take());
        drop(self.network.take());
        drop(self.cgroup.take());
        drop(self.scratch.take());
        drop(self.slot.take());
    }
}

impl<Helper, Network, Cgroup, Scratch, Slot> Drop
    for Teardown<Helper, Network, Cgroup, Scratch, Slot>
{
    fn drop(&mut self) {
        self.tear_down();
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::rc::Rc;

    use super::Teardown;

    type Log = Rc<RefCell<Vec<&'static str>>>;

    /// A part that records when it is torn down.
    struct Recorded(&'static str, Log);

    impl Drop for Recorded {
        fn drop(&mut self) {
            self.1.borrow_mut().push(self.0);
        }
    }

    type Parts = Teardown<Recorded, Recorded, Recorded, Recorded, Recorded>;

    fn complete(log: &Log) -> Parts {
        let part = |name| Recorded(name, log.clone());
        let mut parts = Parts::new(part("slot"));
        parts.hold_scratch(part("scratch"));
        parts.hold_cgroup(part("cgroup"));
        parts.hold_network(part("network"));
        parts.hold_helper(part("helper"));
        parts
    }

    #[test]
    fn g6_a_sandbox_is_torn_down_helper_first_and_slot_last() {
        let log = Log::default();
        drop(complete(&log));
        assert_eq!(
            *log.borrow(),
            ["helper", "network", "cgroup", "scratch", "slot"]
        );
    }

    /// A sandbox whose build failed after its cgroups (the network could not be built) frees
    /// what it holds in the same order.
    #[test]
    fn g6_a_partly_built_sandbox_is_torn_down_in_the_same_order() {
        let log = Log::default();
        let part = |name| Recorded(name, log.clone());
        let build = || -> Result<Parts, &'static str> {
            let mut parts = Parts::new(part("slot"));
            parts.hold_scratch(part("scratch"));
            parts.hold_cgroup(part("cgroup"));
            Err("the egress network failed")?;
            Ok(parts)
        };
        assert!(build().is_err());
        assert_eq!(*log.borrow(), ["cgroup", "scratch", "slot"]);
    }

    /// The network goes early when the step is done; the rest keeps its order, and an error
    /// on the way (the helper's watch failing) tears down the same way.
    #[test]
    fn g6_an_early_network_and_an_error_keep_the_order() {
        let log = Log::default();
        let mut parts = complete(&log);
        parts.drop_network();
        assert_eq!(*log.borrow(), ["network"]);
        let watch = |parts: Parts| -> Result<(), &'static str> {
            let _held = parts;
            Err("the watch failed")
        };
        assert!(watch(parts).is_err());
        assert_eq!(
            *log.borrow(),
            ["network", "helper", "cgroup", "scratch", "slot"]
        );
    }

    #[test]
    fn g6_a_panic_tears_a_sandbox_down_in_the_same_order() {
        let log = Log::default();
        let parts = complete(&log);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
            let _held = parts;
            panic!("a bug while the sandbox ran");
        }));
        assert!(result.is_err());
        assert_eq!(
            *log.borrow(),
            ["helper", "network", "cgroup", "scratch", "slot"]
        );
    }

    #[test]
    fn g6_a_torn_down_part_is_an_error_not_a_panic() {
        let log = Log::default();
        let mut parts = Parts::new(Recorded("slot", log.clone()));
        assert!(parts.helper().is_err());
        assert!(parts.cgroup().is_err());
        assert!(parts.helper_and_cgroup().is_err());
        assert!(parts.scratch().is_err());
        assert!(parts.network().is_none());
    }
}
