//! The test servers start, answer, and are gone (by PID) after drop.

use std::process::Command;

use sluice_testkit::{KafkaBroker, PostgresCluster};

fn alive(pid: u32) -> bool {
    Command::new("kill")
        .args(["-0", &pid.to_string()])
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn kafka_broker_listens_and_stops() {
    let broker = KafkaBroker::start().unwrap();
    let pid = broker.pid();
    assert!(std::net::TcpStream::connect(broker.bootstrap()).is_ok());
    drop(broker);
    assert!(!alive(pid), "broker {pid} still running after drop");
}

#[test]
fn postgres_cluster_runs_sql_and_stops() {
    let pg = PostgresCluster::start().unwrap();
    let pid = pg.pid();
    assert_eq!(pg.psql("SELECT 6 * 7").unwrap().trim(), "42");
    assert_eq!(
        pg.psql("SHOW max_prepared_transactions").unwrap().trim(),
        "64"
    );
    let dir = pg.dir().to_path_buf();
    drop(pg);
    assert!(!alive(pid), "postmaster {pid} still running after drop");
    assert!(!dir.exists());
}
