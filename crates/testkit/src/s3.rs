//! An S3-compatible object store on a free loopback port: moto's standalone server (installed
//! by `scripts/install-moto.sh`, pinned), in memory, with one bucket created; stopped by PID when
//! dropped. Requests are signed by the client but not checked by the server.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::process::{accepts, free_port, log_file, stop, wait_ready};
use crate::{target_dir, TestkitError};

/// A running S3-compatible server with one bucket.
pub struct S3Server {
    child: Child,
    port: u16,
    bucket: String,
}

impl S3Server {
    /// The server's executable: `SLUICE_MOTO`, else `target/venv-moto/bin/moto_server`.
    pub fn binary() -> PathBuf {
        std::env::var_os("SLUICE_MOTO")
            .map(PathBuf::from)
            .unwrap_or_else(|| target_dir().join("venv-moto/bin/moto_server"))
    }

    /// Starts the server and creates `bucket` in it.
    pub fn start(bucket: &str) -> Result<Self, TestkitError> {
        let bin = Self::binary();
        if !bin.is_file() {
            return Err(TestkitError::Missing {
                what: "moto's S3-compatible server",
                path: bin,
                hint: "run scripts/install-moto.sh (scripts/test.sh does)",
            });
        }
        let tmp = target_dir().join("tmp");
        std::fs::create_dir_all(&tmp).map_err(|source| TestkitError::Io {
            what: format!("creating {}", tmp.display()),
            source,
        })?;
        let port = free_port()?;
        let log = tmp.join(format!("moto-{}-{port}.log", std::process::id()));
        let mut child = Command::new(&bin)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(log_file(&log)?)
            .stderr(log_file(&log)?)
            .spawn()
            .map_err(|source| TestkitError::Io {
                what: format!("starting {}", bin.display()),
                source,
            })?;
        if let Err(e) = wait_ready(
            "moto S3 server",
            &mut child,
            &log,
            Duration::from_secs(60),
            || accepts(port),
        ) {
            stop(&mut child, "TERM", Duration::from_secs(2));
            return Err(e);
        }
        let server = S3Server {
            child,
            port,
            bucket: bucket.to_string(),
        };
        let created = Command::new("curl")
            .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "PUT"])
            .arg(format!("{}/{bucket}", server.endpoint()))
            .output()
            .map_err(|source| TestkitError::Io {
                what: "running curl to create the bucket".into(),
                source,
            })?;
        let code = String::from_utf8_lossy(&created.stdout).to_string();
        if code != "200" {
            return Err(TestkitError::Failed {
                what: format!("creating bucket {bucket}"),
                detail: format!("HTTP status {code}"),
            });
        }
        Ok(server)
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The environment an S3 client needs to reach this server (`AWS_*`, as the AWS tools and
    /// Sluice read them).
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL", self.endpoint()),
            ("AWS_ALLOW_HTTP", "true".into()),
            ("AWS_ACCESS_KEY_ID", "sluice-test".into()),
            ("AWS_SECRET_ACCESS_KEY", "sluice-test".into()),
            ("AWS_REGION", "us-east-1".into()),
        ]
    }

    /// Every key in the bucket (ListObjectsV2, one page of up to 1000, read by curl).
    pub fn keys(&self) -> Result<Vec<String>, TestkitError> {
        let out = Command::new("curl")
            .args(["-s", "--fail"])
            .arg(format!("{}/{}?list-type=2", self.endpoint(), self.bucket))
            .output()
            .map_err(|source| TestkitError::Io {
                what: "running curl to list the bucket".into(),
                source,
            })?;
        if !out.status.success() {
            return Err(TestkitError::Failed {
                what: format!("listing bucket {}", self.bucket),
                detail: format!("curl {}", out.status),
            });
        }
        let xml = String::from_utf8_lossy(&out.stdout);
        Ok(xml
            .split("<Key>")
            .skip(1)
            .filter_map(|k| k.split_once("</Key>").map(|(k, _)| k.to_string()))
            .collect())
    }

    /// The server process's id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        stop(&mut self.child, "TERM", Duration::from_secs(5));
    }
}
