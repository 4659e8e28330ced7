//! [`SqlJob`]: a planned SQL job ([`PhysicalPlan`]) translated into DataStream operators on a
//! [`StreamEnv`].
//!
//! Each physical node becomes what it does here: `TableSourceScan` the table's connector,
//! `Calc` a [`calc`], `WatermarkAssigner` the scan's watermark operator
//! ([`assign_watermark`]) — or, over a source that takes the watermark (Kafka), nothing: the
//! source generates it per partition ([`SourceWatermark`], Flink's push-down) —, `Exchange` a repartitioning (`key_by` on the [`SqlKey`] of the hash
//! columns, `global` for a single instance), `Union` a union and `Sink` [`insert_into`]. The
//! planner already shapes a table's scan (source → Calc of the computed columns → watermark), so
//! the translator follows its nodes and never runs [`crate::TableScan`]'s own steps on top.
//! A scan builds only what is read ([`crate::demand`]); a `nexmark` scan whose `ROW` columns are
//! read by field only emits those fields flat and the operators up to the plan's layout again
//! are rebound to its rows ([`crate::layout`]), the plan unchanged. A `nexmark` scan's chain up
//! to the first `Calc` above its `WatermarkAssigner` runs fused in the source
//! ([`crate::fused`], `translate_fused.rs`), its operators kept in the graph as pass-throughs.
//!
//! Every operator is named [`operator_name`] (Flink's SQL names: `Calc(select=[…])`…) and
//! carries its stable uid from [`operator_uids`], so the dashboard, the doctor and savepoints
//! see the SQL plan. A subtree the plan holds more than once (Flink's `Reused(reference_id)`)
//! is built once and its stream shared. Window aggregates and joins are built by
//! [`translate_stateful`](self) onto [`crate::window_agg`] and [`crate::joins`] (every rows'
//! lateness counted in the job's [`LateRecords`]); a `LookupJoin` by
//! [`translate_lookup`](self) onto sluice-lookup's operator; a `WindowTableFunction` not folded
//! into an aggregate or join is refused as not runnable yet, naming the node.
//!
//! A program's tables ([`Translation`]'s [`StreamTables`]) are scanned from its streams, and
//! their `WATERMARK FOR … AS SOURCE_WATERMARK()` keeps the stream's own watermarks; that
//! marker is refused anywhere else, with Flink's words.

#[path = "translate_changes.rs"]
mod changes;
#[path = "translate_fused.rs"]
mod fused_scan;
#[path = "translate_lookup.rs"]
mod lookup;
#[path = "translate_stateful.rs"]
mod stateful;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use sluice_datastream::{DataStream, Sink, StreamEnv};
use sluice_sql::catalog::CatalogTable;
use sluice_sql::plan::explain::{physical_text, transformation_name, Style};
use sluice_sql::plan::{changelog_mode, PhysicalPlan};
use sluice_sql::plan::{operator_name, operator_uids, Distribution, PhysicalNode, PhysicalOp};
use sluice_sql::{
    Change, DataType, Expr, Result, Row, Session, SqlError, TableDef, TimestampKind,
    SOURCE_WATERMARK, SOURCE_WATERMARK_MISUSED,
};

use crate::calc::{calc_named, Calc};
use crate::connectors::print::PrintSpec;
use crate::connectors::{self, SourceConnector};
use crate::demand::{scan_demands, Demand};
use crate::dropped::DroppedRows;
use crate::key::SqlKey;
use crate::layout::{self, Derived, Rebound, ScanLayouts};
use crate::options::Options;
use crate::row_errors::RowErrors;
use crate::scan::{assign_watermark, with_rowtime, ScanSettings, SourceWatermark};
use crate::schema::PhysicalSchema;
use crate::sink::{insert_changes_into, insert_into};
use crate::stateful::{LateRecords, OperatorIds};
use crate::stream_tables::{StreamTables, Translation};

