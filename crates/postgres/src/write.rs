//! The statements that move a batch (sent by [`Session`](crate::session::Session)): the `COPY`
//! statement of appends, one `INSERT … ON CONFLICT` per batch for upserts (by `UNNEST` arrays
//! or multi-row `VALUES`, a batch deduplicated by key).

use std::collections::HashMap;
use std::error::Error;
use std::sync::Arc;

use bytes::BytesMut;
use postgres::types::{to_sql_checked, IsNull, ToSql, Type};

use crate::session::{Params, Submission};

use crate::connect::{quote_ident, quote_table};
use crate::mapping::Column;
use crate::value::{ColumnType, Value};
use crate::UpsertStatement;

/// PostgreSQL's limit on parameters per statement.
const MAX_PARAMS: usize = 65_535;

/// `COPY t (c1, …) FROM STDIN (FORMAT binary)`.
pub(crate) fn copy_sql(table: &str, columns: &[Column]) -> String {
    format!(
        "COPY {} ({}) FROM STDIN (FORMAT binary)",
        quote_table(table),
        column_list(columns)
    )
}

fn column_list(columns: &[Column]) -> String {
    columns
        .iter()
        .map(|c| quote_ident(&c.name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One column of an `UNNEST` batch.
#[derive(Debug)]
pub(crate) enum ColumnArray {
    I32(Vec<Option<i32>>),
    I64(Vec<Option<i64>>),
    F64(Vec<Option<f64>>),
    Text(Vec<Option<String>>),
    Bool(Vec<Option<bool>>),
    Timestamp(Vec<Option<std::time::SystemTime>>),
}

impl ToSql for ColumnArray {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut BytesMut,
    ) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        match self {
            ColumnArray::I32(v) => v.to_sql(ty, out),
            ColumnArray::I64(v) => v.to_sql(ty, out),
            ColumnArray::F64(v) => v.to_sql(ty, out),
            ColumnArray::Text(v) => v.to_sql(ty, out),
            ColumnArray::Bool(v) => v.to_sql(ty, out),
            ColumnArray::Timestamp(v) => v.to_sql(ty, out),
        }
    }

    // Cast in the statement to the column's own array type.
    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

impl ColumnArray {
    fn new(ty: ColumnType, cap: usize) -> ColumnArray {
        match ty {
            ColumnType::Int4 => ColumnArray::I32(Vec::with_capacity(cap)),
            ColumnType::Int8 => ColumnArray::I64(Vec::with_capacity(cap)),
            ColumnType::Float8 => ColumnArray::F64(Vec::with_capacity(cap)),
            ColumnType::Text => ColumnArray::Text(Vec::with_capacity(cap)),
            ColumnType::Bool => ColumnArray::Bool(Vec::with_capacity(cap)),
            ColumnType::Timestamp => ColumnArray::Timestamp(Vec::with_capacity(cap)),
        }
    }

    /// Appends `v` (checked against the column's type when it was buffered).
    fn push(&mut self, v: &Value) {
        match (self, v) {
            (ColumnArray::I32(a), Value::I32(x)) => a.push(Some(*x)),
            (ColumnArray::I64(a), Value::I64(x)) => a.push(Some(*x)),
            (ColumnArray::F64(a), Value::F64(x)) => a.push(Some(*x)),
            (ColumnArray::Text(a), Value::Text(x)) => a.push(Some(x.clone())),
            (ColumnArray::Bool(a), Value::Bool(x)) => a.push(Some(*x)),
            (ColumnArray::Timestamp(a), Value::Timestamp(x)) => a.push(Some(*x)),
            (ColumnArray::I32(a), _) => a.push(None),
            (ColumnArray::I64(a), _) => a.push(None),
            (ColumnArray::F64(a), _) => a.push(None),
            (ColumnArray::Text(a), _) => a.push(None),
            (ColumnArray::Bool(a), _) => a.push(None),
            (ColumnArray::Timestamp(a), _) => a.push(None),
        }
    }
}

/// An upsert batch writer for one table: its statements (prepared once per connection) and
/// the key columns it deduplicates a batch by (`ON CONFLICT DO UPDATE` must not touch a row
/// twice in one statement; the last update of a key wins, as it would row by row).
pub struct Upserter {
    columns: Vec<Column>,
    pg_types: Vec<String>,
    key_idx: Vec<usize>,
    how: UpsertStatement,
    head: String,
    tail: String,
    unnest_sql: Arc<str>,
    /// Multi-row statements by their number of rows.
    multi_row: HashMap<usize, Arc<str>>,
    keep: Vec<usize>,
    seen: HashMap<Vec<u8>, usize>,
    key_buf: Vec<u8>,
    /// `DELETE … WHERE (key) IN (SELECT * FROM UNNEST(…))`, for a changelog's deletions.
    delete_sql: Arc<str>,
}

impl Upserter {
    pub fn new(
        table: &str,
        columns: &[Column],
        pg_types: &[String],
        key: &[String],
        how: UpsertStatement,
    ) -> Upserter {
        let key_idx: Vec<usize> = key
            .iter()
            .filter_map(|k| columns.iter().position(|c| &c.name == k))
            .collect();
        let updates: Vec<String> = columns
            .iter()
            .enumerate()
            .filter(|(i, _)| !key_idx.contains(i))
            .map(|(_, c)| format!("{0} = EXCLUDED.{0}", quote_ident(&c.name)))
            .collect();
        let conflict = key
            .iter()
            .map(|k| quote_ident(k))
            .collect::<Vec<_>>()
            .join(", ");
        let tail = if updates.is_empty() {
            format!(" ON CONFLICT ({conflict}) DO NOTHING")
        } else {
            format!(
                " ON CONFLICT ({conflict}) DO UPDATE SET {}",
                updates.join(", ")
            )
        };
        let head = format!(
            "INSERT INTO {} ({})",
            quote_table(table),
            column_list(columns)
        );
        let arrays = pg_types
            .iter()
            .enumerate()
            .map(|(i, t)| format!("${}::{t}[]", i + 1))
            .collect::<Vec<_>>()
            .join(", ");
        let unnest_sql = format!("{head} SELECT * FROM UNNEST({arrays}){tail}").into();
        let key_arrays = key_idx
            .iter()
            .enumerate()
            .map(|(j, &i)| format!("${}::{}[]", j + 1, pg_types[i]))
            .collect::<Vec<_>>()
            .join(", ");
        let delete_sql = format!(
            "DELETE FROM {} WHERE ({conflict}) IN (SELECT * FROM UNNEST({key_arrays}))",
            quote_table(table)
        )
        .into();
        Upserter {
            columns: columns.to_vec(),
            pg_types: pg_types.to_vec(),
            key_idx,
            how,
            head,
            tail,
            unnest_sql,
            multi_row: HashMap::new(),
            keep: Vec::new(),
            seen: HashMap::new(),
            key_buf: Vec::new(),
            delete_sql,
        }
    }

    /// The statements that upsert `rows` (flattened): one for `UNNEST`; for multi-row
    /// `VALUES` one per 65,535 parameters; then one `DELETE` of the keys whose last row in the
    /// batch is a deletion (`deleted`, per row). Returns them and the number of distinct keys.
    pub fn batch(&mut self, rows: &[Value], deleted: &[bool]) -> (Vec<Arc<Submission>>, u64) {
        let n = self.columns.len();
        // The last row of each key, in order of first appearance.
        self.keep.clear();
        self.seen.clear();
        for (i, row) in rows.chunks_exact(n).enumerate() {
            self.key_buf.clear();
            for &k in &self.key_idx {
                row[k].encode_key(&mut self.key_buf);
            }
            match self.seen.get(&self.key_buf) {
                Some(&slot) => self.keep[slot] = i,
                None => {
                    self.seen.insert(self.key_buf.clone(), self.keep.len());
                    self.keep.push(i);
                }
            }
        }
        // The keys whose last row deletes: taken out of the upserts, deleted after them (they
        // are other keys, so the order between the two statements does not matter).
        let keys_total = self.keep.len() as u64;
        let mut deletes: Vec<usize> = Vec::new();
        if deleted.iter().any(|d| *d) {
            let all = std::mem::take(&mut self.keep);
            for i in all {
                if deleted.get(i).copied().unwrap_or(false) {
                    deletes.push(i);
                } else {
                    self.keep.push(i);
                }
            }
        }
        let mut subs = match self.how {
            UpsertStatement::Unnest if self.keep.is_empty() => Vec::new(),
            UpsertStatement::Unnest => {
                let mut arrays: Vec<ColumnArray> = self
                    .columns
                    .iter()
                    .map(|c| ColumnArray::new(c.ty, self.keep.len()))
                    .collect();
                for &i in &self.keep {
                    for (c, a) in arrays.iter_mut().enumerate() {
                        a.push(&rows[i * n + c]);
                    }
                }
                vec![Arc::new(Submission {
                    sql: self.unnest_sql.clone(),
                    params: Params::Arrays(arrays),
                })]
            }
            UpsertStatement::MultiRow => {
                let per_statement = (MAX_PARAMS / n).max(1);
                let keep = std::mem::take(&mut self.keep);
                let subs = keep
                    .chunks(per_statement)
                    .map(|chunk| {
                        let mut values = Vec::with_capacity(chunk.len() * n);
                        for &i in chunk {
                            values.extend_from_slice(&rows[i * n..(i + 1) * n]);
                        }
                        Arc::new(Submission {
                            sql: self.multi_row_sql(chunk.len()),
                            params: Params::Values(values),
                        })
                    })
                    .collect();
                self.keep = keep;
                subs
            }
        };
        if !deletes.is_empty() {
            let mut arrays: Vec<ColumnArray> = self
                .key_idx
                .iter()
                .map(|&k| ColumnArray::new(self.columns[k].ty, deletes.len()))
                .collect();
            for &i in &deletes {
                for (a, &k) in arrays.iter_mut().zip(&self.key_idx) {
                    a.push(&rows[i * n + k]);
                }
            }
            subs.push(Arc::new(Submission {
                sql: self.delete_sql.clone(),
                params: Params::Arrays(arrays),
            }));
        }
        (subs, keys_total)
    }

    /// `INSERT … VALUES ($1::t, …), …` for `rows` rows (built once per batch size).
    fn multi_row_sql(&mut self, rows: usize) -> Arc<str> {
        if let Some(s) = self.multi_row.get(&rows) {
            return s.clone();
        }
        let n = self.columns.len();
        let mut sql = format!("{} VALUES ", self.head);
        for r in 0..rows {
            if r > 0 {
                sql.push_str(", ");
            }
            sql.push('(');
            for c in 0..n {
                if c > 0 {
                    sql.push_str(", ");
                }
                sql.push_str(&format!("${}::{}", r * n + c + 1, self.pg_types[c]));
            }
            sql.push(')');
        }
        sql.push_str(&self.tail);
        let sql: Arc<str> = sql.into();
        self.multi_row.insert(rows, sql.clone());
        sql
    }
}
