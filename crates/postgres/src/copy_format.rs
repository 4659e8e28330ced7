//! PostgreSQL's binary `COPY` format, written straight from [`Value`]s: the header, one tuple
//! per row (field count, then each field's length and big-endian bytes, -1 for NULL), the
//! trailer. The encoding of a value follows from its variant alone (the mapping's values were
//! checked against the column types when buffered; `text`/`varchar` and `timestamp`/
//! `timestamptz` share theirs), so this needs no per-column type dispatch and no `ToSql`
//! length back-patching — the sink's client CPU per row is mostly this loop.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::{BufMut, BytesMut};

use crate::value::Value;

/// `PGCOPY\n\xff\r\n\0`, flags 0, header extension length 0.
pub fn header(out: &mut BytesMut) {
    out.put_slice(b"PGCOPY\n\xff\r\n\0");
    out.put_i32(0);
    out.put_i32(0);
}

/// The file trailer: a field count of -1.
pub fn trailer(out: &mut BytesMut) {
    out.put_i16(-1);
}

/// Seconds between the Unix epoch and PostgreSQL's (2000-01-01 00:00:00 UTC).
const PG_EPOCH_UNIX_SECS: u64 = 946_684_800;

/// A timestamp as PostgreSQL stores it: microseconds since 2000-01-01 UTC (truncated to whole
/// microseconds, as `postgres-types` writes `SystemTime`).
fn pg_micros(t: SystemTime) -> i64 {
    let epoch = UNIX_EPOCH + Duration::from_secs(PG_EPOCH_UNIX_SECS);
    let usec = |d: Duration| d.as_secs() as i64 * 1_000_000 + i64::from(d.subsec_micros());
    match t.duration_since(epoch) {
        Ok(d) => usec(d),
        Err(e) => -usec(e.duration()),
    }
}

/// Appends `rows` (flattened, `columns` values per row) as binary COPY tuples.
pub fn rows(rows: &[Value], columns: usize, out: &mut BytesMut) {
    // A lower bound that avoids most regrowth: field count + a length and 8 bytes per field.
    out.reserve(rows.len() / columns.max(1) * (2 + columns * 12));
    for row in rows.chunks_exact(columns) {
        out.put_i16(columns as i16);
        for v in row {
            match v {
                Value::Null => out.put_i32(-1),
                Value::I32(x) => {
                    out.put_i32(4);
                    out.put_i32(*x);
                }
                Value::I64(x) => {
                    out.put_i32(8);
                    out.put_i64(*x);
                }
                Value::F64(x) => {
                    out.put_i32(8);
                    out.put_u64(x.to_bits());
                }
                Value::Text(s) => {
                    out.put_i32(s.len() as i32);
                    out.put_slice(s.as_bytes());
                }
                Value::Bool(b) => {
                    out.put_i32(1);
                    out.put_u8(*b as u8);
                }
                Value::Timestamp(t) => {
                    out.put_i32(8);
                    out.put_i64(pg_micros(*t));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use postgres::types::{ToSql, Type};

    /// Each field's bytes equal what `postgres-types` writes for the same value.
    #[test]
    fn fields_match_postgres_types() {
        let t = UNIX_EPOCH + Duration::from_micros(1_700_000_000_123_456);
        let before = UNIX_EPOCH - Duration::from_micros(31_000_001);
        let cases: Vec<(Value, Type)> = vec![
            (Value::I32(-7), Type::INT4),
            (Value::I64(1 << 40), Type::INT8),
            (Value::F64(-2.5), Type::FLOAT8),
            (Value::Text("héllo".into()), Type::TEXT),
            (Value::Bool(true), Type::BOOL),
            (Value::Timestamp(t), Type::TIMESTAMPTZ),
            (Value::Timestamp(before), Type::TIMESTAMP),
        ];
        for (v, ty) in cases {
            let mut ours = BytesMut::new();
            rows(std::slice::from_ref(&v), 1, &mut ours);
            let mut theirs = BytesMut::new();
            v.to_sql(&ty, &mut theirs).unwrap();
            assert_eq!(&ours[..2], &1i16.to_be_bytes(), "{v:?}");
            assert_eq!(&ours[2..6], &(theirs.len() as i32).to_be_bytes(), "{v:?}");
            assert_eq!(&ours[6..], &theirs[..], "{v:?}");
        }
        let mut null = BytesMut::new();
        rows(&[Value::Null, Value::I32(1)], 2, &mut null);
        assert_eq!(
            &null[..],
            &[0, 2, 255, 255, 255, 255, 0, 0, 0, 4, 0, 0, 0, 1]
        );
    }
}
