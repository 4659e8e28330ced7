//! The doctor's [`RestSource`]s: a live server ([`LiveSource`]), a directory of saved answers
//! ([`DirSource`], `--from-dir`) and a source that saves what it reads through another
//! ([`SavingSource`], `--save`; the last sample wins, so the directory holds one snapshot).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;
use sluice_doctor::{DoctorError, RestSource};

use crate::layout::{file_for, stems_of};
use crate::{parse_json, ClientArgs, ClientError, Endpoint};

/// How long one request of the doctor may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// A live REST API over HTTP.
pub struct LiveSource {
    ep: Endpoint,
}

impl LiveSource {
    /// A loopback Sluice server with the default client settings.
    pub fn new(url: &str) -> Result<LiveSource, ClientError> {
        LiveSource::with(url, &ClientArgs::default())
    }

    /// A server reached with `client`'s TLS trust and token.
    pub fn with(url: &str, client: &ClientArgs) -> Result<LiveSource, ClientError> {
        Ok(LiveSource {
            ep: Endpoint::with(url, client)?,
        })
    }

    /// The endpoint it reads from.
    pub fn endpoint(&self) -> &Endpoint {
        &self.ep
    }
}

impl RestSource for LiveSource {
    fn get(&self, path: &str) -> Result<Option<Value>, DoctorError> {
        match self.ep.get_json(path, REQUEST_TIMEOUT) {
            Ok(v) => Ok(Some(v)),
            Err(ClientError::Status { status: 404, .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
    fn describe(&self) -> String {
        self.ep.base_url()
    }
    fn is_live(&self) -> bool {
        true
    }
    fn pause(&self, d: Duration) {
        std::thread::sleep(d);
    }
}

/// Saved REST answers in a directory (`--from-dir`): one snapshot.
pub struct DirSource {
    dir: PathBuf,
    stems: HashMap<String, String>,
}

impl DirSource {
    /// Opens `dir`, which must hold at least `job.json`.
    pub fn open(dir: &Path) -> Result<DirSource, ClientError> {
        let job = read_json_file(&dir.join("job.json")).map_err(|e| {
            ClientError::Saved(format!(
                "{} is not a directory of saved REST answers (it needs job.json, \
                 jobs-overview.json and vN-<vertex>-subtaskK-metrics.json files): {e}",
                dir.display()
            ))
        })?;
        Ok(DirSource {
            dir: dir.to_path_buf(),
            stems: stems_of(&job),
        })
    }
}

/// A saved answer (JSON of any sane depth).
pub fn read_json_file(path: &Path) -> Result<Value, ClientError> {
    let bytes = std::fs::read(path)
        .map_err(|e| ClientError::Saved(format!("reading {}: {e}", path.display())))?;
    parse_json(&bytes)
        .map_err(|e| ClientError::Saved(format!("{} is not JSON: {e}", path.display())))
}

impl RestSource for DirSource {
    fn get(&self, path: &str) -> Result<Option<Value>, DoctorError> {
        let Some(file) = file_for(path, &self.stems) else {
            return Ok(None);
        };
        let full = self.dir.join(file);
        if !full.exists() {
            return Ok(None);
        }
        Ok(read_json_file(&full).map(Some)?)
    }
    fn describe(&self) -> String {
        format!("saved answers in {}", self.dir.display())
    }
    fn is_live(&self) -> bool {
        false
    }
    fn pause(&self, d: Duration) {
        std::thread::sleep(d);
    }
}

/// Reads through `inner` and writes every answer into `dir` in the `--from-dir` layout.
pub struct SavingSource<'a> {
    inner: &'a dyn RestSource,
    dir: PathBuf,
    stems: Mutex<HashMap<String, String>>,
}

impl<'a> SavingSource<'a> {
    /// Saves into `dir` (created if need be) what `inner` answers.
    pub fn new(inner: &'a dyn RestSource, dir: &Path) -> Result<SavingSource<'a>, ClientError> {
        std::fs::create_dir_all(dir)
            .map_err(|e| ClientError::Saved(format!("creating {}: {e}", dir.display())))?;
        Ok(SavingSource {
            inner,
            dir: dir.to_path_buf(),
            stems: Mutex::default(),
        })
    }
}

impl RestSource for SavingSource<'_> {
    fn get(&self, path: &str) -> Result<Option<Value>, DoctorError> {
        let answer = self.inner.get(path)?;
        if let Some(v) = &answer {
            let mut stems = self.stems.lock().unwrap_or_else(|p| p.into_inner());
            if file_for(path, &HashMap::new()).as_deref() == Some("job.json") {
                *stems = stems_of(v);
            }
            if let Some(file) = file_for(path, &stems) {
                let full = self.dir.join(file);
                let text =
                    serde_json::to_string(v).map_err(|e| DoctorError::Fetch(e.to_string()))?;
                std::fs::write(&full, text)
                    .map_err(|e| DoctorError::Fetch(format!("writing {}: {e}", full.display())))?;
            }
        }
        Ok(answer)
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn is_live(&self) -> bool {
        self.inner.is_live()
    }
    fn pause(&self, d: Duration) {
        self.inner.pause(d);
    }
}