/// Where the rows of a query run on its own (no INSERT) go.
#[derive(Clone, Debug)]
pub enum QueryOutput {
    /// Printed on stdout as Flink's print sink prints them (`+I[…]`).
    Stdout,
    /// Kept in memory as the printed lines (tests).
    Lines(Arc<Mutex<Vec<String>>>),
}

/// A SQL job added to an environment: the handles its run reads.
pub struct SqlJob {
    /// Rows that failed evaluation (counted, the first errors kept).
    pub errors: RowErrors,
    /// Rows its event-time window aggregates and window joins dropped as late.
    pub late: LateRecords,
    /// The job's sinks, one per INSERT (or the query's print sink), in plan order.
    pub sinks: Vec<Sink<()>>,
    /// How many scan chains run fused in their source ([`crate::fused`]).
    pub fused: usize,
}

impl SqlJob {
    /// What the job drops instead of emitting (its counters, shared), for its run summary.
    pub fn dropped(&self) -> DroppedRows {
        DroppedRows {
            errors: self.errors.clone(),
            late: self.late.clone(),
        }
    }

    /// Adds the operators of `plan` to `env`. Every root must be a sink (INSERTs and statement
    /// sets); see [`SqlJob::build_query`] for a query run on its own.
    pub fn build(env: &StreamEnv, session: &Session, plan: &PhysicalPlan) -> Result<SqlJob> {
        SqlJob::build_in(env, session, plan, &Translation::default())
    }

    /// [`SqlJob::build`] reading a program's stream tables, counting into its handles, its
    /// uids numbered after `translation.uid_offset`.
    pub fn build_in(
        env: &StreamEnv,
        session: &Session,
        plan: &PhysicalPlan,
        translation: &Translation,
    ) -> Result<SqlJob> {
        Translator::new(env, session, plan, translation)?.run(plan, None)
    }

    /// Adds the operators of a query's plan and returns its rows (one stream per root, none of
    /// them a sink): a table turned back into a stream. A root with a rowtime column gives it
    /// as the stream's event time.
    pub fn build_streams(
        env: &StreamEnv,
        session: &Session,
        plan: &PhysicalPlan,
        translation: &Translation,
    ) -> Result<(SqlJob, Vec<DataStream<Row>>)> {
        let mut t = Translator::new(env, session, plan, translation)?;
        let mut streams = Vec::new();
        for root in &plan.roots {
            if let PhysicalOp::Sink(_) = root.op {
                return Err(SqlError::validation(
                    None,
                    "internal plan error: a sink where a query's rows were asked for",
                ));
            }
            let rows = t.stream(root)?;
            let rowtime = root
                .schema
                .iter()
                .position(|f| f.ty.time_attribute() == TimestampKind::Rowtime);
            streams.push(match rowtime {
                Some(i) if rows.timestamps().is_none() => with_rowtime(rows, i),
                _ => rows,
            });
        }
        t.record_plan(plan);
        let job = SqlJob {
            errors: t.errors,
            late: t.late,
            sinks: Vec::new(),
            fused: t.fused,
        };
        Ok((job, streams))
    }

    /// Adds the operators of a query's plan (its root is no sink) with a print sink writing to
    /// `output`, as Flink's SQL client shows a query's rows.
    pub fn build_query(
        env: &StreamEnv,
        session: &Session,
        plan: &PhysicalPlan,
        output: QueryOutput,
    ) -> Result<SqlJob> {
        Translator::new(env, session, plan, &Translation::default())?.run(plan, Some(output))
    }
}

