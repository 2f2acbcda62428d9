//! Tasks: background work an agent supervises (a command, a child agent),
//! with its lifecycle status. The transitions between statuses are the
//! runtime's rule (`runtime::tasks::apply_transition`).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskKind {
    CommandTask,
    ChildAgentTask,
    SleepJob,
    /// Legacy persisted child-agent task; never blocks scheduling.
    SubagentTask,
    /// Legacy persisted child-agent task; never blocks scheduling.
    WorktreeSubagentTask,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Queued,
    Running,
    Cancelling,
    Completed,
    Failed,
    Cancelled,
    Interrupted,
}

impl TaskStatus {
    pub fn is_terminal(self) -> bool {
        match self {
            TaskStatus::Completed
            | TaskStatus::Failed
            | TaskStatus::Cancelled
            | TaskStatus::Interrupted => true,
            TaskStatus::Queued | TaskStatus::Running | TaskStatus::Cancelling => false,
        }
    }

    /// Position in the monotonic lifecycle; terminal statuses share the top.
    pub fn rank(self) -> u8 {
        match self {
            TaskStatus::Queued => 0,
            TaskStatus::Running => 1,
            TaskStatus::Cancelling => 2,
            TaskStatus::Completed
            | TaskStatus::Failed
            | TaskStatus::Cancelled
            | TaskStatus::Interrupted => 3,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitPolicy {
    #[default]
    Background,
    Blocking,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    pub id: String,
    pub agent_id: String,
    pub kind: TaskKind,
    pub status: TaskStatus,
    #[serde(default)]
    pub wait_policy: WaitPolicy,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_item_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_message_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    #[serde(default, skip_serializing_if = "TaskDetail::is_empty")]
    pub detail: TaskDetail,
    pub created_at: String,
    pub updated_at: String,
    /// Why a failed or interrupted task ended so (category `task`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_artifact: Option<Box<super::usage::FailureArtifact>>,
}

impl TaskRecord {
    /// A command task's details as a client shows them: the command and
    /// its origin trimmed, blank ones `None`. Members the record lacks
    /// (another kind of task, a record from an older Holon) are empty.
    pub fn command_detail(&self) -> CommandDetail {
        let d = &self.detail;
        let nonblank = |s: &Option<String>| {
            s.as_deref()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        CommandDetail {
            cmd: nonblank(&d.cmd),
            origin: d.origin,
            exit_status: d.exit_status,
            duration_ms: d.duration_ms,
            accepts_input: d.accepts_input.unwrap_or(false),
        }
    }
}

/// The members of a command task's detail a client shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CommandDetail {
    /// The command, trimmed; `None` when blank.
    pub cmd: Option<String>,
    pub origin: Option<CommandOrigin>,
    pub exit_status: Option<i64>,
    pub duration_ms: Option<u64>,
    pub accepts_input: bool,
}

/// Who started a command task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandOrigin {
    /// The operator: `!cmd` in a console, or `task.run`.
    Operator,
    /// An agent's tool call.
    Agent,
}

/// Where a private child works.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ChildWorkspaceMode {
    /// The parent's active workspace, as it is (a parent's worktree is
    /// shared, never managed by the child).
    #[default]
    Inherit,
    /// Its own managed worktree of the parent's active git workspace,
    /// removed when clean at the end, retained when it holds changes.
    Worktree,
}

/// A child's managed worktree once the child ended, and what its cleanup
/// did with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChildWorktree {
    pub path: String,
    #[serde(default)]
    pub branch: String,
    /// Files with changes when the child ended.
    #[serde(default)]
    pub changed_files: u64,
    pub cleanup: WorktreeCleanup,
}

/// What a child's worktree became at the child's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorktreeCleanup {
    /// It had no changes and was removed.
    Removed,
    /// It holds changes and was kept for review.
    Retained,
    /// Removing it failed; it is still there.
    CleanupFailed,
    /// Said by another build of Holon in words this one does not know (a
    /// client reads it rather than failing; never written).
    #[serde(other)]
    Unknown,
}

