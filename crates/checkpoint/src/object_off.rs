//! Object-store checkpoint directories when the crate is built without its `object-store`
//! feature: an `s3://` location is recognised and refused with an error, never mistaken for a
//! local directory.

use std::path::{Path, PathBuf};

use sluice_types::OperatorError;

/// The URL scheme of an object-store checkpoint directory.
pub const SCHEME: &str = "s3://";

/// Never built: without the feature no object-store directory can be opened.
pub(crate) enum ObjectDir {}

/// `Some(Err(..))` when `dir` names an object-store location (`s3://…`).
pub(crate) fn parse(dir: &Path) -> Option<Result<ObjectDir, OperatorError>> {
    let url = dir.to_str()?;
    url.starts_with(SCHEME).then(|| {
        Err(OperatorError::failed(format!(
            "checkpoint location {url}: object storage is not built in \
             (sluice-checkpoint's `object-store` feature)"
        )))
    })
}

impl ObjectDir {
    /// See the feature's `ObjectDir::child_path`.
    pub fn child_path(&self, _name: &str) -> PathBuf {
        match *self {}
    }

    /// See the feature's `ObjectDir::put`.
    pub fn put(&self, _parts: &[&str], _bytes: Vec<u8>) -> Result<(), OperatorError> {
        match *self {}
    }

    /// See the feature's `ObjectDir::get`.
    pub fn get(&self, _parts: &[&str]) -> Result<Option<Vec<u8>>, OperatorError> {
        match *self {}
    }

    /// See the feature's `ObjectDir::delete`.
    pub fn delete(&self, _parts: &[&str]) -> Result<(), OperatorError> {
        match *self {}
    }

    /// See the feature's `ObjectDir::delete_all`.
    pub fn delete_all(&self, _parts: &[&str]) -> Result<(), OperatorError> {
        match *self {}
    }

    /// See the feature's `ObjectDir::children`.
    pub fn children(&self) -> Result<Vec<String>, OperatorError> {
        match *self {}
    }

    /// See the feature's `ObjectDir::url`.
    pub fn url(&self) -> &str {
        match *self {}
    }
}
