//! Two-phase commit bookkeeping for appends (Flink's XA JDBC sink, on PostgreSQL's
//! `PREPARE TRANSACTION`): global transaction ids, committing what a checkpoint names, rolling
//! back the strays of earlier attempts.
//!
//! A gid is `<prefix>:<subtask>:<checkpoint>:<attempt>` — deterministic from the sink's prefix
//! (by default `sluice:<table>:<operator id>`), the subtask, the checkpoint whose barrier
//! prepared it (`end` for the transaction prepared at end of input) and the attempt tag, so
//! two attempts never reuse a gid and a restore can tell its own transactions from others'.

use postgres::Client;

/// `undefined_object`: `COMMIT PREPARED` / `ROLLBACK PREPARED` of a gid that does not exist.
const UNDEFINED_OBJECT: &str = "42704";

/// The gid of `subtask`'s transaction prepared at `checkpoint` (`None`: at end of input) in this attempt.
pub fn gid(prefix: &str, subtask: usize, checkpoint: Option<u64>, attempt: &str) -> String {
    match checkpoint {
        Some(id) => format!("{prefix}:{subtask}:{id}:{attempt}"),
        None => format!("{prefix}:{subtask}:end:{attempt}"),
    }
}

/// The subtask of a gid of `prefix`, or `None` if the gid is not this sink's.
pub fn gid_subtask(prefix: &str, gid: &str) -> Option<usize> {
    let rest = gid.strip_prefix(prefix)?.strip_prefix(':')?;
    let mut parts = rest.split(':');
    let sub = parts.next()?.parse().ok()?;
    let (_cp, _attempt) = (parts.next()?, parts.next()?);
    parts.next().is_none().then_some(sub)
}

/// A gid as a SQL string literal.
pub fn literal(gid: &str) -> String {
    format!("'{}'", gid.replace('\'', "''"))
}

/// `COMMIT PREPARED`; a gid that no longer exists was committed before (by the attempt that
/// prepared it, or by an earlier restore) — nothing else removes a gid a completed checkpoint
/// names. Returns whether it committed now.
pub fn commit_prepared(client: &mut Client, gid: &str) -> Result<bool, postgres::Error> {
    match client.batch_execute(&format!("COMMIT PREPARED {}", literal(gid))) {
        Ok(()) => Ok(true),
        Err(e) if e.code().is_some_and(|c| c.code() == UNDEFINED_OBJECT) => Ok(false),
        Err(e) => Err(e),
    }
}

/// `ROLLBACK PREPARED`, tolerating a gid already gone.
pub fn rollback_prepared(client: &mut Client, gid: &str) -> Result<bool, postgres::Error> {
    match client.batch_execute(&format!("ROLLBACK PREPARED {}", literal(gid))) {
        Ok(()) => Ok(true),
        Err(e) if e.code().is_some_and(|c| c.code() == UNDEFINED_OBJECT) => Ok(false),
        Err(e) => Err(e),
    }
}

/// The prepared transactions of this database whose gid belongs to `prefix`, with their
/// subtask.
pub fn prepared_of(
    client: &mut Client,
    prefix: &str,
) -> Result<Vec<(String, usize)>, postgres::Error> {
    let rows = client.query(
        "SELECT gid FROM pg_prepared_xacts WHERE database = current_database()",
        &[],
    )?;
    Ok(rows
        .iter()
        .filter_map(|r| {
            let g: String = r.get(0);
            gid_subtask(prefix, &g).map(|s| (g, s))
        })
        .collect())
}

/// Whether `gid` is prepared (after a connection was lost during `PREPARE TRANSACTION`).
pub fn is_prepared(client: &mut Client, gid: &str) -> Result<bool, postgres::Error> {
    Ok(!client
        .query("SELECT 1 FROM pg_prepared_xacts WHERE gid = $1", &[&gid])?
        .is_empty())
}

/// How many prepared transactions one subtask of an appending sink holds at most at once, by
/// the job's checkpoint settings: `max_concurrent` + `tolerable_failures` + 1.
///
/// A subtask prepares one transaction per barrier it receives and commits, at every barrier
/// and flush tick, those whose checkpoint id is ≤ the last completed one (a later checkpoint's
/// snapshot names the earlier gids too, so its completion commits them). Right after a commit
/// pass what is left belongs to checkpoints not completed then: pending ones (≤
/// `max_concurrent`, the coordinator triggers no more) or failed since the last completion
/// (≤ `tolerable_failures`: one more fails the job, which rolls them back on restore). The next
/// barrier prepares one more before its commit pass, and so does the end of input: + 1.
///
/// Not counted, as they are not counted against `tolerable_failures` (see the coordinator):
/// failed savepoints and aligned checkpoints retried unaligned. They can take a subtask past
/// this bound until the next checkpoint completes; the sink then fails with its own message.
pub fn prepared_per_subtask(checkpoints: &sluice_runtime::checkpoint::CheckpointConfig) -> u64 {
    checkpoints.max_concurrent as u64 + u64::from(checkpoints.tolerable_failures) + 1
}

