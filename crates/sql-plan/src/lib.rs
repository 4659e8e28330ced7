#![warn(missing_docs)]

//! # sluice-sql-plan: Flink SQL's query planner
//!
//! SQL queries → a relational plan ([`Rel`]) → Flink's physical operator
//! shape ([`PhysicalNode`]), with Flink's `EXPLAIN` text, operator names and stable ids.
//!
//! * [`bind_query`]: sqlparser's `Query` against the session's catalog → [`Rel`] (FROM, views,
//!   `WITH`, window table functions, joins, WHERE, GROUP BY windows, SELECT, `UNION ALL`).
//!   Unbounded `GROUP BY`, aggregates over the whole stream and `SELECT DISTINCT` become a
//!   `GroupAggregate` (`bind_group.rs`), whose output is a changelog.
//! * [`physical`]: the operators Flink 2.3 plans for it (Calc merging, two-phase window
//!   aggregation, exchanges).
//! * [`changelog_mode`]: Flink's changelog-mode inference — which nodes produce updates, which
//!   consumers (sinks by connector) take them, whether updates carry `-U`; refusals in Flink's
//!   words.
//! * [`hints`]: Flink's query hints (`STATE_TTL`), others refused by name.
//! * [`mini_batch`]: Flink's mini-batch options: `MiniBatchAssigner`s and two-phase
//!   (`LocalGroupAggregate` → `GlobalGroupAggregate`) unbounded aggregation.
//! * [`mod@explain`]: Flink's `EXPLAIN` layout; [`explain::operator_name`] and
//!   [`explain::operator_uids`] for the dashboard and savepoints.
//!
//! Entry points: [`plan_insert`], [`plan_query`], [`plan_statement_set`], [`explain()`].
//! Everything here is plain data (`Clone`, `Debug`); the runtime crate translates each
//! physical node into DataStream operators.

pub mod agg_call;
pub mod bind_query;
pub mod changelog_mode;
pub mod explain;
pub mod hints;
pub mod logical;
pub mod mini_batch;
pub mod physical;
pub mod schema;
pub mod window;

// The front's and the expressions' modules under the paths this crate's code names them by.
use sluice_sql_expr::{bind_expr, expr, functions, typing};
use sluice_sql_front::{catalog, config, ddl, dialect, error, session, statement, types, value};

pub use agg_call::{AggCall, AggKind};
pub use bind_query::{Bound, QueryBinder, UPDATING};
pub use explain::{operator_name, operator_uids, Style};
pub use logical::{Rel, RelNode};
pub use physical::{Distribution, PhysicalNode, PhysicalOp, PhysicalPlan};
pub use schema::Field;
pub use window::{WindowKind, WindowSpec, WindowTime};

use crate::catalog::{CatalogTable, DEFAULT_CATALOG, DEFAULT_DATABASE};
use crate::ddl::ColumnKind;
use crate::error::{Result, SqlError};
use crate::expr::Expr;
use crate::session::Session;
use crate::statement::{
    ExplainDetail, ExplainStatement, Explained, InsertStatement, QueryStatement, StatementSet,
};
use crate::typing::can_cast;

use logical::Sink;