struct Translator<'a> {
    env: &'a StreamEnv,
    session: &'a Session,
    settings: ScanSettings,
    errors: RowErrors,
    late: LateRecords,
    uids: Vec<String>,
    /// The next node's index in pre order over the plan's trees (what `uids` is indexed by).
    next: usize,
    /// Streams of the subtrees built so far, by their plan text: a repeated subtree is reused.
    built: HashMap<String, DataStream<Row>>,
    /// The same for updating subtrees' changelogs.
    built_changes: HashMap<String, DataStream<Change>>,
    /// The program's tables read from its streams.
    tables: StreamTables,
    /// A `WatermarkAssigner`'s watermark on its way to the source scan below it.
    pending_watermark: Option<SourceWatermark>,
    /// What the plan reads of each scan's columns, by the scan's plan text.
    demands: HashMap<String, Vec<Demand>>,
    /// The scans that emit flat rows, and the operators above them rebound ([`layout`]).
    flat: ScanLayouts,
    /// How many times each subtree is in the plan, by its plan text (fusion needs one).
    seen: HashMap<String, usize>,
    /// The nodes that read each `WatermarkAssigner`, by its plan text (a reused scan's fusion).
    readers: HashMap<String, Vec<PhysicalNode>>,
    /// No scan fusion ([`Translation::unfused`]).
    unfused: bool,
    /// Scan chains fused so far.
    fused: usize,
    /// The uids of the pass-through operators of the fused chains (for the job's query plan).
    fused_uids: Vec<String>,
}

/// Counts every subtree under `node` by its plan text.
fn count_subtrees(node: &PhysicalNode, seen: &mut HashMap<String, usize>) {
    *seen.entry(physical_text(node, Style::Exec)).or_default() += 1;
    for i in &node.inputs {
        count_subtrees(i, seen);
    }
}

/// Records the nodes under `node` that read a `WatermarkAssigner`, by its plan text.
fn watermark_readers(node: &PhysicalNode, readers: &mut HashMap<String, Vec<PhysicalNode>>) {
    for i in &node.inputs {
        if matches!(i.op, PhysicalOp::WatermarkAssigner { .. }) {
            let key = physical_text(i, Style::Exec);
            readers.entry(key).or_default().push(node.clone());
        }
        watermark_readers(i, readers);
    }
}

/// How many nodes a subtree holds.
fn size(n: &PhysicalNode) -> usize {
    1 + n.inputs.iter().map(size).sum::<usize>()
}

impl<'a> Translator<'a> {
    fn new(
        env: &'a StreamEnv,
        session: &'a Session,
        plan: &PhysicalPlan,
        translation: &Translation,
    ) -> Result<Self> {
        for root in &plan.roots {
            root.check()?;
        }
        let demands = scan_demands(&plan.roots);
        let flattenable = |n: &PhysicalNode| match &n.op {
            // Only the nexmark source builds flat rows; a program's stream never does.
            PhysicalOp::TableSourceScan(scan) => {
                let name = scan.path.last().map(String::as_str).unwrap_or_default();
                translation.tables.get(name).is_none()
                    && matches!(
                        session.catalog.get(name),
                        Some(CatalogTable::Table(def)) if def.option("connector") == Some("nexmark")
                    )
            }
            _ => false,
        };
        let flat = layout::choose(&plan.roots, &demands, &flattenable);
        let (mut seen, mut readers) = (HashMap::new(), HashMap::new());
        for root in &plan.roots {
            count_subtrees(root, &mut seen);
            watermark_readers(root, &mut readers);
        }
        Ok(Translator {
            env,
            session,
            settings: ScanSettings::from_config(&session.config)?,
            errors: translation.errors.clone(),
            late: translation.late.clone(),
            uids: shift_uids(operator_uids(&plan.roots), translation.uid_offset),
            next: 0,
            built: HashMap::new(),
            built_changes: HashMap::new(),
            tables: translation.tables.clone(),
            pending_watermark: None,
            demands,
            flat,
            seen,
            readers,
            unfused: translation.unfused,
            fused: 0,
            fused_uids: Vec::new(),
        })
    }

    /// Whether every table scanned under `node` is a program stream carrying its own event
    /// time (what `SOURCE_WATERMARK()` needs).
    fn source_watermarked(&self, node: &PhysicalNode) -> bool {
        match &node.op {
            PhysicalOp::TableSourceScan(scan) => {
                let name = scan.path.last().map(String::as_str).unwrap_or_default();
                self.tables.get(name).is_some_and(|t| t.source_watermark)
            }
            _ => !node.inputs.is_empty() && node.inputs.iter().all(|i| self.source_watermarked(i)),
        }
    }