impl WorktreeCleanup {
    pub fn as_str(self) -> &'static str {
        match self {
            WorktreeCleanup::Removed => "removed",
            WorktreeCleanup::Retained => "retained",
            WorktreeCleanup::CleanupFailed => "cleanup_failed",
            WorktreeCleanup::Unknown => "unknown",
        }
    }
}

/// Declares [`TaskDetail`]: each member once, with its key (the member's
/// name) and type; reading, writing and merging follow from the list.
macro_rules! task_detail {
    ($( $(#[$doc:meta])* $key:ident: $ty:ty, )*) => {
        /// What a task's record keeps beyond its lifecycle, written in
        /// parts as the task goes (created, started, ended, its result
        /// queued) and merged: a later part's member replaces an earlier
        /// one's. Stored and sent as one JSON object whose keys are the
        /// members' names.
        ///
        /// Every member is optional: a command task has no child, a child
        /// task no command, and a record from an older Holon may lack any.
        /// Reading never fails and never loses a key: one this Holon does
        /// not know, or whose value does not read as its member's type or
        /// would not write back the same, is kept in `other` as written
        /// and written back unchanged.
        #[derive(Debug, Clone, Default, PartialEq)]
        pub struct TaskDetail {
            $( $(#[$doc])* pub $key: Option<$ty>, )*
            /// Keys this Holon does not read (unknown, or of another type
            /// than it expects), as written.
            pub other: serde_json::Map<String, serde_json::Value>,
        }

        impl TaskDetail {
            /// The members' keys, in the order they are declared.
            pub const KEYS: &'static [&'static str] = &[$( stringify!($key), )*];

            /// Read an object's members; see the type's doc for what is
            /// kept where.
            fn from_object(mut map: serde_json::Map<String, serde_json::Value>) -> TaskDetail {
                TaskDetail {
                    $( $key: take(&mut map, stringify!($key)), )*
                    other: map,
                }
            }

            /// The object this detail is stored as. A typed member wins
            /// over a key of the same name in `other`.
            fn to_object(&self) -> serde_json::Map<String, serde_json::Value> {
                let mut map = self.other.clone();
                $( put(&mut map, stringify!($key), &self.$key); )*
                map
            }

            /// Lay `more` over this detail: each member `more` has (typed
            /// or kept in `other`) replaces this one's.
            pub fn merge(&mut self, more: TaskDetail) {
                $(
                    if more.$key.is_some() {
                        self.other.remove(stringify!($key));
                        self.$key = more.$key;
                    }
                )*
                for (key, value) in more.other {
                    match key.as_str() {
                        $( stringify!($key) => self.$key = None, )*
                        _ => {}
                    }
                    self.other.insert(key, value);
                }
            }

            /// Whether there is nothing to keep (the record then has no
            /// `detail`).
            pub fn is_empty(&self) -> bool {
                true $( && self.$key.is_none() )* && self.other.is_empty()
            }
        }
    };
}

task_detail! {
    // What a command task runs, from its creation.
    /// The command line.
    cmd: String,
    /// Where it runs.
    workdir: String,
    shell: String,
    login: bool,
    /// Whether it runs on a pseudo-terminal.
    tty: bool,
    /// Whether `TaskInput` may write to it.
    accepts_input: bool,
    origin: CommandOrigin,
    /// The sandbox mode it runs under (`off` when none).
    sandbox: String,
    /// The sandbox's network setting (`on` when none).
    network: String,
    /// The file its output goes to.
    output_path: String,
    /// The file a held command's stderr tail goes to.
    stderr_path: String,
    /// Whether its end queues a task-result message to its agent.
    terminal_reentry: bool,
    // Once it started.
    pid: i32,
    started_at_ms: i64,
    process_identity: crate::model::process::ProcessIdentity,
    /// Whether the command holder runs it (so it outlives the runtime).
    held: bool,
    // Once it ended.
    exit_status: i64,
    /// The signal that ended it.
    signal: i32,
    duration_ms: u64,
    /// The tail of its output.
    output_preview: String,
    output_bytes: u64,
    output_truncated: bool,
    /// Why it could not start.
    spawn_error: String,
    /// The task-result message queued for its end.
    result_message_id: String,
    // A child-agent task.
    child_agent_id: String,
    label: String,
    preset: String,
    workspace_mode: ChildWorkspaceMode,
    /// The child's managed worktree at its end.
    worktree: ChildWorktree,
    /// The child's final report, bounded.
    child_result: String,
    /// The work item, as records before the record's own field said it.
    work_item_id: String,
}

/// `key` taken out of `map` when it reads as `T` and writes back as it
/// was (so nothing inside it is lost: a record's unknown field, a default
/// filled in); otherwise left in `map`. A `null` reads as absent.
fn take<T: serde::de::DeserializeOwned + Serialize>(
    map: &mut serde_json::Map<String, serde_json::Value>,
    key: &str,
) -> Option<T> {
    let value = map.get(key)?;
    if value.is_null() {
        map.remove(key);
        return None;
    }
    let typed = T::deserialize(value).ok()?;
    if serde_json::to_value(&typed).ok().as_ref() != Some(value) {
        return None;
    }
    map.remove(key);
    Some(typed)
}

fn put<T: Serialize>(
    map: &mut serde_json::Map<String, serde_json::Value>,
    key: &str,
    value: &Option<T>,
) {
    if let Some(v) = value.as_ref().and_then(|v| serde_json::to_value(v).ok()) {
        map.insert(key.to_owned(), v);
    }
}

impl TaskDetail {
    /// A detail read from any JSON value: an object's members as the
    /// type's doc says; `null` is empty; anything else (never written by
    /// Holon) is kept whole in `other` under `value`.
    pub fn from_value(value: serde_json::Value) -> TaskDetail {
        match value {
            serde_json::Value::Object(map) => TaskDetail::from_object(map),
            serde_json::Value::Null => TaskDetail::default(),
            other => TaskDetail {
                other: [("value".to_owned(), other)].into_iter().collect(),
                ..TaskDetail::default()
            },
        }
    }
}

impl Serialize for TaskDetail {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_object().serialize(s)
    }
}

impl<'de> Deserialize<'de> for TaskDetail {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<TaskDetail, D::Error> {
        serde_json::Value::deserialize(d).map(TaskDetail::from_value)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct TaskInputReceipt {
    pub task_id: String,
    pub accepted_input: bool,
    pub input_target: std::borrow::Cow<'static, str>,
    pub bytes_written: usize,
    pub summary_text: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(v: serde_json::Value) -> TaskDetail {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_detail_reads_its_members_and_writes_them_back_as_written() {
        let written = json!({
            "cmd": "cargo test", "origin": "agent", "tty": false, "exit_status": 101,
            "process_identity": {"pid": 7, "start_ticks": 9, "boot_id": "b"},
            "workspace_mode": "worktree",
            "worktree": {"path": "/w", "branch": "b", "changed_files": 0, "cleanup": "removed"},
        });
        let d = read(written.clone());
        assert_eq!(d.cmd.as_deref(), Some("cargo test"));
        assert_eq!(d.origin, Some(CommandOrigin::Agent));
        assert_eq!(d.exit_status, Some(101));
        assert_eq!(d.process_identity.as_ref().map(|p| p.pid), Some(7));
        assert_eq!(d.workspace_mode, Some(ChildWorkspaceMode::Worktree));
        assert!(d.other.is_empty(), "{:?}", d.other);
        assert_eq!(serde_json::to_value(&d).unwrap(), written);
    }

    /// Every member with a value of its type, as Holon writes them.
    fn every_member() -> serde_json::Value {
        json!({
            "cmd": "cargo test", "workdir": "/repo", "shell": "/bin/bash", "login": true,
            "tty": false, "accepts_input": true, "origin": "agent", "sandbox": "workspace_write",
            "network": "off", "output_path": "/h/tasks/main/t.log",
            "stderr_path": "/h/tasks/main/t.err", "terminal_reentry": true, "pid": 4242,
            "started_at_ms": 1_764_000_000_000_i64,
            "process_identity": {"pid": 4242, "start_ticks": 99, "boot_id": "b-1"},
            "held": true, "exit_status": -1, "signal": 9, "duration_ms": 1500,
            "output_preview": "ok\n", "output_bytes": 3, "output_truncated": false,
            "spawn_error": "no such shell", "result_message_id": "msg_1",
            "child_agent_id": "child-1", "label": "parser", "preset": "private_child",
            "workspace_mode": "worktree",
            "worktree": {"path": "/w", "branch": "holon/child-1", "changed_files": 2,
                         "cleanup": "retained"},
            "child_result": "done", "work_item_id": "w1",
        })
    }

    #[test]
    fn every_member_reads_its_type_and_writes_it_back() {
        let written = every_member();
        assert_eq!(
            written.as_object().map(|o| o.len()),
            Some(TaskDetail::KEYS.len()),
            "every_member names each member once"
        );
        let d = read(written.clone());
        assert!(d.other.is_empty(), "not read: {:?}", d.other);
        assert_eq!(serde_json::to_value(&d).unwrap(), written);
    }

    #[test]
    fn records_as_older_builds_wrote_them_read_whole() {
        // A finished command and an ended child of each workspace mode,
        // their members as written (nulls included); a null is absent.
        for written in [
            json!({"cmd": "ls", "workdir": "/r", "accepts_input": false, "shell": "/bin/sh",
                   "login": false, "tty": false, "output_path": "/o.log",
                   "terminal_reentry": false, "stderr_path": null, "origin": "operator",
                   "sandbox": "off", "network": "on", "pid": 7, "started_at_ms": 5,
                   "process_identity": null, "held": false, "exit_status": null,
                   "signal": 15, "duration_ms": 20, "output_preview": "",
                   "output_bytes": 0, "output_truncated": false}),
            json!({"child_agent_id": "c", "label": "x", "preset": "private_child",
                   "workspace_mode": "inherit", "terminal_reentry": true,
                   "child_result": "r", "worktree": null, "result_message_id": "m"}),
            json!({"child_agent_id": "c", "label": "x", "preset": "private_child",
                   "workspace_mode": "worktree", "terminal_reentry": true,
                   "worktree": {"path": "/w", "branch": "b", "changed_files": 0,
                                "cleanup": "removed"}}),
        ] {
            let d = read(written.clone());
            assert!(d.other.is_empty(), "not read: {:?}", d.other);
            let mut without_nulls = written.as_object().cloned().unwrap();
            without_nulls.retain(|_, v| !v.is_null());
            assert_eq!(
                serde_json::to_value(&d).unwrap(),
                serde_json::Value::Object(without_nulls)
            );
        }
    }

    #[test]
    fn what_does_not_read_is_kept_as_written() {
        // An unknown key, and known keys whose values are of another type
        // (a newer or older Holon's): none is lost, none fails the record.
        let written = json!({
            "cmd": "ls", "future_key": [1, 2], "exit_status": "one",
            "origin": "robot", "process_identity": {"pid": "x"},
        });
        let d = read(written.clone());
        assert_eq!(d.cmd.as_deref(), Some("ls"));
        assert_eq!(d.exit_status, None);
        assert_eq!(d.origin, None);
        assert_eq!(d.process_identity, None);
        let kept: Vec<&str> = d.other.keys().map(String::as_str).collect();
        assert_eq!(
            kept,
            ["exit_status", "future_key", "origin", "process_identity"]
        );
        assert_eq!(serde_json::to_value(&d).unwrap(), written);
        // Inside a member too: a field a newer build added to the
        // worktree, or one this build would fill with a default, keeps the
        // member as written.
        for worktree in [
            json!({"path": "/w", "branch": "b", "changed_files": 1, "cleanup": "retained",
                   "commits_ahead": 3}),
            json!({"path": "/w", "cleanup": "retained"}),
            json!({"path": "/w", "branch": "b", "changed_files": 1, "cleanup": "archived"}),
        ] {
            let written = json!({ "worktree": worktree });
            let d = read(written.clone());
            assert_eq!(d.worktree, None);
            assert_eq!(serde_json::to_value(&d).unwrap(), written);
        }
        // A client reading another build's cleanup word does not fail.
        let w: ChildWorktree = serde_json::from_value(
            json!({"path": "/w", "branch": "b", "changed_files": 1, "cleanup": "archived"}),
        )
        .unwrap();
        assert_eq!(w.cleanup, WorktreeCleanup::Unknown);
        // The whole record reads too.
        let record: TaskRecord = serde_json::from_value(json!({
            "id": "t", "agent_id": "a", "kind": "command_task", "status": "failed",
            "detail": written, "created_at": "c", "updated_at": "u",
        }))
        .unwrap();
        assert_eq!(record.detail, d);
    }

    #[test]
    fn nulls_and_non_objects() {
        // A null member is absent; a record without detail writes none.
        assert_eq!(read(json!({"signal": null})), TaskDetail::default());
        assert_eq!(read(json!(null)), TaskDetail::default());
        assert!(TaskDetail::default().is_empty());
        let record: TaskRecord = serde_json::from_value(json!({
            "id": "t", "agent_id": "a", "kind": "sleep_job", "status": "queued",
            "created_at": "c", "updated_at": "u",
        }))
        .unwrap();
        assert!(record.detail.is_empty());
        assert!(serde_json::to_value(&record)
            .unwrap()
            .get("detail")
            .is_none());
        // Never written by Holon, but not lost either.
        let odd = read(json!("text"));
        assert_eq!(odd.other.get("value"), Some(&json!("text")));
        assert!(!odd.is_empty());
    }

    #[test]
    fn a_later_part_replaces_an_earlier_one_member_by_member() {
        let mut d = read(json!({"cmd": "make", "tty": true, "exit_status": "odd", "x": 1}));
        d.merge(read(json!({"exit_status": 2, "duration_ms": 5, "x": 2})));
        // The typed value replaced the kept one: no stale copy stays.
        assert_eq!(d.other, json!({"x": 2}).as_object().cloned().unwrap());
        assert_eq!(
            serde_json::to_value(&d).unwrap(),
            json!({"cmd": "make", "tty": true, "exit_status": 2, "duration_ms": 5, "x": 2})
        );
        // A later value that does not read replaces a typed one too.
        d.merge(read(json!({"tty": "maybe"})));
        assert_eq!(d.tty, None);
        assert_eq!(serde_json::to_value(&d).unwrap()["tty"], "maybe");
        // An empty part changes nothing.
        let before = d.clone();
        d.merge(TaskDetail::default());
        assert_eq!(d, before);
    }

    #[test]
    fn a_typed_member_wins_over_a_kept_key_of_its_name() {
        let mut d = read(json!({"held": "yes"}));
        d.held = Some(true);
        assert_eq!(serde_json::to_value(&d).unwrap(), json!({"held": true}));
    }

    #[test]
    fn the_runtime_doc_names_every_member() {
        let doc = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/runtime.md"));
        let tasks = doc
            .split("\n## ")
            .find(|s| s.starts_with("Tasks\n"))
            .unwrap();
        let missing: Vec<&str> = TaskDetail::KEYS
            .iter()
            .copied()
            .filter(|k| !tasks.contains(&format!("`{k}`")))
            .collect();
        assert!(
            missing.is_empty(),
            "docs/runtime.md's Tasks section lacks {missing:?}"
        );
    }

    #[test]
    fn command_detail_trims_and_defaults() {
        let mut t: TaskRecord = serde_json::from_value(json!({
            "id": "t", "agent_id": "a", "kind": "command_task", "status": "running",
            "detail": {"cmd": "  ls -l \n", "origin": "operator"},
            "created_at": "c", "updated_at": "u",
        }))
        .unwrap();
        let c = t.command_detail();
        assert_eq!(c.cmd.as_deref(), Some("ls -l"));
        assert_eq!(c.origin, Some(CommandOrigin::Operator));
        assert!(!c.accepts_input);
        t.detail.cmd = Some("   ".into());
        assert_eq!(t.command_detail().cmd, None);
    }
}
