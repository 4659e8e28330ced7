//! The LSM backend's storage when the crate is built without its `lsm` feature: the few fjall
//! names the store uses, so the store's code is the same either way, with a database that never
//! opens. Opening one fails with an error naming the feature; every other type here is
//! uninhabited, so none of the code behind a database can run.

use std::convert::Infallible;
use std::path::Path;

/// Why the LSM backend is unavailable.
#[derive(Debug)]
pub struct Error;

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("not built in (sluice-state's `lsm` feature is off)")
    }
}

/// How a database would be written to disk (only the mode the store uses).
pub enum PersistMode {
    /// Hand buffered journal data to the OS.
    Buffer,
}

/// Options of a keyspace (none here).
#[derive(Default)]
pub struct KeyspaceCreateOptions;

/// A database that is never built.
pub struct Database(Infallible);

/// The builder of a [`Database`]: every setting is accepted, opening fails.
pub struct Builder;

impl Builder {
    /// Ignored.
    pub fn worker_threads(self, _n: usize) -> Builder {
        self
    }

    /// Ignored.
    pub fn cache_size(self, _bytes: u64) -> Builder {
        self
    }

    /// Ignored.
    pub fn manual_journal_persist(self, _manual: bool) -> Builder {
        self
    }

    /// Ignored.
    pub fn temporary(self, _temporary: bool) -> Builder {
        self
    }

    /// Always fails: the backend is not built in.
    pub fn open(self) -> Result<Database, Error> {
        Err(Error)
    }
}

impl Database {
    /// A builder whose `open` fails.
    pub fn builder(_dir: &Path) -> Builder {
        Builder
    }

    /// Unreachable: no database exists.
    pub fn keyspace(
        &self,
        _name: &str,
        _options: impl FnOnce() -> KeyspaceCreateOptions,
    ) -> Result<Keyspace, Error> {
        match self.0 {}
    }

    /// Unreachable: no database exists.
    pub fn list_keyspace_names(&self) -> Vec<String> {
        match self.0 {}
    }

    /// Unreachable: no database exists.
    pub fn persist(&self, _mode: PersistMode) -> Result<(), Error> {
        match self.0 {}
    }
}

/// A keyspace of a database that is never built.
#[derive(Clone)]
pub struct Keyspace(Infallible);

/// An entry a scan would yield.
pub struct Guard(Infallible);

impl Guard {
    /// Unreachable: no scan yields anything.
    pub fn key(&self) -> Result<Vec<u8>, Error> {
        match self.0 {}
    }

    /// Unreachable: no scan yields anything.
    pub fn into_inner(self) -> Result<(Vec<u8>, Vec<u8>), Error> {
        match self.0 {}
    }
}

impl Keyspace {
    /// Unreachable: no keyspace exists.
    pub fn get(&self, _key: impl AsRef<[u8]>) -> Result<Option<Vec<u8>>, Error> {
        match self.0 {}
    }

    /// Unreachable: no keyspace exists.
    pub fn contains_key(&self, _key: impl AsRef<[u8]>) -> Result<bool, Error> {
        match self.0 {}
    }

    /// Unreachable: no keyspace exists.
    pub fn insert(&self, _key: impl AsRef<[u8]>, _value: impl AsRef<[u8]>) -> Result<(), Error> {
        match self.0 {}
    }

    /// Unreachable: no keyspace exists.
    pub fn remove(&self, _key: impl AsRef<[u8]>) -> Result<(), Error> {
        match self.0 {}
    }

    /// Unreachable: no keyspace exists.
    pub fn prefix(&self, _prefix: impl AsRef<[u8]>) -> std::iter::Empty<Guard> {
        match self.0 {}
    }

    /// Unreachable: no keyspace exists.
    pub fn range<R>(&self, _range: R) -> std::iter::Empty<Guard> {
        match self.0 {}
    }

    /// Unreachable: no keyspace exists.
    pub fn iter(&self) -> std::iter::Empty<Guard> {
        match self.0 {}
    }
}
