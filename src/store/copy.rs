//! Copying a store table by table, and fingerprinting one: what the
//! storage-format migration, `holon store backup` and `holon store salvage`
//! share. Every table's key and value types are known from its name
//! (`Shape`), so a copy reads typed rows from the source and writes them
//! typed into the destination; the engine encodes them in its own format.
//!
//! The copy macros take the source engine's crate path, so the same copy
//! reads a file of the engine version this build writes or of the older
//! one it migrates from.

use std::collections::BTreeMap;

use super::schema::{Index, Keyed};

/// A table's key and value types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// `&str -> &[u8]`: meta, agents.
    Named,
    /// `(&str, u64) -> &[u8]`: events, event_blocks.
    Ledger,
    /// `(&str, &str, u64) -> &[u8]`: event_kinds.
    KindChunks,
    /// `(&str, &str, u64) -> ()`: events_by_kind (schema 2 and older).
    KindRows,
    /// `(&str, u8, u64) -> &str`: queue_pending.
    Pending,
    /// `(&str, &str) -> u64`: counters.
    Counters,
    /// `(&str, &str) -> &[u8]`: the keyed record tables.
    Records,
    /// `(&str, &str) -> ()`: the membership indexes.
    Members,
}

/// The tables whose names are fixed, with their shapes; the keyed record
/// tables and the membership indexes come from `Keyed` and `Index`.
const FIXED: [(&str, Shape); 7] = [
    ("meta", Shape::Named),
    ("agents", Shape::Named),
    ("events", Shape::Ledger),
    ("event_blocks", Shape::Ledger),
    ("event_kinds", Shape::KindChunks),
    ("queue_pending", Shape::Pending),
    ("counters", Shape::Counters),
];

/// Every table this build knows, with its shape (`events_by_kind`, gone
/// since schema 3, only where an older store still has it).
pub(crate) fn known_tables() -> impl Iterator<Item = (&'static str, Shape)> {
    FIXED
        .into_iter()
        .chain(Keyed::ALL.iter().map(|k| (k.name(), Shape::Records)))
        .chain(Index::ALL.iter().map(|i| (i.name(), Shape::Members)))
}

/// The shape of the table called `name`, or `None` for a table this build
/// does not know.
pub(crate) fn shape_of(name: &str) -> Option<Shape> {
    if name == "events_by_kind" {
        return Some(Shape::KindRows);
    }
    known_tables().find(|(n, _)| *n == name).map(|(_, s)| s)
}

