//! A table scan ([`TableScan`]): the connector's rows (physical columns) → the computed columns
//! (each bound against the physical columns, in declared order, as Flink does) → the watermark
//! of `WATERMARK FOR rowtime AS expr`.
//!
//! The watermark is Flink SQL's periodic one: every `pipeline.auto-watermark-interval` (200 ms
//! by default) each source subtask emits the largest value of `expr` over the rows it has seen
//! (no `- 1` as the DataStream bounded-out-of-orderness strategy has), and with
//! `table.exec.source.idle-timeout` a subtask without rows for that long is marked idle. It runs
//! on the DataStream API's watermark operator, and the stream's event timestamp is the rowtime
//! column's value, so windows and timers downstream see event time as in a DataStream job. A
//! row whose rowtime or watermark expression is NULL (or fails) does not move the watermark; a
//! NULL rowtime reads as the smallest timestamp (Flink fails the job on it downstream).
//!
//! A source that generates watermarks itself (Kafka, [`SourceConnector::takes_watermark`]) is
//! given the watermark instead ([`SourceWatermark`], Flink's watermark push-down): each of its
//! partitions runs the same periodic generator over its own rows and the subtask emits the
//! smallest, so no WatermarkAssigner operator follows it. A `nexmark` scan runs the same
//! generator (`periodic_watermark`) in its source when the translator fuses it
//! ([`crate::fused`]).

use std::sync::Arc;
use std::time::Duration;

use sluice_datastream::{DataStream, StreamEnv};
use sluice_runtime::operators::WatermarkAssignerOp;
use sluice_runtime::time::watermarks::BoundedOutOfOrderness;
use sluice_sql::compiled::Fallible;
use sluice_sql::ddl::ColumnKind;
use sluice_sql::{
    bind_expr, BindContext, CompiledExpr, DataType, Expr, LogicalType, Result, Row, Scope,
    ScopeColumn, SessionConfig, SqlError, TableDef, TimestampKind,
};

use crate::calc::{calc, Calc};
use crate::connectors::SourceConnector;
use crate::row_errors::RowErrors;
use crate::schema::PhysicalSchema;

/// Flink's default `pipeline.auto-watermark-interval`.
pub const DEFAULT_WATERMARK_INTERVAL: Duration = Duration::from_millis(200);

/// The session settings a scan reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScanSettings {
    /// `pipeline.auto-watermark-interval`.
    pub watermark_interval: Duration,
    /// `table.exec.source.idle-timeout` (none: a quiet source holds the watermark back).
    pub idle_timeout: Option<Duration>,
}

impl Default for ScanSettings {
    fn default() -> ScanSettings {
        ScanSettings {
            watermark_interval: DEFAULT_WATERMARK_INTERVAL,
            idle_timeout: None,
        }
    }
}

impl ScanSettings {
    /// The settings a session's `SET`s give (Flink's defaults otherwise; an idle timeout of 0
    /// is Flink's "disabled"). `pipeline.auto-watermark-interval` is not one of the keys the
    /// session checks when set, so a value that is not a duration is refused here, naming it.
    pub fn from_config(config: &SessionConfig) -> Result<ScanSettings> {
        const INTERVAL: &str = "pipeline.auto-watermark-interval";
        let watermark_interval = match config.get(INTERVAL) {
            None => DEFAULT_WATERMARK_INTERVAL,
            Some(v) => config.duration(INTERVAL).ok_or_else(|| {
                SqlError::validation(
                    None,
                    format!("'{INTERVAL}' must be a duration (like '200 ms'), found '{v}'"),
                )
            })?,
        };
        Ok(ScanSettings {
            watermark_interval,
            idle_timeout: config.source_idle_timeout().filter(|d| !d.is_zero()),
        })
    }
}

/// A row's watermark value in ms (`None`: it does not move the watermark).
pub type WatermarkValue = Arc<dyn Fn(&Row) -> Option<i64> + Send + Sync>;

/// A table's watermark pushed into its source: the watermark value of a row of the source's
/// physical columns (`None` for NULL or a failed evaluation: it does not move the watermark)
/// and the session's interval and idle timeout.
#[derive(Clone)]
pub struct SourceWatermark {
    /// The row's watermark value in ms.
    pub value: WatermarkValue,
    /// `pipeline.auto-watermark-interval`, `table.exec.source.idle-timeout`.
    pub settings: ScanSettings,
}