    /// Hands the environment the plan just translated, its nodes mapped to their operators
    /// ([`crate::query_plan`]).
    fn record_plan(&self, plan: &PhysicalPlan) {
        let nodes = self.env.stream_nodes();
        let q = crate::query_plan::query_plan(plan, &self.uids, &self.fused_uids, &nodes);
        self.env.add_query_plan(q);
    }

    fn run(mut self, plan: &PhysicalPlan, query: Option<QueryOutput>) -> Result<SqlJob> {
        let mut sinks = Vec::new();
        for root in &plan.roots {
            match (&root.op, &query) {
                (PhysicalOp::Sink(_), _) => sinks.push(self.sink(root)?),
                (_, Some(output)) if changes::updating(root) => {
                    let changes = self.changes(root)?;
                    let spec = self.print_spec(root, output)?;
                    // One collecting subtask, as Flink's collect sink: a changelog's order
                    // holds only along one channel.
                    sinks.push(
                        spec.write_changes(&changes)
                            .name("collect")
                            .uid("collect")
                            .set_parallelism(1),
                    );
                }
                (_, Some(output)) => {
                    let rows = self.stream(root)?;
                    sinks.push(self.print(root, &rows, output)?);
                }
                (_, None) => {
                    return Err(SqlError::validation(
                        None,
                        "a query without INSERT INTO has no sink: run it as a query",
                    ))
                }
            }
        }
        self.record_plan(plan);
        Ok(SqlJob {
            errors: self.errors,
            late: self.late,
            sinks,
            fused: self.fused,
        })
    }

    /// `node`'s expressions rebound to its input rows' layout (its own over the plan's).
    fn rebind(&self, node: &PhysicalNode) -> Result<Derived> {
        layout::derive_over(node, &self.flat.layouts).ok_or_else(|| {
            SqlError::validation(
                None,
                format!(
                    "internal plan error: {} cannot read its input's flat rows",
                    flink_node_name(node)
                ),
            )
        })
    }

    fn uid(&mut self) -> String {
        let uid = self.uids.get(self.next).cloned().unwrap_or_default();
        self.next += 1;
        uid
    }

    /// The watermark `expr` pushed into the source under `input` (the scan, or a Calc of
    /// computed columns over it), when that source takes watermarks.
    fn pushable_watermark(
        &self,
        input: &PhysicalNode,
        expr: &sluice_sql::Expr,
    ) -> Result<Option<SourceWatermark>> {
        let (projection, scan) = match &input.op {
            PhysicalOp::TableSourceScan(_) => (None, input),
            PhysicalOp::Calc(c) if c.condition.is_none() => match input.inputs.first() {
                Some(n) if matches!(n.op, PhysicalOp::TableSourceScan(_)) => (
                    Some(c.projection.iter().map(|(e, _)| e.clone()).collect()),
                    n,
                ),
                _ => return Ok(None),
            },
            _ => return Ok(None),
        };
        let PhysicalOp::TableSourceScan(scan) = &scan.op else {
            return Ok(None);
        };
        if !connectors::takes_watermark(self.table(&scan.path)?) {
            return Ok(None);
        }
        Ok(Some(SourceWatermark::new(
            projection,
            expr.clone(),
            self.settings,
        )))
    }