/// The relational plan of one INSERT: the query, cast to the sink's column types as Flink
/// casts them, under a [`RelNode::Sink`].
pub fn bind_insert(session: &Session, insert: &InsertStatement) -> Result<Rel> {
    let mut binder = QueryBinder::new(&session.catalog);
    let bound = binder.bind_query(&insert.query, insert.pos)?;
    let CatalogTable::Table(def) = session.catalog.lookup(&insert.target)? else {
        return Err(SqlError::validation(
            Some(insert.target.pos),
            "an INSERT writes into a table, not a view",
        ));
    };
    let full = format!(
        "{DEFAULT_CATALOG}.{DEFAULT_DATABASE}.{}",
        def.name.object_name()
    );
    // The written columns: physical and non-virtual metadata columns.
    let mut columns = Vec::new();
    for c in &def.columns {
        match &c.kind {
            ColumnKind::Physical(ty) => columns.push((c.name.clone(), ty.clone())),
            ColumnKind::Metadata {
                ty,
                virtual_: false,
                ..
            } => columns.push((c.name.clone(), ty.clone())),
            _ => {}
        }
    }
    if !insert.columns.is_empty() && insert.columns.iter().ne(columns.iter().map(|c| &c.0)) {
        return Err(SqlError::unsupported(
            Some(insert.pos),
            "an INSERT column list other than all the table's columns in order",
        ));
    }
    let query = bound.rel;
    let mismatch = || {
        let q: Vec<String> = query
            .schema
            .iter()
            .map(|f| format!("{}: {}", f.name, f.ty))
            .collect();
        let s: Vec<String> = columns.iter().map(|(n, t)| format!("{n}: {t}")).collect();
        SqlError::validation(
            Some(insert.pos),
            format!(
                "Column types of query result and sink for '{full}' do not match.\nQuery schema: [{}]\nSink schema:  [{}]",
                q.join(", "),
                s.join(", ")
            ),
        )
    };
    if query.schema.len() != columns.len() {
        return Err(mismatch());
    }
    // Flink adds a cast for every column whose type differs from the sink's (nullability and
    // time attributes aside); when it adds any, it also casts the time attributes and the
    // NOT NULL values written into nullable columns (Calcite's full type equality).
    let differs =
        |q: &Field, t: &crate::types::DataType| q.ty.without_time_attribute().logical != t.logical;
    for (q, (_, t)) in query.schema.iter().zip(&columns) {
        if differs(q, t) && !can_cast(&q.ty.logical, &t.logical) {
            return Err(mismatch());
        }
    }
    let any = query
        .schema
        .iter()
        .zip(&columns)
        .any(|(q, (_, t))| differs(q, t));
    let rel = if any {
        let proj = query
            .schema
            .iter()
            .enumerate()
            .zip(&columns)
            .map(|((i, q), (_, t))| {
                let c = Expr::Column {
                    index: i,
                    name: q.name.clone(),
                    ty: q.ty.clone(),
                };
                let needs = differs(q, t)
                    || explain::is_time_attribute(&q.ty)
                    || (!q.ty.nullable && t.nullable);
                let e = if needs {
                    Expr::Cast {
                        expr: Box::new(c),
                        ty: t.clone(),
                        safe: false,
                    }
                } else {
                    c
                };
                (e, q.name.clone())
            })
            .collect();
        bind_query::calc(query, proj, None)
    } else {
        query
    };
    let path = vec![
        DEFAULT_CATALOG.to_string(),
        DEFAULT_DATABASE.to_string(),
        def.name.object_name().to_string(),
    ];
    Ok(Rel {
        node: RelNode::Sink(Sink {
            path,
            columns,
            options: def.options.clone(),
            primary_key: def.primary_key.clone(),
        }),
        inputs: vec![rel],
        schema: Vec::new(),
    })
}

/// The physical trees of relational plans, their changelog modes inferred (an updating query
/// into a sink that cannot take its changes is refused here, at `pos`).
fn finish(
    session: &Session,
    logical: Vec<Rel>,
    pos: crate::error::Position,
) -> Result<PhysicalPlan> {
    let mini_batch = mini_batch::MiniBatch::of(session).map_err(|e| e.at_if_unplaced(pos))?;
    let logical: Vec<Rel> = logical
        .into_iter()
        .map(|r| bind_query::fold_rank_filters(physical::merge_calcs(r)))
        .collect::<Result<_>>()
        .map_err(|e| e.at_if_unplaced(pos))?;
    let mut roots: Vec<PhysicalNode> = logical.iter().map(physical::to_physical).collect();
    refuse_split_distinct(session, &roots).map_err(|e| e.at_if_unplaced(pos))?;
    for r in &mut roots {
        if let Some(mb) = mini_batch {
            mini_batch::apply(r, mb);
        }
        changelog_mode::infer(r).map_err(|e| e.at_if_unplaced(pos))?;
    }
    Ok(PhysicalPlan { logical, roots })
}

