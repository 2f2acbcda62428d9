//! Store errors, worded for the operator who will read them: each says what
//! happened to which file and what to do next.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(
        "the store {path} is owned by another Holon process; attach to it with `holon attach` \
         (or stop it with `holon daemon stop`)"
    )]
    Locked { path: PathBuf },

    #[error(
        "the store {path} is corrupt or is not a Holon store ({detail}); nothing was changed. \
         {}",
        recovery(path)
    )]
    Corrupt { path: PathBuf, detail: String },

    #[error(
        "the store {path} was written by a newer Holon (schema version {found}; this build \
         understands up to {supported}); upgrade holon to open it"
    )]
    NewerSchema {
        path: PathBuf,
        found: u32,
        supported: u32,
    },

    #[error(
        "the store {path} is read-only ({why}); Holon can show it but change nothing: \
         make it writable to run agents or send prompts"
    )]
    ReadOnly { path: PathBuf, why: String },

    #[error("cannot open the store {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("store operation failed: {0}")]
    Storage(String),

    #[error("record {table}/{key} could not be decoded: {detail}")]
    Decode {
        table: &'static str,
        key: String,
        detail: String,
    },

    #[error("record for {table} could not be encoded: {detail}")]
    Encode { table: &'static str, detail: String },

    #[error("the store is closed (the writer has stopped)")]
    Closed,

    /// A write job refused its own input; nothing of that job was written.
    #[error("{0}")]
    Rejected(Box<dyn std::error::Error + Send + Sync>),
}

/// An I/O error that means "this may be read but not written": a
/// read-only file system, an immutable file, no write permission.
pub fn read_only_io(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::ReadOnlyFilesystem | std::io::ErrorKind::PermissionDenied
    ) || e.raw_os_error() == Some(libc::EPERM)
}

/// What to do with a damaged store, in the order an operator should try.
pub fn recovery(path: &std::path::Path) -> String {
    let p = path.display();
    format!(
        "`holon store verify {p}` names what is wrong; `holon store salvage {p} {p}.salvaged` \
         copies every record still readable into a new store, to put in its place \
         (`mv {p} {p}.broken && mv {p}.salvaged {p}`); or restore a copy that \
         `holon store backup` wrote (`backups/` beside the store)"
    )
}

impl StoreError {
    pub fn rejected(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        StoreError::Rejected(Box::new(e))
    }

    pub fn storage(e: impl std::fmt::Display) -> Self {
        StoreError::Storage(e.to_string())
    }
}

macro_rules! storage_from {
    ($($t:ty),+) => {$(
        impl From<$t> for StoreError {
            fn from(e: $t) -> Self { StoreError::Storage(e.to_string()) }
        }
    )+};
}

storage_from!(
    redb::StorageError,
    redb::TableError,
    redb::TransactionError,
    redb::CommitError,
    redb::SetDurabilityError
);
