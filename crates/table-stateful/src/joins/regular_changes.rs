//! Flink's regular inner join of changelogs: per key, each side's live rows as a multiset
//! (row → copies), kept up to date by the changes. A change of one side meets the other side's
//! rows and is forwarded with its own kind (`+I`/`+U` joined rows are added, `-U`/`-D` joined
//! rows taken out), as Flink's inner join forwards its inputs' changes. The inputs carry `-U`
//! (the planner asks for it), so that a retraction names the exact row it takes out.

use sluice_datastream::{DataStream, KeyedCoProcessFunction, ProcessContext};
use sluice_sql::{Change, Result, Row};
use sluice_types::{Collector, OperatorError};

use super::{joined, key_of, RegularJoinSpec};
use crate::key::{KeyRow, SqlKey};
use crate::row_errors::RowErrors;
use crate::stateful::OperatorIds;

const LEFT: &str = "join-left-changes";
const RIGHT: &str = "join-right-changes";

#[derive(Clone)]
struct ChangesJoinFn {
    spec: RegularJoinSpec,
    name: String,
    errors: RowErrors,
}

impl ChangesJoinFn {
    fn on_change(
        &self,
        c: Change,
        own: &str,
        other: &str,
        is_left: bool,
        ctx: &mut ProcessContext<'_, SqlKey<KeyRow>>,
        out: &mut dyn Collector<Change>,
    ) -> Result<(), OperatorError> {
        let add = c.kind.is_addition();
        // Keep the side's rows up to date first (a retraction of a row not there is ignored,
        // and then meets nothing: Flink's join does the same).
        let mut present = true;
        if add {
            ctx.map_state::<Row, u64>(own)
                .upsert(c.row.clone(), || 0, |n| *n += 1)?;
        } else {
            let mut m = ctx.map_state::<Row, u64>(own);
            match m.get(&c.row)? {
                Some(n) if n > 1 => {
                    m.put(c.row.clone(), n - 1)?;
                }
                Some(_) => {
                    m.remove(&c.row)?;
                }
                None => present = false,
            }
        }
        if !present {
            return Ok(());
        }
        let mut emitted = Vec::new();
        ctx.map_state::<Row, u64>(other).for_each(|r, &copies| {
            let (l, r) = if is_left { (&c.row, r) } else { (r, &c.row) };
            if let Some(j) = joined(l, r, self.spec.condition.as_ref(), &self.errors, &self.name) {
                for _ in 0..copies {
                    emitted.push(j.clone());
                }
            }
            Ok(())
        })?;
        for row in emitted {
            out.collect(Change::new(c.kind, row))?;
        }
        Ok(())
    }
}

impl KeyedCoProcessFunction<SqlKey<KeyRow>, Change, Change, Change> for ChangesJoinFn {
    fn process_left(
        &mut self,
        c: Change,
        ctx: &mut ProcessContext<'_, SqlKey<KeyRow>>,
        out: &mut dyn Collector<Change>,
    ) -> Result<(), OperatorError> {
        self.on_change(c, LEFT, RIGHT, true, ctx, out)
    }

    fn process_right(
        &mut self,
        c: Change,
        ctx: &mut ProcessContext<'_, SqlKey<KeyRow>>,
        out: &mut dyn Collector<Change>,
    ) -> Result<(), OperatorError> {
        self.on_change(c, RIGHT, LEFT, false, ctx, out)
    }
}

/// The regular inner join of two changelogs (`left ++ right` columns); rows with a NULL key
/// meet nothing. `table.exec.state.ttl` is not applied to changelog joins yet (refused).
pub fn regular_join_changes(
    left: &DataStream<Change>,
    right: &DataStream<Change>,
    spec: &RegularJoinSpec,
    ids: &OperatorIds,
    errors: &RowErrors,
) -> Result<DataStream<Change>> {
    spec.join_type.require_inner("regular join")?;
    if spec.state_ttl.is_some_and(|d| !d.is_zero()) {
        return Err(sluice_sql::SqlError::unsupported(
            None,
            "table.exec.state.ttl on a regular join of updating inputs",
        ));
    }
    let (lk, rk) = (spec.left_keys.clone(), spec.right_keys.clone());
    let non_null =
        |keys: Vec<usize>| move |c: &Change| keys.iter().all(|&i| !c.row.get(i).is_null());
    let l = left
        .filter(non_null(lk.clone()))
        .key_by(move |c: &Change| key_of(&lk, &c.row));
    let r = right
        .filter(non_null(rk.clone()))
        .key_by(move |c: &Change| key_of(&rk, &c.row));
    let f = ChangesJoinFn {
        spec: spec.clone(),
        name: ids.name.clone(),
        errors: errors.clone(),
    };
    Ok(l.connect(&r).process(f).name(&ids.name).uid(&ids.uid))
}