/// `table.optimizer.distinct-agg.split.enabled` over a plan with a `DISTINCT` aggregate:
/// Flink would split it into two levels of aggregation by a hash bucket; this version does not
/// build that shape, and says so rather than planning another (the answer would be the same).
fn refuse_split_distinct(session: &Session, roots: &[PhysicalNode]) -> Result<()> {
    let on = session
        .config
        .get("table.optimizer.distinct-agg.split.enabled")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    fn has_distinct(n: &PhysicalNode) -> bool {
        matches!(&n.op, PhysicalOp::GroupAggregate { agg, .. } if agg.aggs.iter().any(|a| a.distinct))
            || n.inputs.iter().any(has_distinct)
    }
    if on && roots.iter().any(has_distinct) {
        return Err(SqlError::unsupported(
            None,
            "'table.optimizer.distinct-agg.split.enabled' = 'true' over a DISTINCT aggregate: \
             the split into bucketed partial and final aggregates is not built yet (the answer \
             without it is the same: RESET the key)",
        ));
    }
    Ok(())
}

/// Plans `INSERT INTO … query`.
pub fn plan_insert(session: &Session, insert: &InsertStatement) -> Result<PhysicalPlan> {
    finish(session, vec![bind_insert(session, insert)?], insert.pos)
}

/// Plans a statement set: its INSERTs as one job.
pub fn plan_statement_set(session: &Session, set: &StatementSet) -> Result<PhysicalPlan> {
    let rels = set
        .inserts
        .iter()
        .map(|i| bind_insert(session, i))
        .collect::<Result<Vec<Rel>>>()?;
    finish(session, rels, set.pos)
}

/// Plans a query run on its own (its rows are collected: no sink node).
pub fn plan_query(session: &Session, query: &QueryStatement) -> Result<PhysicalPlan> {
    let mut binder = QueryBinder::new(&session.catalog);
    let bound = binder.bind_query(&query.query, query.pos)?;
    finish(session, vec![bound.rel], query.pos)
}

/// `EXPLAIN …`: Flink's three sections for what the statement plans.
pub fn explain(session: &Session, stmt: &ExplainStatement) -> Result<String> {
    let mut changelog_mode = false;
    for d in &stmt.details {
        match d {
            ExplainDetail::ChangelogMode => changelog_mode = true,
            other => {
                return Err(SqlError::unsupported(
                    Some(stmt.pos),
                    format!(
                        "EXPLAIN {}: this version explains plans and CHANGELOG_MODE{}",
                        match other {
                            ExplainDetail::EstimatedCost => "ESTIMATED_COST",
                            ExplainDetail::JsonExecutionPlan => "JSON_EXECUTION_PLAN",
                            _ => "PLAN_ADVICE",
                        },
                        if matches!(other, ExplainDetail::PlanAdvice) {
                            " (a running job's measured plan is EXPLAIN ANALYZE)"
                        } else {
                            ""
                        }
                    ),
                ))
            }
        }
    }
    let plan = match stmt.target.as_ref() {
        Explained::Insert(i) => plan_insert(session, i)?,
        Explained::Query(q) => plan_query(session, q)?,
        Explained::StatementSet(s) => plan_statement_set(session, s)?,
    };
    Ok(explain::explain_text_with(
        &plan.logical,
        &plan.roots,
        changelog_mode,
    ))
}

/// The `EXPLAIN` text of a plan.
pub fn explain_plan(plan: &PhysicalPlan) -> String {
    explain::explain_text(&plan.logical, &plan.roots)
}
