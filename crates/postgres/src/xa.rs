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

pub fn gid(prefix: &str, subtask: usize, checkpoint: Option<u64>, attempt: u64) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gids_round_trip_and_belong_to_their_prefix() {
        let p = "sluice:public.t:abc";
        let g = gid(p, 3, Some(17), 99);
        assert_eq!(g, "sluice:public.t:abc:3:17:99");
        assert_eq!(gid_subtask(p, &g), Some(3));
        assert_eq!(gid_subtask(p, &gid(p, 1, None, 5)), Some(1));
        assert_eq!(gid_subtask("sluice:public.t:ab", &g), None);
        assert_eq!(gid_subtask(p, "sluice:public.t:abc:x:1:2"), None);
        assert_eq!(literal("a'b"), "'a''b'");
    }
}
