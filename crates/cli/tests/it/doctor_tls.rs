//! `sluice doctor` and `sluice top` over HTTPS with a bearer token, as against a production Flink
//! behind TLS: a test server with a certificate made at test time (rcgen) terminates TLS, checks
//! the token and forwards to a live `sluice run`. Also what the user is told without the CA or
//! the token.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Output};
use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

const TOKEN: &str = "test-token-4711";

/// A CA and a certificate for 127.0.0.1 signed by it: (CA PEM, server cert, server key).
fn certificates() -> (String, CertificateDer<'static>, PrivateKeyDer<'static>) {
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "sluice test CA");
    ca_params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let mut params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "127.0.0.1");
    params.use_authority_key_identifier_extension = true;
    params
        .extended_key_usages
        .push(rcgen::ExtendedKeyUsagePurpose::ServerAuth);
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();
    (
        ca.pem(),
        cert.der().clone(),
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
    )
}

/// Answers one HTTPS request: 401 without the token, else the backend's answer.
fn handle(tcp: TcpStream, tls: Arc<rustls::ServerConfig>, backend: &str) {
    let Ok(conn) = rustls::ServerConnection::new(tls) else {
        return;
    };
    let mut stream = rustls::StreamOwned::new(conn, tcp);
    let mut lines = Vec::new();
    {
        let mut reader = BufReader::new(&mut stream);
        loop {
            let mut line = String::new();
            // A client that refused our certificate closes here.
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if line.trim().is_empty() {
                break;
            }
            lines.push(line.trim().to_string());
        }
    }
    let path = lines[0].split(' ').nth(1).unwrap_or("/").to_string();
    let authorized = lines
        .iter()
        .any(|l| l.eq_ignore_ascii_case(&format!("authorization: Bearer {TOKEN}")));
    let (status, body) = if authorized {
        let mut r = ureq::get(&format!("{backend}{path}"))
            .config()
            .http_status_as_error(false)
            .build()
            .call()
            .unwrap();
        (r.status().as_u16(), r.body_mut().read_to_string().unwrap())
    } else {
        (
            401,
            r#"{"errors":["Missing or wrong bearer token."]}"#.to_string(),
        )
    };
    let reason = if status == 401 { "Unauthorized" } else { "OK" };
    let _ = write!(
        stream,
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    stream.conn.send_close_notify();
    let _ = stream.flush();
}

/// Starts the TLS front for `backend` (an http:// URL); serves until the test process ends.
fn tls_front(
    backend: String,
    cert: CertificateDer<'static>,
    key: PrivateKeyDer<'static>,
) -> SocketAddr {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .unwrap();
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for tcp in listener.incoming().map_while(Result::ok) {
            let (config, backend) = (config.clone(), backend.clone());
            std::thread::spawn(move || handle(tcp, config, &backend));
        }
    });
    addr
}

fn sluice(args: &[&str], token_env: Option<&str>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sluice"));
    c.args(args).env_remove("SLUICE_REST_TOKEN");
    if let Some(t) = token_env {
        c.env("SLUICE_REST_TOKEN", t);
    }
    c.output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn doctor_over_https_with_a_ca_and_a_token() {
    let (ca_pem, cert, key) = certificates();
    let dir = std::env::temp_dir().join(format!("sluice-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ca = dir.join("ca.pem");
    std::fs::write(&ca, ca_pem).unwrap();
    let ca = ca.to_str().unwrap();

    let (job, backend) = common::start_live(&["skew", "--records", "100000000000"]);
    let front = tls_front(backend, cert, key);
    let url = format!("https://{front}");

    // Let the metric window fill, then diagnose over TLS with the token.
    std::thread::sleep(std::time::Duration::from_millis(1200));
    let o = sluice(
        &[
            "doctor",
            "--url",
            &url,
            "--ca-cert",
            ca,
            "--token",
            TOKEN,
            "--window",
            "2",
            "--json",
        ],
        None,
    );
    assert!(o.status.success(), "{}", text(&o));
    let d: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(d["cause"], "key-skew", "{d:#}");

    // The token from the environment; `top` too.
    let o = sluice(
        &["top", "--once", "--url", &url, "--ca-cert", ca],
        Some(TOKEN),
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("sum-per-key"), "{}", text(&o));

    // Without the CA the certificate is not trusted: said so, with the way out.
    let o = sluice(&["doctor", "--url", &url, "--token", TOKEN], None);
    assert!(!o.status.success());
    let err = text(&o);
    assert!(
        err.contains(&format!("TLS with {url}/jobs/overview failed"))
            && err.contains("--ca-cert PEM")
            && err.contains("--insecure"),
        "{err}"
    );
    // --insecure skips verification.
    let o = sluice(
        &[
            "top",
            "--once",
            "--url",
            &url,
            "--insecure",
            "--token",
            TOKEN,
        ],
        None,
    );
    assert!(o.status.success(), "{}", text(&o));

    // Without the token: the server's own message.
    let o = sluice(&["doctor", "--url", &url, "--ca-cert", ca], None);
    assert!(!o.status.success());
    let err = text(&o);
    assert!(
        err.contains(&format!(
            "{url}/jobs/overview answered 401 Unauthorized: Missing or wrong bearer token."
        )),
        "{err}"
    );
    drop(job);
    let _ = std::fs::remove_dir_all(&dir);
}
