//! The socket source against a real `TcpListener` in the test: lines arrive, the source
//! reconnects after the server drops the connection, an unreachable server is an error after
//! the retries, and a checkpointing job is refused unless it accepts (and is told about) the
//! lines a restore loses.

use std::io::Write;
use std::net::TcpListener;
use std::thread;
use std::time::Duration;

use sluice_datastream::{FaultSpec, RestartStrategy, SocketSourceConfig, StreamEnv};

fn listener() -> (TcpListener, u16) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    (l, port)
}

/// Accepts one connection per item of `conns` (giving up after a minute without one) and
/// writes its chunks with a pause between them, so lines arrive split, then closes it. A
/// connection the client dropped ends early.
fn serve(l: TcpListener, conns: Vec<Vec<&'static str>>) -> thread::JoinHandle<()> {
    l.set_nonblocking(true).unwrap();
    thread::spawn(move || {
        for chunks in conns {
            let deadline = std::time::Instant::now() + Duration::from_secs(60);
            let mut s = loop {
                match l.accept() {
                    Ok((s, _)) => break s,
                    Err(_) if std::time::Instant::now() < deadline => {
                        thread::sleep(Duration::from_millis(5))
                    }
                    Err(e) => panic!("no connection within a minute: {e}"),
                }
            };
            s.set_nonblocking(false).unwrap();
            for c in chunks {
                if s.write_all(c.as_bytes()).and_then(|()| s.flush()).is_err() {
                    break;
                }
                thread::sleep(Duration::from_millis(20));
            }
        }
    })
}

#[test]
fn lines_arrive_split_at_newlines_and_the_source_ends_when_the_server_closes() {
    let (l, port) = listener();
    let server = serve(
        l,
        vec![vec!["alpha\nbe", "ta\r\n\ngam", "ma\nunterminated"]],
    );
    let env = StreamEnv::new();
    env.set_parallelism(1);
    let out = env.socket_text_stream("127.0.0.1", port).collect();
    env.execute().unwrap();
    server.join().unwrap();
    // Flink drops the `\r` of `\r\n` and a last line the server never terminated.
    assert_eq!(out.handle.take(), vec!["alpha", "beta", "", "gamma"]);
}

#[test]
fn the_source_reconnects_after_the_server_drops_the_connection() {
    let (l, port) = listener();
    let server = serve(l, vec![vec!["1\n2\n"], vec!["3\n"], vec!["4\n"]]);
    let env = StreamEnv::new();
    env.set_parallelism(1);
    let mut cfg = SocketSourceConfig::new("127.0.0.1", port);
    cfg.max_retries = 2;
    cfg.retry_delay = Duration::from_millis(20);
    let out = env.socket_text_stream_with(cfg).collect();
    env.execute().unwrap();
    server.join().unwrap();
    assert_eq!(out.handle.take(), vec!["1", "2", "3", "4"]);
}

#[test]
fn an_unreachable_server_is_an_error_naming_it_after_the_retries() {
    let (l, port) = listener();
    drop(l);
    let env = StreamEnv::new();
    let mut cfg = SocketSourceConfig::new("127.0.0.1", port);
    cfg.max_retries = 3;
    cfg.retry_delay = Duration::from_millis(10);
    env.socket_text_stream_with(cfg).discard();
    let e = env.execute().unwrap_err().to_string();
    assert!(
        e.contains(&format!(
            "cannot connect to 127.0.0.1:{port} (after 3 retries"
        )),
        "{e}"
    );
}

#[test]
fn a_checkpointing_job_is_refused_unless_it_accepts_the_loss() {
    let env = StreamEnv::new();
    env.enable_checkpointing(Duration::from_millis(50));
    env.socket_text_stream("127.0.0.1", 9).discard();
    let e = env.launch().err().unwrap().to_string();
    assert!(
        e.contains("socket source 127.0.0.1:9 cannot replay")
            && e.contains("accept_loss_on_restore"),
        "{e}"
    );
}

#[test]
fn a_restore_reports_the_lines_it_lost() {
    let (l, port) = listener();
    // Enough lines that checkpoints complete before the injected failure; a second
    // connection for the restored attempt.
    let many: &'static str = Box::leak(
        (0..5_000)
            .map(|i| format!("{i}\n"))
            .collect::<String>()
            .into_boxed_str(),
    );
    let chunks: Vec<&'static str> = many
        .as_bytes()
        .chunks(2_000)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    let server = serve(l, vec![chunks, vec!["after\n"]]);
    let env = StreamEnv::new();
    env.set_parallelism(1);
    env.enable_checkpointing(Duration::from_millis(20))
        .set_restart_strategy(RestartStrategy::FixedDelay {
            attempts: 1,
            delay: Duration::ZERO,
        })
        .inject_faults(vec![FaultSpec {
            vertex: "Discard".into(),
            subtask: 0,
            after_records: 2_500,
        }]);
    let mut cfg = SocketSourceConfig::new("127.0.0.1", port);
    cfg.accept_loss_on_restore = true;
    cfg.max_retries = 0;
    env.socket_text_stream_with(cfg).rebalance().discard();
    let handle = env.launch().unwrap();
    let monitor = handle.monitor();
    handle.wait().unwrap();
    server.join().unwrap();
    let hub = monitor.control.checkpoints().unwrap();
    assert_eq!(hub.attempt(), 1);
    let log = hub.log_since(0).join("\n");
    assert!(
        log.contains(&format!("socket source 127.0.0.1:{port}: restored at line"))
            && log.contains("are lost (a socket cannot replay)"),
        "{log}"
    );
}