impl SourceWatermark {
    /// The watermark `watermark` over the columns that `projection` (the computed columns, or
    /// `None` for the physical columns as they are) makes of a source row.
    pub fn new(projection: Option<Vec<Expr>>, watermark: Expr, settings: ScanSettings) -> Self {
        let projection: Option<Vec<CompiledExpr>> =
            projection.map(|p| p.iter().map(CompiledExpr::new).collect());
        let watermark = CompiledExpr::new(&watermark);
        let value = move |r: &Row| -> Option<i64> {
            let v = match &projection {
                None => watermark.eval(r).ok()?,
                Some(p) => {
                    let cols = p.iter().map(|e| e.eval(r)).collect::<Fallible<Vec<_>>>();
                    watermark.eval(&Row(cols.ok()?)).ok()?
                }
            };
            millis(&v)
        };
        SourceWatermark {
            value: Arc::new(value),
            settings,
        }
    }
}

use sluice_table_stateful::rowtime::millis;
pub use sluice_table_stateful::rowtime::with_rowtime;

/// A table's scan, planned: its source, its output columns and its watermark.
#[derive(Clone, Debug)]
pub struct TableScan {
    /// The table's name.
    pub table: String,
    /// The source connector.
    pub source: SourceConnector,
    /// The connector's columns.
    pub physical: PhysicalSchema,
    /// The scan's output columns, in declared order (physical and computed), the rowtime
    /// column typed `*ROWTIME*`.
    pub columns: Vec<ScopeColumn>,
    /// The rowtime column's index in the output, if the table declares a watermark.
    pub rowtime: Option<usize>,
    /// Physical columns by reference and computed ones by expression, over the physical row.
    projection: Vec<Expr>,
    /// The watermark expression, over the output row.
    watermark: Option<Expr>,
    settings: ScanSettings,
}

impl TableScan {
    /// Plans the scan of `def`: its connector's options are checked, its computed columns and
    /// watermark bound (errors name their place in the script through `ctx`).
    pub fn new(def: &TableDef, ctx: &BindContext<'_>, settings: ScanSettings) -> Result<TableScan> {
        let source = SourceConnector::for_table(def)?;
        let physical = PhysicalSchema::of(def)?;
        let physical_scope = Scope::of(
            &physical
                .names
                .iter()
                .map(String::as_str)
                .zip(physical.types.iter().cloned())
                .collect::<Vec<_>>(),
        );
        let mut projection = Vec::with_capacity(def.columns.len());
        let mut columns = Vec::with_capacity(def.columns.len());
        let mut next_physical = 0;
        for c in &def.columns {
            let e = match &c.kind {
                ColumnKind::Physical(ty) => {
                    next_physical += 1;
                    Expr::Column {
                        index: next_physical - 1,
                        name: c.name.clone(),
                        ty: ty.clone(),
                    }
                }
                ColumnKind::Computed(ast) => bind_expr(ast, &physical_scope, ctx)?,
                ColumnKind::Metadata { .. } => unreachable_metadata(&c.name)?,
            };
            columns.push(ScopeColumn {
                qualifier: None,
                name: c.name.clone(),
                ty: e.data_type(),
            });
            projection.push(e);
        }
        let (rowtime, watermark) = match &def.watermark {
            None => (None, None),
            Some(w) => {
                let i = columns
                    .iter()
                    .position(|c| c.name == w.column)
                    .ok_or_else(|| SqlError::UnknownName {
                        pos: Some(w.pos),
                        kind: "Rowtime column",
                        name: w.column.clone(),
                        nearest_names: sluice_sql::catalog::nearest(
                            &w.column,
                            columns.iter().map(|c| c.name.as_str()),
                        ),
                    })?;
                let ty = columns[i].ty.clone();
                let LogicalType::Timestamp { precision, .. } = ty.logical else {
                    return Err(SqlError::validation(
                        Some(w.pos),
                        format!(
                            "Invalid data type of time field for watermark definition. The field must be of type TIMESTAMP(p) or TIMESTAMP_LTZ(p), the supported precision 'p' is from 0 to 3, but the time field type is {ty}"
                        ),
                    ));
                };
                let wm = bind_expr(&w.expr, &Scope::new(columns.clone()), ctx)?;
                columns[i].ty = DataType {
                    logical: LogicalType::Timestamp {
                        precision,
                        kind: TimestampKind::Rowtime,
                    },
                    nullable: ty.nullable,
                };
                (Some(i), Some(wm))
            }
        };
        Ok(TableScan {
            table: def.name.to_string(),
            source,
            physical,
            columns,
            rowtime,
            projection,
            watermark,
            settings,
        })
    }

    /// The output columns' names.
    pub fn names(&self) -> Vec<String> {
        self.columns.iter().map(|c| c.name.clone()).collect()
    }

    /// The output columns' types.
    pub fn types(&self) -> Vec<DataType> {
        self.columns.iter().map(|c| c.ty.clone()).collect()
    }

