//! Process identity: a pid alone does not name a process. After a reboot,
//! in a new pid namespace, or just after enough time, the same number
//! belongs to someone else, and signalling it would hurt a stranger. So
//! Holon records a process as (pid, start time in clock ticks since boot
//! from `/proc/<pid>/stat`, boot id from `/proc/sys/kernel/random/boot_id`)
//! and signals only when all three still match. Reading and checking an
//! identity is the runtime's (`runtime::process_identity`).

use serde::{Deserialize, Serialize};

/// What proves that a pid still names the process Holon started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessIdentity {
    pub pid: i32,
    /// Field 22 of `/proc/<pid>/stat`: start time after boot, in ticks.
    pub start_ticks: u64,
    pub boot_id: String,
}
