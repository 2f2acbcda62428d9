//! Opening the store file: redb's errors and panics on a damaged file
//! mapped to operator-facing errors (`open_database`), the repair after an
//! unclean shutdown announced, and the schema version checked, recorded
//! or migrated (`init_schema`); a store that cannot be written opened
//! read-only (`Store::open_read_only`).

use std::path::Path;
use std::sync::Arc;

use redb::{Database, ReadableTable};

use super::schema::{self, Index, Keyed, SCHEMA_VERSION};
use super::{Inner, Store, StoreError};

pub(super) fn open_database(path: &Path, cache_bytes: usize) -> Result<Database, StoreError> {
    let corrupt = |detail: String| StoreError::Corrupt {
        path: path.to_path_buf(),
        detail,
    };
    let mut result = match open_quietly(path, cache_bytes) {
        Ok(r) => r,
        Err(panic_message) => {
            return Err(corrupt(format!(
                "the storage engine rejected it: {panic_message}"
            )))
        }
    };
    // A store from before the engine's current file format: copy it into
    // the current one, then open that.
    if let Err(redb::DatabaseError::UpgradeRequired(version)) = result {
        super::migrate::from_redb2(path, version)?;
        result = open_quietly(path, cache_bytes).map_err(|panic_message| {
            corrupt(format!("the storage engine rejected it: {panic_message}"))
        })?;
    }
    result.map_err(|e| match e {
        redb::DatabaseError::DatabaseAlreadyOpen => StoreError::Locked {
            path: path.to_path_buf(),
        },
        redb::DatabaseError::UpgradeRequired(v) => corrupt(format!(
            "storage file format {v} needs an upgrade this build cannot do"
        )),
        redb::DatabaseError::RepairAborted => corrupt("repair was aborted".into()),
        redb::DatabaseError::Storage(redb::StorageError::Corrupted(d)) => corrupt(d),
        redb::DatabaseError::Storage(redb::StorageError::Io(source)) => match source.kind() {
            std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::InvalidData => {
                corrupt(source.to_string())
            }
            _ => StoreError::Io {
                path: path.to_path_buf(),
                source,
            },
        },
        redb::DatabaseError::Storage(other) => corrupt(other.to_string()),
        other => corrupt(other.to_string()),
    })
}

/// redb reports most damage as errors but asserts on some (a file shorter
/// than its header says). Catch that on this thread only, keep the message
/// for the error, and print nothing: a damaged file is an error message,
/// never a crash or a backtrace on the operator's terminal.
fn open_quietly(
    path: &Path,
    cache_bytes: usize,
) -> Result<Result<Database, redb::DatabaseError>, String> {
    let result = quietly(|| {
        let warned = std::sync::atomic::AtomicBool::new(false);
        let shown = path.display().to_string();
        Database::builder()
            .set_cache_size(cache_bytes)
            .set_repair_callback(move |_| {
                if !warned.swap(true, std::sync::atomic::Ordering::Relaxed) {
                    tracing::warn!(path = %shown, "the store was not closed cleanly: repairing it (reading the whole file once)");
                }
            })
            .create(path)
    });
    if let Err(msg) = &result {
        tracing::error!(path = %path.display(), panic = %msg, "storage engine panicked while opening the store");
    }
    result
}

/// Run `f`, catching a panic on this thread and returning its message
/// instead, printing nothing.
pub(super) fn quietly<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    use std::cell::{Cell, RefCell};
    use std::sync::Mutex;
    type Hook = Box<dyn Fn(&std::panic::PanicHookInfo<'_>) + Send + Sync + 'static>;
    thread_local! {
        /// How deep this thread is in `quietly` (it nests: salvage guards
        /// a whole run and each table within it).
        static DEPTH: Cell<u32> = const { Cell::new(0) };
        static CAUGHT: RefCell<Option<String>> = const { RefCell::new(None) };
    }
    let run = |f: Box<dyn FnOnce() -> T + '_>| {
        DEPTH.with(|d| d.set(d.get() + 1));
        let attempt = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        DEPTH.with(|d| d.set(d.get() - 1));
        attempt.map_err(|_| {
            CAUGHT
                .with(|c| c.borrow_mut().take())
                .unwrap_or_else(|| "unknown failure".to_owned())
        })
    };
    if DEPTH.with(Cell::get) > 0 {
        // The hook of the outer call is in place.
        return run(Box::new(f));
    }
    static HOOK_SWAP: Mutex<()> = Mutex::new(());
    let _serial = HOOK_SWAP.lock().unwrap_or_else(|p| p.into_inner());
    let previous: Arc<Hook> = Arc::new(std::panic::take_hook());
    {
        let previous = Arc::clone(&previous);
        std::panic::set_hook(Box::new(move |info| {
            if DEPTH.with(Cell::get) > 0 {
                let msg = crate::panic_message(info);
                CAUGHT.with(|c| *c.borrow_mut() = Some(msg));
            } else {
                previous(info);
            }
        }));
    }
    let result = run(Box::new(f));
    std::panic::set_hook(Box::new(move |info| previous(info)));
    result
}