/// The server's `max_prepared_transactions`.
pub fn max_prepared_transactions(client: &mut Client) -> Result<Option<u64>, postgres::Error> {
    let row = client.query_one("SHOW max_prepared_transactions", &[])?;
    let v: String = row.get(0);
    Ok(v.trim().parse().ok())
}

/// Prepared transactions on the server (every database: the limit is the server's).
pub fn prepared_count(client: &mut Client) -> Result<i64, postgres::Error> {
    client
        .query_one("SELECT count(*) FROM pg_prepared_xacts", &[])
        .map(|r| r.get(0))
}

/// Whether `e`, the answer to `PREPARE TRANSACTION`, means the server has no prepared
/// transaction slot for it: `out_of_memory` (53200, "maximum number of prepared transactions
/// reached") or `object_not_in_prerequisite_state` (55000, "prepared transactions are
/// disabled"). By SQL state, not message: messages follow the server's `lc_messages`.
pub fn is_out_of_prepared_slots(e: &postgres::Error) -> bool {
    e.code()
        .is_some_and(|c| c.code() == "53200" || c.code() == "55000")
}

/// Refuses, before the job starts, an appending sink at `parallelism` whose prepared
/// transactions can exceed the server's `max_prepared_transactions` (PostgreSQL would fail
/// the job at some barrier, perhaps hours in, with its own message).
pub(crate) fn check_capacity(
    client: &mut Client,
    table: &str,
    parallelism: usize,
    checkpoints: &sluice_runtime::checkpoint::CheckpointConfig,
) -> Result<(), crate::PostgresError> {
    let statement = |source| crate::PostgresError::Statement {
        table: table.to_string(),
        what: "SHOW max_prepared_transactions".into(),
        source,
    };
    let Some(max) = max_prepared_transactions(client).map_err(statement)? else {
        return Ok(());
    };
    let per = prepared_per_subtask(checkpoints);
    let need = per.saturating_mul(parallelism.max(1) as u64);
    if need <= max {
        return Ok(());
    }
    Err(crate::PostgresError::PreparedTransactions {
        table: table.to_string(),
        problem: format!(
            "the server allows max_prepared_transactions = {max}, and this exactly-once \
             append sink may hold up to {need} prepared transactions at once: parallelism \
             {parallelism} × {per} per subtask (execution.checkpointing.\
             max-concurrent-checkpoints = {} in flight + execution.checkpointing.\
             tolerable-failed-checkpoints = {} failed and not yet covered by a completed \
             checkpoint + 1 being committed). Raise max_prepared_transactions to at least \
             {need} (it takes a server restart; more if other clients prepare transactions), \
             or lower the sink's parallelism or those settings",
            checkpoints.max_concurrent, checkpoints.tolerable_failures
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gids_round_trip_and_belong_to_their_prefix() {
        let p = "sluice:public.t:abc";
        let g = gid(p, 3, Some(17), "1796400000000-99");
        assert_eq!(g, "sluice:public.t:abc:3:17:1796400000000-99");
        assert_eq!(gid_subtask(p, &g), Some(3));
        assert_eq!(gid_subtask(p, &gid(p, 1, None, "1796400000000-5")), Some(1));
        assert_eq!(gid_subtask("sluice:public.t:ab", &g), None);
        assert_eq!(gid_subtask(p, "sluice:public.t:abc:x:1:2"), None);
        assert_eq!(literal("a'b"), "'a''b'");
    }

    #[test]
    fn the_bound_counts_concurrent_and_tolerated_checkpoints_and_one_more() {
        let mut c = sluice_runtime::checkpoint::CheckpointConfig::default();
        assert_eq!(
            prepared_per_subtask(&c),
            2,
            "Flink's defaults: 1 concurrent, 0 tolerated"
        );
        c.max_concurrent = 3;
        c.tolerable_failures = 5;
        assert_eq!(prepared_per_subtask(&c), 9);
    }
}