/// Runs `$body` with `K` and `V` naming the key and value types of
/// `$shape`.
macro_rules! with_shape {
    ($shape:expr, |$k:ident, $v:ident| $body:block) => {
        match $shape {
            $crate::store::copy::Shape::Named => {
                type $k = &'static str;
                type $v = &'static [u8];
                $body
            }
            $crate::store::copy::Shape::Ledger => {
                type $k = (&'static str, u64);
                type $v = &'static [u8];
                $body
            }
            $crate::store::copy::Shape::KindChunks => {
                type $k = (&'static str, &'static str, u64);
                type $v = &'static [u8];
                $body
            }
            $crate::store::copy::Shape::KindRows => {
                type $k = (&'static str, &'static str, u64);
                type $v = ();
                $body
            }
            $crate::store::copy::Shape::Pending => {
                type $k = (&'static str, u8, u64);
                type $v = &'static str;
                $body
            }
            $crate::store::copy::Shape::Counters => {
                type $k = (&'static str, &'static str);
                type $v = u64;
                $body
            }
            $crate::store::copy::Shape::Records => {
                type $k = (&'static str, &'static str);
                type $v = &'static [u8];
                $body
            }
            $crate::store::copy::Shape::Members => {
                type $k = (&'static str, &'static str);
                type $v = ();
                $body
            }
        }
    };
}
pub(crate) use with_shape;

/// Each table's row count and a SHA-256 over its rows in key order (keys
/// and values as the types decode them, so the fingerprint does not depend
/// on the engine's encoding): equal fingerprints mean equal contents.
pub type Fingerprint = BTreeMap<String, (u64, String)>;

/// Fingerprint the store file at `path` (opened by this build's engine; it
/// must not be open elsewhere).
pub fn fingerprint_file(path: &std::path::Path) -> Result<Fingerprint, super::StoreError> {
    use redb::TableHandle as _;
    use redb::{ReadableDatabase as _, ReadableTable as _, ReadableTableMetadata as _};
    use sha2::Digest as _;
    let db = super::open_database(path, super::DEFAULT_CACHE_MIB * 1024 * 1024)?;
    let txn = db.begin_read()?;
    let mut out = Fingerprint::new();
    for handle in txn.list_tables()? {
        let name = handle.name().to_owned();
        let Some(shape) = shape_of(&name) else {
            out.insert(name, (0, "unknown table".into()));
            continue;
        };
        with_shape!(shape, |K, V| {
            let table = txn.open_table(redb::TableDefinition::<K, V>::new(&name))?;
            let mut hash = sha2::Sha256::new();
            for row in table.iter()? {
                let (k, v) = row?;
                hash.update(format!("{:?}\u{1f}{:?}\u{1e}", k.value(), v.value()));
            }
            let hex: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
            out.insert(name, (table.len()?, hex));
        })
    }
    Ok(out)
}

/// Rows a destination write transaction takes before it commits and the
/// copy goes on in a new one: bounds the memory a copy of a large store
/// holds in one transaction.
pub(crate) const COPY_BATCH: usize = 20_000;

/// Copy the table `$name` of shape `$shape` from the read transaction
/// `$src` of engine `$engine` into the database `$dst` (this build's
/// engine), committing every `COPY_BATCH` rows with no fsync; the caller
/// makes it durable with a last commit. Evaluates to the rows copied.
macro_rules! copy_table {
    ($engine:ident, $src:expr, $dst:expr, $name:expr, $shape:expr) => {{
        use $engine::ReadableTable as _;
        let (src, dst, name) = (&$src, &$dst, $name);
        $crate::store::copy::with_shape!($shape, |K, V| {
            let table = src
                .open_table($engine::TableDefinition::<K, V>::new(name))
                .map_err($crate::store::StoreError::storage)?;
            let mut rows = table.iter().map_err($crate::store::StoreError::storage)?;
            let mut copied: u64 = 0;
            let mut done = false;
            while !done {
                let mut txn = dst
                    .begin_write()
                    .map_err($crate::store::StoreError::storage)?;
                txn.set_durability(redb::Durability::None)
                    .map_err($crate::store::StoreError::storage)?;
                {
                    let mut out = txn
                        .open_table(redb::TableDefinition::<K, V>::new(name))
                        .map_err($crate::store::StoreError::storage)?;
                    for _ in 0..$crate::store::copy::COPY_BATCH {
                        let Some(row) = rows.next() else {
                            done = true;
                            break;
                        };
                        let (k, v) = row.map_err($crate::store::StoreError::storage)?;
                        out.insert(k.value(), v.value())
                            .map_err($crate::store::StoreError::storage)?;
                        copied += 1;
                    }
                }
                txn.commit().map_err($crate::store::StoreError::storage)?;
            }
            Ok::<u64, $crate::store::StoreError>(copied)
        })
    }};
}
pub(crate) use copy_table;

/// Copy the tables `$tables` (`&[(String, Shape)]`) from the read
/// transaction `$src` of engine `$engine` into a new file at `$staging`
/// (this build's engine, mode 0600), make it durable with one last commit,
/// and check every table's row count against the source. Evaluates to the
/// rows copied. The caller removes `$staging` on error.
macro_rules! copy_into_new {
    ($engine:ident, $src:expr, $staging:expr, $tables:expr) => {{
        (|| {
            use redb::{ReadableDatabase as _, ReadableTableMetadata as _};
            use $crate::store::StoreError;
            // Unused when the source engine is this build's own.
            #[allow(unused_imports)]
            use $engine::ReadableTableMetadata as _;
            let (src, staging, tables) = (&$src, $staging, $tables);
            let dst = $crate::store::files::create_private_db(staging)?;
            let mut rows = 0;
            for (name, shape) in tables {
                rows += $crate::store::copy::copy_table!($engine, src, dst, name.as_str(), *shape)?;
            }
            // One durable commit makes every batch before it durable.
            let txn = dst.begin_write().map_err(StoreError::storage)?;
            txn.commit().map_err(StoreError::storage)?;

            let check = dst.begin_read().map_err(StoreError::storage)?;
            for (name, shape) in tables {
                let (want, got) = $crate::store::copy::with_shape!(*shape, |K, V| {
                    let a = src
                        .open_table($engine::TableDefinition::<K, V>::new(name))
                        .map_err(StoreError::storage)?
                        .len()
                        .map_err(StoreError::storage)?;
                    let b = check
                        .open_table(redb::TableDefinition::<K, V>::new(name))
                        .map_err(StoreError::storage)?
                        .len()
                        .map_err(StoreError::storage)?;
                    (a, b)
                });
                if want != got {
                    return Err(StoreError::Storage(format!(
                        "the copy holds {got} of {want} rows of table `{name}`"
                    )));
                }
            }
            Ok::<u64, StoreError>(rows)
        })()
    }};
}
pub(crate) use copy_into_new;

/// The tables a read transaction of `$engine` lists, each with its shape;
/// an error in words when the list cannot be read or names a table (or
/// multimap table) this build does not know.
macro_rules! tables_of {
    ($engine:ident, $txn:expr) => {{
        (|| {
            use $engine::{MultimapTableHandle as _, TableHandle as _};
            let txn = &$txn;
            let mut tables = Vec::new();
            for handle in txn.list_tables().map_err(|e| e.to_string())? {
                let name = handle.name().to_owned();
                let Some(shape) = $crate::store::copy::shape_of(&name) else {
                    return Err(format!(
                        "it holds a table `{name}` this build does not know"
                    ));
                };
                tables.push((name, shape));
            }
            if let Some(h) = txn
                .list_multimap_tables()
                .map_err(|e| e.to_string())?
                .next()
            {
                return Err(format!(
                    "it holds a multimap table `{}` this build does not know",
                    h.name()
                ));
            }
            Ok::<_, String>(tables)
        })()
    }};
}
pub(crate) use tables_of;
