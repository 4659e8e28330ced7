//! A plan's `LookupJoin` onto sluice-lookup's operator ([`LookupExt::lookup_rows_with`]):
//! every row of the left input looks its key up in the right table
//! ([`crate::connectors::lookup`]) and is joined with each row found, `left ++ right`, the
//! join's condition (Flink's `where=[…]` of a lookup join) read over the joined row. An inner
//! join drops a row nothing matches; a `LEFT` join emits it once padded with NULLs. The
//! operator carries Flink's name (`LookupJoin(table=[…], joinType=[InnerJoin], lookup=[…],
//! select=[…])`) and the node's uid, and its `lookup.*` plan options are the table's (so the
//! doctor's "async lookup" or "cache" fix applies to SQL lookups too).
//!
//! A row whose looked-up values do not read or whose condition fails to evaluate is counted in
//! the job's [`crate::RowErrors`] and dropped, never joined differently.

use sluice_datastream::DataStream;
use sluice_lookup::LookupExt;
use sluice_sql::plan::logical::{JoinKind, ScanColumnSource};
use sluice_sql::plan::{PhysicalNode, PhysicalOp};
use sluice_sql::{Result, Row, SqlError, TimestampKind, Value};

use super::Translator;
use crate::connectors::lookup::{key_of, lookup_table};
use crate::scan::with_rowtime;
use crate::stateful::OperatorIds;

fn internal(what: &str) -> SqlError {
    SqlError::validation(None, format!("internal plan error: {what}"))
}

impl Translator<'_> {
    /// A `LookupJoin` node (`ids` its own name and uid, already taken).
    pub(super) fn lookup_join(
        &mut self,
        node: &PhysicalNode,
        ids: OperatorIds,
    ) -> Result<DataStream<Row>> {
        let PhysicalOp::LookupJoin { join, table } = &node.op else {
            return Err(internal("not a lookup join"));
        };
        let JoinKind::Lookup { keys, left_outer } = &join.kind else {
            return Err(internal("a lookup join without its keys"));
        };
        let left_node = node
            .inputs
            .first()
            .ok_or_else(|| internal("a lookup join without input"))?;
        let def = self.table(&table.path)?;
        let [(right_key, left_key)] = keys.as_slice() else {
            return Err(SqlError::unsupported(
                None,
                format!(
                    "a lookup join on {} key columns of table '{}': one key column is supported",
                    keys.len(),
                    def.name
                ),
            ));
        };
        // The lookup returns physical rows: a computed or metadata column has no value there.
        let mut physical_key = None;
        for (i, (field, source)) in table.columns.iter().enumerate() {
            match source {
                ScanColumnSource::Physical(p) => {
                    if i == *right_key {
                        physical_key = Some(*p);
                    }
                }
                _ => {
                    return Err(SqlError::unsupported(
                        Some(def.pos),
                        format!(
                            "lookup table '{}' has the computed or metadata column '{}': a lookup reads physical columns only",
                            def.name, field.name
                        ),
                    ))
                }
            }
        }
        let key = physical_key.ok_or_else(|| internal("a lookup key out of range"))?;
        let lookup = lookup_table(def, key)?;
        let input = self.stream(left_node)?;
        let had_time = input.timestamps().is_some();

        let left_key = *left_key;
        let left_outer = *left_outer;
        let width = node.schema.len();
        let right_width = lookup.types().len();
        let condition = join
            .condition
            .as_ref()
            .map(sluice_sql::CompiledPredicate::new);
        let errors = self.errors.clone();
        let name = ids.name.clone();
        let table_rows = lookup.clone();
        let join_rows = move |record: &Row, rows: &[sluice_lookup::Row]| -> Vec<Row> {
            let mut out = Vec::with_capacity(rows.len().max(1));
            for r in rows {
                let mut values = Vec::with_capacity(width);
                values.extend_from_slice(&record.0);
                if let Err(e) = table_rows.decode(r, &mut values) {
                    errors.record(|| format!("{name}: {e}"));
                    return Vec::new();
                }
                let joined = Row(values);
                if let Some(c) = &condition {
                    match c.holds(&joined) {
                        Ok(true) => {}
                        Ok(false) => continue,
                        Err(e) => {
                            errors.record(|| format!("{name}: {e}"));
                            return Vec::new();
                        }
                    }
                }
                out.push(joined);
            }
            if out.is_empty() && left_outer {
                let mut values = Vec::with_capacity(width);
                values.extend_from_slice(&record.0);
                values.resize(record.0.len() + right_width, Value::Null);
                out.push(Row(values));
            }
            out
        };
        let out = input
            .lookup_rows_with(
                &lookup.source,
                move |r: &Row| key_of(r.get(left_key)),
                join_rows,
                &lookup.options,
            )
            .name(&ids.name)
            .uid(&ids.uid);
        // Event time stays readable downstream where the plan keeps a rowtime column.
        Ok(
            match node
                .schema
                .iter()
                .position(|f| f.ty.time_attribute() == TimestampKind::Rowtime)
            {
                Some(i) if had_time => with_rowtime(out, i),
                _ => out,
            },
        )
    }
}