/// Create every table and record the schema version on a new file; refuse
/// a file written by a newer schema.
pub(super) fn init_schema(db: &Database, path: &Path) -> Result<(), StoreError> {
    let txn = db.begin_write()?;
    {
        let mut meta = txn.open_table(schema::META)?;
        super::id_time::raise_at_open(&txn, &mut meta, path)?;
        let found = match meta.get("schema_version")? {
            Some(v) => {
                let bytes = v.value();
                let arr: [u8; 4] = bytes.try_into().map_err(|_| StoreError::Corrupt {
                    path: path.to_path_buf(),
                    detail: "schema_version is not a 4-byte number".into(),
                })?;
                Some(u32::from_le_bytes(arr))
            }
            None => None,
        };
        match found {
            Some(v) if v > SCHEMA_VERSION => {
                return Err(StoreError::NewerSchema {
                    path: path.to_path_buf(),
                    found: v,
                    supported: SCHEMA_VERSION,
                })
            }
            Some(SCHEMA_VERSION) => {}
            Some(older) => {
                if older < 3 {
                    // Rows written before blocks stay rows.
                    let rows = txn.open_table(schema::EVENTS)?;
                    let mut counters = txn.open_table(schema::COUNTERS)?;
                    super::seal::mark_existing_sealed(&rows, &mut counters)?;
                    // The per-event kind index becomes chunks.
                    let moved = {
                        let old = txn.open_table(schema::EVENTS_BY_KIND)?;
                        let mut chunks = txn.open_table(schema::EVENT_KINDS)?;
                        super::kind_index::migrate_from_rows(&old, &mut chunks)?
                    };
                    txn.delete_table(schema::EVENTS_BY_KIND)?;
                    tracing::info!(path = %path.display(), events = moved, from = older, "the store's kind index was rebuilt for schema 3");
                }
                meta.insert("schema_version", SCHEMA_VERSION.to_le_bytes().as_slice())?;
            }
            None => {
                meta.insert("schema_version", SCHEMA_VERSION.to_le_bytes().as_slice())?;
                let created = crate::format_ts(crate::now_ms());
                meta.insert("created_at", created.as_bytes())?;
                let by = format!("holon {}", env!("CARGO_PKG_VERSION"));
                meta.insert("created_by", by.as_bytes())?;
            }
        }
        txn.open_table(schema::AGENTS)?;
        txn.open_table(schema::EVENTS)?;
        txn.open_table(schema::EVENT_BLOCKS)?;
        txn.open_table(schema::EVENT_KINDS)?;
        txn.open_table(schema::QUEUE_PENDING)?;
        txn.open_table(schema::COUNTERS)?;
        for k in Keyed::ALL {
            txn.open_table(k.definition())?;
        }
        for i in Index::ALL {
            txn.open_table(i.definition())?;
        }
    }
    txn.commit()?;
    Ok(())
}

impl Store {
    /// Open the store at `path` without writing to it (a read-only mount,
    /// an immutable file): reads work, every write is refused with
    /// `StoreError::ReadOnly` naming `why`. Several processes may hold it
    /// so at once, but not while a runtime holds it for writing, and not
    /// when it needs the repair an unclean shutdown leaves.
    pub fn open_read_only(path: &Path, why: &str) -> Result<Store, StoreError> {
        let opened = quietly(|| redb::Builder::new().open_read_only(path)).map_err(|panic| {
            StoreError::Corrupt {
                path: path.to_path_buf(),
                detail: format!("the storage engine rejected it: {panic}"),
            }
        })?;
        let db = opened.map_err(|e| match e {
            redb::DatabaseError::DatabaseAlreadyOpen => StoreError::Locked {
                path: path.to_path_buf(),
            },
            redb::DatabaseError::RepairAborted => StoreError::ReadOnly {
                path: path.to_path_buf(),
                why: format!(
                    "{why}, and it was not closed cleanly: the repair it needs must write to it"
                ),
            },
            redb::DatabaseError::UpgradeRequired(_) => StoreError::ReadOnly {
                path: path.to_path_buf(),
                why: format!(
                    "{why}, and it is in an older storage format: the migration it needs must \
                     write beside it"
                ),
            },
            redb::DatabaseError::Storage(redb::StorageError::Io(source)) => StoreError::Io {
                path: path.to_path_buf(),
                source,
            },
            other => StoreError::Corrupt {
                path: path.to_path_buf(),
                detail: other.to_string(),
            },
        })?;
        let (events, _) = tokio::sync::broadcast::channel(16);
        Ok(Store {
            inner: Arc::new(Inner {
                db: Arc::new(std::sync::RwLock::new(None)),
                failure: Arc::default(),
                heal_attempts: Arc::default(),
                path: path.to_path_buf(),
                jobs: None,
                events,
                writer: None,
                read_only: Some((Arc::new(db), why.to_owned())),
            }),
        })
    }
}