    /// The scan: the table's source, then [`apply_to`](Self::apply_to) (or, for a source that
    /// takes the watermark, the source with it, then the computed columns).
    pub fn stream(&self, env: &StreamEnv, errors: &RowErrors) -> DataStream<Row> {
        if let (Some(rowtime), Some(wm)) = (self.rowtime, &self.watermark) {
            if self.source.takes_watermark() {
                let projection = (!self.is_identity()).then(|| self.projection.clone());
                let pushed = SourceWatermark::new(projection, wm.clone(), self.settings);
                let rows = self.source.stream_with_watermark(env, &pushed);
                return with_rowtime(self.project(rows, errors), rowtime);
            }
        }
        self.apply_to(self.source.stream(env), errors)
    }

    /// Whether the output columns are the physical ones as they are.
    fn is_identity(&self) -> bool {
        self.projection.len() == self.physical.len()
            && self
                .projection
                .iter()
                .enumerate()
                .all(|(i, e)| matches!(e, Expr::Column { index, .. } if *index == i))
    }

    /// The computed columns over physical rows.
    fn project(&self, physical_rows: DataStream<Row>, errors: &RowErrors) -> DataStream<Row> {
        if self.is_identity() {
            physical_rows
        } else {
            calc(
                &physical_rows,
                &Calc::new(self.projection.clone(), None),
                &self.names(),
                errors,
            )
        }
    }

    /// The scan over rows of the physical columns from elsewhere (a stream turned into a
    /// table): computed columns, then the watermark.
    pub fn apply_to(&self, physical_rows: DataStream<Row>, errors: &RowErrors) -> DataStream<Row> {
        let rows = self.project(physical_rows, errors);
        let (Some(rowtime), Some(wm)) = (self.rowtime, self.watermark.clone()) else {
            return rows;
        };
        let name = format!(
            "WatermarkAssigner(rowtime=[{}], watermark=[{wm}])",
            self.columns[rowtime].name
        );
        assign_watermark(&rows, rowtime, wm, self.settings, &name)
    }
}

/// Flink SQL's `WatermarkAssigner` over `rows`: the periodic watermark max(`watermark`) (see
/// the module's docs), the operator named `name`; the output's event timestamp is column
/// `rowtime`. Shared by [`TableScan`] and the plan translator's `WatermarkAssigner` node.
pub fn assign_watermark(
    rows: &DataStream<Row>,
    rowtime: usize,
    watermark: Expr,
    settings: ScanSettings,
    name: &str,
) -> DataStream<Row> {
    let assigned = rows.transform(name, move |_| {
        let wm = CompiledExpr::new(&watermark);
        periodic_watermark(move |r: &Row| watermark_input(&wm, r), settings)
    });
    with_rowtime(assigned, rowtime)
}

/// Flink SQL's periodic watermark generator over records whose [`watermark_input`] is
/// `input`: emits max(expr) every `pipeline.auto-watermark-interval`, idle after the timeout.
/// Shared by [`assign_watermark`] and the fused scan ([`crate::fused`]).
pub(crate) fn periodic_watermark<T, F: Fn(&T) -> i64>(
    input: F,
    settings: ScanSettings,
) -> WatermarkAssignerOp<T, F> {
    let mut generator = BoundedOutOfOrderness::new(0);
    if let Some(idle) = settings.idle_timeout {
        generator = generator.with_idleness(idle.as_millis() as u64);
    }
    WatermarkAssignerOp::new(input, generator, settings.watermark_interval)
}

/// What the watermark generator is fed for a row: `expr + 1` in ms, as the generator's
/// watermark is `max - 0 - 1` and Flink SQL's is max(expr); `i64::MIN` (no move) for NULL or
/// a failed evaluation.
#[inline]
pub(crate) fn watermark_input(expr: &CompiledExpr, row: &Row) -> i64 {
    expr.eval(row)
        .ok()
        .as_ref()
        .and_then(millis)
        .map_or(i64::MIN, |ms| ms.saturating_add(1))
}

/// Metadata columns were refused by [`PhysicalSchema::of`] already.
fn unreachable_metadata(name: &str) -> Result<Expr> {
    Err(SqlError::unsupported(
        None,
        format!("metadata column '{name}'"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_read_flinks_keys() {
        let mut c = SessionConfig::new();
        let at = sluice_sql::Position::default();
        assert_eq!(
            ScanSettings::from_config(&c).unwrap(),
            ScanSettings::default()
        );
        c.set("pipeline.auto-watermark-interval", "1 s", at)
            .unwrap();
        c.set("table.exec.source.idle-timeout", "5 s", at).unwrap();
        let s = ScanSettings::from_config(&c).unwrap();
        assert_eq!(s.watermark_interval, Duration::from_secs(1));
        assert_eq!(s.idle_timeout, Some(Duration::from_secs(5)));
        c.set("pipeline.auto-watermark-interval", "soon", at)
            .unwrap();
        assert!(ScanSettings::from_config(&c)
            .unwrap_err()
            .to_string()
            .contains("soon"));
    }
}