    fn table(&self, path: &[String]) -> Result<&'a TableDef> {
        let name = path.last().map(String::as_str).unwrap_or_default();
        match self.session.catalog.get(name) {
            Some(CatalogTable::Table(def)) => Ok(def),
            _ => Err(SqlError::validation(
                None,
                format!(
                    "internal plan error: table '{}' is not in the catalog",
                    path.join(".")
                ),
            )),
        }
    }

    fn sink(&mut self, node: &PhysicalNode) -> Result<Sink<()>> {
        let PhysicalOp::Sink(s) = &node.op else {
            return Err(SqlError::validation(
                None,
                "internal plan error: not a sink",
            ));
        };
        let uid = self.uid();
        let input = &node.inputs[0];
        let types: Vec<DataType> = input.schema.iter().map(|f| f.ty.clone()).collect();
        let sink = if changes::updating(input) {
            let changes = self.changes(input)?;
            let def = self.table(&s.path)?;
            insert_changes_into(
                &changes,
                &types,
                def,
                &self.session.config,
                &self.errors,
                changelog_mode::mode(input),
            )
            .map_err(|e| defined_at(e, def))?
        } else {
            let rows = self.stream(input)?;
            let def = self.table(&s.path)?;
            insert_into(&rows, &types, def, &self.session.config, &self.errors)
                .map_err(|e| defined_at(e, def))?
        };
        Ok(sink.name(&operator_name(node)).uid(&uid))
    }

    fn print(
        &mut self,
        node: &PhysicalNode,
        rows: &DataStream<Row>,
        output: &QueryOutput,
    ) -> Result<Sink<()>> {
        Ok(self
            .print_spec(node, output)?
            .write(rows)
            .name("collect")
            .uid("collect"))
    }

    /// The print sink a query's result is shown by.
    fn print_spec(&self, node: &PhysicalNode, output: &QueryOutput) -> Result<PrintSpec> {
        let columns = node
            .schema
            .iter()
            .map(|f| (f.name.clone(), f.ty.without_time_attribute()))
            .collect();
        let schema = PhysicalSchema::new("collect", columns);
        let options = Options::new("collect", &[("connector".into(), "print".into())]);
        let mut spec = PrintSpec::new(&options, &schema)?;
        if let QueryOutput::Lines(lines) = output {
            spec = spec.to_lines(lines.clone());
        }
        Ok(spec)
    }

    /// The stream of a node's output (built once per distinct subtree).
    fn stream(&mut self, node: &PhysicalNode) -> Result<DataStream<Row>> {
        let key = physical_text(node, Style::Exec);
        if let Some(s) = self.built.get(&key) {
            // Reused: this occurrence's operators are the first one's.
            self.next += size(node);
            return Ok(s.clone());
        }
        let s = self.translate(node)?;
        self.built.insert(key, s.clone());
        Ok(s)
    }

    fn translate(&mut self, node: &PhysicalNode) -> Result<DataStream<Row>> {
        let uid = self.uid();
        let name = operator_name(node);
        let out = match &node.op {
            PhysicalOp::TableSourceScan(scan) => {
                let def = self.table(&scan.path)?;
                let program_rows = self.tables.rows(def.name.object_name(), self.env);
                let rows = match program_rows {
                    Some(rows) => rows,
                    None => {
                        let mut source =
                            SourceConnector::for_table(def).map_err(|e| defined_at(e, def))?;
                        let key = physical_text(node, Style::Exec);
                        if let Some(read) = self.demands.get(&key) {
                            source = source.pruned(read);
                        }
                        if let Some(l) = self.flat.layouts.get(&key) {
                            let width = self.flat.widths.get(&key).copied().unwrap_or(0);
                            source = source.flattened(l, width);
                        }
                        match self.pending_watermark.take() {
                            Some(w) if source.takes_watermark() => {
                                source.stream_with_watermark(self.env, &w)
                            }
                            other => {
                                self.pending_watermark = other;
                                source.stream(self.env)
                            }
                        }
                    }
                };
                rows.name(&name).uid(&uid)
            }
            PhysicalOp::Calc(c) => {
                let exprs = c.projection.iter().map(|(e, _)| e).chain(&c.condition);
                if exprs.into_iter().any(calls_source_watermark) {
                    return Err(SqlError::unsupported(None, SOURCE_WATERMARK_MISUSED));
                }
                if let Some(rows) = self.fused_chain(node, &name, &uid)? {
                    return Ok(rows);
                }
                let input = self.stream(&node.inputs[0])?;
                let (exprs, names): (Vec<_>, Vec<_>) = c.projection.iter().cloned().unzip();
                let planned = Calc::new(exprs, c.condition.clone());
                let derived = self.rebind(node)?;
                let op = match derived.rebound {
                    Rebound::Calc {
                        projection,
                        condition,
                    } => Calc::new(projection, condition),
                    _ => planned.clone(),
                };
                let rows = calc_named(&input, &op, &planned.flink_name(&names), &self.errors)
                    .name(&name)
                    .uid(&uid);
                // Event time stays readable downstream when the rowtime is projected.
                match node
                    .schema
                    .iter()
                    .position(|f| f.ty.time_attribute() == TimestampKind::Rowtime)
                    .and_then(|i| derived.layout.as_ref().map_or(Some(i), |l| l.at(i)))
                {
                    Some(i) if input.timestamps().is_some() => with_rowtime(rows, i),
                    _ => rows,
                }
            }
            PhysicalOp::WatermarkAssigner { rowtime, expr } if calls_source_watermark(expr) => {
                // The rows keep the program stream's watermarks; the rowtime column (its
                // record timestamps) is their event time.
                if !self.source_watermarked(&node.inputs[0]) {
                    return Err(SqlError::unsupported(None, SOURCE_WATERMARK_MISUSED));
                }
                with_rowtime(self.stream(&node.inputs[0])?, *rowtime)
            }
            PhysicalOp::WatermarkAssigner { rowtime, expr } => {
                let (rowtime, expr) = match self.rebind(node)?.rebound {
                    Rebound::Watermark { rowtime, expr } => (rowtime, expr),
                    _ => (*rowtime, expr.clone()),
                };
                if let Some(rows) = self.fused_reused(node, rowtime, &expr, &uid)? {
                    return Ok(rows);
                }
                let (rowtime, expr) = (&rowtime, &expr);
                let pushed = self.pushable_watermark(&node.inputs[0], expr)?;
                let pushing = pushed.is_some();
                self.pending_watermark = pushed;
                let input = self.stream(&node.inputs[0])?;
                if pushing && self.pending_watermark.take().is_none() {
                    // The source took it (a reused scan would not have: then the operator).
                    with_rowtime(input, *rowtime)
                } else {
                    assign_watermark(&input, *rowtime, expr.clone(), self.settings, &name).uid(&uid)
                }
            }
            PhysicalOp::Exchange(d) => {
                let input = self.stream(&node.inputs[0])?;
                match d {
                    Distribution::Single => input.global(),
                    Distribution::Hash(keys) => {
                        let keys = match self.rebind(node)?.rebound {
                            Rebound::Keys(k) => k,
                            _ => keys.clone(),
                        };
                        input
                            .key_by(move |r: &Row| {
                                SqlKey(Row(keys.iter().map(|&i| r.get(i).clone()).collect()))
                            })
                            .as_stream()
                            .clone()
                    }
                }
            }
            PhysicalOp::Union => {
                let mut inputs = Vec::with_capacity(node.inputs.len());
                for i in &node.inputs {
                    inputs.push(self.stream(i)?);
                }
                let (first, rest) = inputs.split_first().ok_or_else(|| {
                    SqlError::validation(None, "internal plan error: a Union without inputs")
                })?;
                first.union(&rest.iter().collect::<Vec<_>>())
            }
            PhysicalOp::Sink(_) => {
                return Err(SqlError::validation(
                    None,
                    "internal plan error: a sink inside a plan tree",
                ))
            }
            PhysicalOp::GlobalWindowAggregate(_)
            | PhysicalOp::WindowAggregate(_)
            | PhysicalOp::GroupWindowAggregate(_) => {
                self.window_agg(node, OperatorIds::new(name, uid))?
            }
            PhysicalOp::Join(_) | PhysicalOp::IntervalJoin(_) | PhysicalOp::WindowJoin(_) => {
                self.join(node, OperatorIds::new(name, uid))?
            }
            PhysicalOp::LookupJoin { .. } => self.lookup_join(node, OperatorIds::new(name, uid))?,
            PhysicalOp::MiniBatchAssigner { .. } => {
                // Bundles are closed by the bundling operators' own clock and size: rows pass.
                self.stream(&node.inputs[0])?
            }
            PhysicalOp::Deduplicate {
                keys,
                keep_last: false,
                rowtime: false,
                ..
            } => {
                let keys = keys.clone();
                let below = self.below_exchange(node)?;
                let input = self.stream(below)?;
                let ttl = self.state_ttl(None);
                crate::rank::deduplicate_first_rows(
                    &input,
                    &keys,
                    ttl,
                    &OperatorIds::new(name, uid),
                )
            }
            PhysicalOp::GroupAggregate { .. }
            | PhysicalOp::LocalGroupAggregate(_)
            | PhysicalOp::GlobalGroupAggregate { .. }
            | PhysicalOp::Rank { .. }
            | PhysicalOp::Deduplicate { .. } => {
                return Err(SqlError::validation(
                    None,
                    format!(
                        "internal plan error: an updating node where rows were expected: {name}"
                    ),
                ))
            }
            PhysicalOp::WindowTableFunction(_) | PhysicalOp::LocalWindowAggregate(_) => {
                return Err(SqlError::unsupported(
                    None,
                    format!(
                        "{} ({}) does not run yet in this version: {name}",
                        flink_node_name(node),
                        transformation_name(node)
                    ),
                ))
            }
        };
        Ok(out)
    }
}

