//! The embedded REST API (Flink's paths, the dashboard, the doctor endpoint) for a run.

use std::sync::Arc;

use sluice_rest::{JobRegistry, RestConfig, RestError, RestServer};

use crate::{RestArgs, SluiceError};

/// A running REST server and the registry it serves jobs from.
pub struct RestApi {
    /// The server (its address).
    pub server: RestServer,
    /// The jobs it serves.
    pub registry: Arc<JobRegistry>,
}

/// Starts the REST API the flags describe, `None` with `--no-rest`. With `announce`, prints its
/// address and savepoint directory on stderr.
pub fn start_rest(args: &RestArgs, announce: bool) -> Result<Option<RestApi>, SluiceError> {
    if args.no_rest {
        return Ok(None);
    }
    let registry = Arc::new(JobRegistry::new());
    let addr = std::net::SocketAddr::new(args.rest_address, args.rest_port);
    let config = RestConfig {
        addr,
        token: args.rest_token.clone(),
        allowed_hosts: args.rest_allowed_host.clone(),
        savepoint_dir: match &args.savepoint_dir {
            Some(d) => d.clone(),
            None => {
                // Refused at start, not at the first savepoint: a plan change writes its
                // savepoint there without a REST request.
                let d = sluice_rest::default_savepoint_dir();
                sluice_runtime::private_dir::check_default(&d).map_err(SluiceError::Config)?;
                d
            }
        },
    };
    let server = match sluice_rest::serve_with(config, registry.clone()) {
        Ok(s) => s,
        Err(RestError::Insecure(m)) => return Err(SluiceError::Insecure(m)),
        Err(source) => return Err(SluiceError::Rest { addr, source }),
    };
    if announce {
        eprintln!(
            "REST API: http://{}/ (Flink-compatible paths); savepoints under {}",
            server.local_addr(),
            server.savepoint_dir().display()
        );
    }
    Ok(Some(RestApi { server, registry }))
}