/// Whether `e` calls `SOURCE_WATERMARK()`.
fn calls_source_watermark(e: &Expr) -> bool {
    let mut found = false;
    e.visit(&mut |x| {
        if let Expr::Call { func, .. } = x {
            found |= func.display_name == SOURCE_WATERMARK;
        }
    });
    found
}

/// Plan-only uids (`<n>_<transformation>`) renumbered after `offset` nodes.
fn shift_uids(uids: Vec<String>, offset: usize) -> Vec<String> {
    if offset == 0 {
        return uids;
    }
    uids.into_iter()
        .map(|u| match u.split_once('_') {
            Some((n, rest)) => match n.parse::<usize>() {
                Ok(n) => format!("{}_{rest}", n + offset),
                Err(_) => u,
            },
            None => u,
        })
        .collect()
}

/// A connector option's error with where its table is defined.
fn defined_at(e: SqlError, def: &TableDef) -> SqlError {
    match e {
        SqlError::BadOption {
            table,
            key,
            message,
        } => SqlError::BadOption {
            table,
            key,
            message: format!("{message} (table defined at {})", def.pos),
        },
        other => other,
    }
}

/// Flink's name of a stateful node (`WindowAggregate`, `Join`…), for refusals.
fn flink_node_name(node: &PhysicalNode) -> &'static str {
    match &node.op {
        PhysicalOp::WindowTableFunction(_) => "WindowTableFunction",
        PhysicalOp::LocalWindowAggregate(_) => "LocalWindowAggregate",
        PhysicalOp::GlobalWindowAggregate(_) => "GlobalWindowAggregate",
        PhysicalOp::WindowAggregate(_) => "WindowAggregate",
        PhysicalOp::GroupWindowAggregate(_) => "GroupWindowAggregate",
        PhysicalOp::GroupAggregate { .. } => "GroupAggregate",
        PhysicalOp::Rank { .. } => "Rank",
        PhysicalOp::MiniBatchAssigner { .. } => "MiniBatchAssigner",
        PhysicalOp::LocalGroupAggregate(_) => "LocalGroupAggregate",
        PhysicalOp::GlobalGroupAggregate { .. } => "GlobalGroupAggregate",
        PhysicalOp::Deduplicate { .. } => "Deduplicate",
        PhysicalOp::Join(_) => "Join",
        PhysicalOp::IntervalJoin(_) => "IntervalJoin",
        PhysicalOp::WindowJoin(_) => "WindowJoin",
        PhysicalOp::LookupJoin { .. } => "LookupJoin",
        PhysicalOp::TableSourceScan(_) => "TableSourceScan",
        PhysicalOp::Calc(_) => "Calc",
        PhysicalOp::WatermarkAssigner { .. } => "WatermarkAssigner",
        PhysicalOp::Exchange(_) => "Exchange",
        PhysicalOp::Union => "Union",
        PhysicalOp::Sink(_) => "Sink",
    }
}
