//! Scan fusion: the chain source → `Calc` of the computed columns → `WatermarkAssigner` → the
//! plan's first `Calc` after it, run per source row in the source, with no intermediate row.
//!
//! Why: in the simple Nexmark queries each of those steps materialized a row (the computed
//! columns' row, then the view's), and the steps together cost more than the query. Fused, the
//! computed columns that are not bare columns (the official DDL's `dateTime AS CASE …`) are
//! evaluated once over the source row and appended to it (the row is allocated with room), the
//! watermark expression and the following Calc read that *extended* row through their columns
//! remapped ([`FusedPlan::new`]), and the Calc moves its output out of it (`CalcOp`).
//!
//! The semantics are the unfused operators', step by step: a row whose computed column fails is
//! counted under the computed Calc's name and never reaches the watermark; every other row
//! feeds Flink SQL's periodic watermark — the same operator [`crate::scan::assign_watermark`]
//! runs, so max over *all* rows, including those the Calc then drops, every
//! `pipeline.auto-watermark-interval`, with the idle timeout — and then the Calc (its condition
//! first, failures counted under its name). The job graph is unchanged: the three operators
//! stay in it with their names and uids, as `Done` (rows and watermarks passed on), so the
//! vertex's name, the plan and savepoints are Flink's.
//!
//! A source may skip building the rows the Calc certainly drops ([`FusedPlan::kind_filter`]:
//! the `nexmark` source, for a condition that begins with `event_type = K`): it then builds a
//! row of only the columns the computed columns and the watermark read
//! ([`FusedPlan::watermark_reads`]), which still moves the watermark (and still counts a failing
//! computed column).
//!
//! A *reused* chain (q3 reads the `nexmark` table as `person` and as `auction`: one source,
//! computed columns and watermark, read by two Calcs) fuses the same way below its readers: its
//! own Calc keeps every row as it is, the readers stay operators, and when each reader's
//! condition begins with `event_type = K` the source builds in full only the events of the
//! readers' kinds ([`FusedPlan::readers_kinds`]); the others move the watermark and go no further.

use sluice_runtime::operators::WatermarkAssignerOp;
use sluice_sql::{BinaryOp, CompiledExpr, Expr, Row, Value};
use sluice_types::{Collector, ControlEvent, Operator, OperatorError, OutputBatch};

use crate::calc::{Calc, CalcOp};
use crate::row_errors::RowErrors;
use crate::scan::{periodic_watermark, watermark_input, ScanSettings};

/// The fused chain's expressions, over the extended source row: the source's columns
/// (`0..width`), then the computed columns that are not bare columns.
#[derive(Clone, Debug)]
pub struct FusedPlan {
    /// The source row's width.
    pub width: usize,
    /// The computed columns appended to the source row, over its first `width` columns.
    pub extras: Vec<Expr>,
    /// The computed Calc's name (a failed row is counted under it).
    pub computed_name: String,
    /// The watermark expression.
    pub watermark: Expr,
    /// The Calc after the watermark.
    pub calc: Calc,
    /// Its name (for its failed rows).
    pub calc_name: String,
    /// `pipeline.auto-watermark-interval`, `table.exec.source.idle-timeout`.
    pub settings: ScanSettings,
    /// A reused chain's readers: the conditions of the Calcs that read its rows (over the
    /// chain's output rows; its own Calc then keeps every row). Empty: the Calc is the reader.
    pub readers: Vec<Option<Expr>>,
}

impl FusedPlan {
    /// The chain over source rows `width` wide: `computed` (the computed Calc's projections
    /// over the source rows and its name; `None` when the watermark reads the source's rows as
    /// they are), then `watermark` and `calc` over the computed Calc's output rows.
    pub fn new(
        width: usize,
        computed: Option<(&[Expr], String)>,
        watermark: &Expr,
        calc: &Calc,
        calc_name: String,
        settings: ScanSettings,
    ) -> FusedPlan {
        let mut extras = Vec::new();
        let (map, computed_name) = match computed {
            None => ((0..width).collect::<Vec<_>>(), String::new()),
            Some((projection, name)) => {
                let map = projection
                    .iter()
                    .map(|e| match e {
                        Expr::Column { index, .. } if *index < width => *index,
                        e => {
                            extras.push(e.clone());
                            width + extras.len() - 1
                        }
                    })
                    .collect();
                (map, name)
            }
        };
        FusedPlan {
            width,
            extras,
            computed_name,
            watermark: remap(watermark, &map),
            calc: Calc::new(
                calc.projections.iter().map(|e| remap(e, &map)).collect(),
                calc.condition.as_ref().map(|e| remap(e, &map)),
            ),
            calc_name,
            settings,
            readers: Vec::new(),
        }
    }

    /// The same chain read by Calcs with these conditions ([`FusedPlan::readers`]).
    pub fn read_by(mut self, readers: Vec<Option<Expr>>) -> FusedPlan {
        self.readers = readers;
        self
    }

    /// `K` when the Calc's condition is `c = K` or an `AND` whose first operand is, for a
    /// source column `c` that `is_kind` accepts: a row whose `c` is not `K` is then certainly
    /// dropped, and without an error (the condition is that comparison or an `AND`, evaluated
    /// in order, stopping at its first FALSE; nothing of it is shared and computed earlier,
    /// `calc_shared` computes only what the condition always evaluates).
    pub fn kind_filter(&self, is_kind: impl Fn(usize) -> bool) -> Option<i64> {
        let (c, k) = kind_test(self.calc.condition.as_ref()?)?;
        (c < self.width && is_kind(c)).then_some(k)
    }

    /// The kinds a reused chain's readers keep, when each reader's condition begins as
    /// [`FusedPlan::kind_filter`] asks over a column that the chain's Calc passes on bare from a
    /// source column `is_kind` accepts: a row of another kind is then certainly dropped by every
    /// reader, without an error. `None` for a chain without readers.
    pub fn readers_kinds(&self, is_kind: impl Fn(usize) -> bool) -> Option<Vec<i64>> {
        if self.readers.is_empty() || self.calc.condition.is_some() {
            return None;
        }
        let mut kinds = Vec::with_capacity(self.readers.len());
        for condition in &self.readers {
            let (c, k) = kind_test(condition.as_ref()?)?;
            match self.calc.projections.get(c)? {
                Expr::Column { index, .. } if *index < self.width && is_kind(*index) => {
                    kinds.push(k)
                }
                _ => return None,
            }
        }
        kinds.sort_unstable();
        kinds.dedup();
        Some(kinds)
    }

    /// The source columns that the computed columns and the watermark read: what a row the
    /// kind filter drops must still hold.
    pub fn watermark_reads(&self) -> Vec<usize> {
        let mut reads: Vec<usize> = self
            .extras
            .iter()
            .chain(std::iter::once(&self.watermark))
            .flat_map(Expr::columns)
            .filter(|&c| c < self.width)
            .collect();
        reads.sort_unstable();
        reads.dedup();
        reads
    }
}

/// `(c, K)` when `condition` is `c = K` or an `AND` whose first operand is, for a column `c`
/// and an integer `K`.
fn kind_test(condition: &Expr) -> Option<(usize, i64)> {
    let first = match condition {
        Expr::And(args) => args.first()?,
        e => e,
    };
    let Expr::Binary {
        op: BinaryOp::Eq,
        left,
        right,
        ..
    } = first
    else {
        return None;
    };
    match (left.as_ref(), right.as_ref()) {
        (
            Expr::Column { index, .. },
            Expr::Literal {
                value: Value::Int(k),
                ..
            },
        )
        | (
            Expr::Literal {
                value: Value::Int(k),
                ..
            },
            Expr::Column { index, .. },
        ) => Some((*index, *k)),
        _ => None,
    }
}

/// `e` with column `i` read at `map[i]`.
fn remap(e: &Expr, map: &[usize]) -> Expr {
    let mut e = e.clone();
    remap_in(&mut e, map);
    e
}

fn remap_in(e: &mut Expr, map: &[usize]) {
    if let Expr::Column { index, .. } = e {
        if let Some(&k) = map.get(*index) {
            *index = k;
        }
        return;
    }
    for c in e.children_mut() {
        remap_in(c, map);
    }
}

/// One source row after the computed columns: the watermark generator's input for it and the
/// Calc's output row (`None`: dropped).
pub(crate) struct Fused {
    watermark: i64,
    row: Option<Row>,
}

/// The fused chain, compiled, for one subtask.
pub(crate) struct FusedRows {
    extras: Vec<CompiledExpr>,
    computed_name: String,
    watermark: CompiledExpr,
    calc: CalcOp,
    errors: RowErrors,
}

impl FusedRows {
    pub(crate) fn new(plan: &FusedPlan, errors: RowErrors) -> FusedRows {
        FusedRows {
            extras: plan.extras.iter().map(CompiledExpr::new).collect(),
            computed_name: plan.computed_name.clone(),
            watermark: CompiledExpr::new(&plan.watermark),
            calc: CalcOp::new(plan.calc_name.clone(), &plan.calc, errors.clone()),
            errors,
        }
    }

    /// `row` (a source row) through the chain; `None` when a computed column failed (counted).
    /// `kept` false: a row the kind filter drops (only its watermark input is computed).
    #[inline]
    pub(crate) fn apply(&mut self, mut row: Row, kept: bool) -> Option<Fused> {
        for e in &self.extras {
            match e.eval(&row) {
                Ok(v) => row.0.push(v),
                Err(err) => {
                    self.errors
                        .record(|| format!("{}: {err}", self.computed_name));
                    return None;
                }
            }
        }
        let watermark = watermark_input(&self.watermark, &row);
        let row = if kept { self.calc.apply(row) } else { None };
        Some(Fused { watermark, row })
    }
}

/// The fused chain with its periodic watermark, emitting into the source's collector.
pub(crate) struct FusedEmitter {
    rows: FusedRows,
    watermarks: WatermarkAssignerOp<Fused, fn(&Fused) -> i64>,
}

impl FusedEmitter {
    pub(crate) fn new(plan: &FusedPlan, errors: RowErrors) -> FusedEmitter {
        let input: fn(&Fused) -> i64 = |f| f.watermark;
        FusedEmitter {
            rows: FusedRows::new(plan, errors),
            watermarks: periodic_watermark(input, plan.settings),
        }
    }

    /// One source row through the chain into `out` (the row if kept, a watermark when due).
    #[inline]
    pub(crate) fn push(
        &mut self,
        row: Row,
        kept: bool,
        out: &mut dyn Collector<Row>,
    ) -> Result<(), OperatorError> {
        match self.rows.apply(row, kept) {
            Some(f) => self.watermarks.process(f, &mut Rows(out)),
            None => Ok(()),
        }
    }
}

/// The watermark operator's output: the kept rows and every control event, into the source's
/// collector.
struct Rows<'a>(&'a mut dyn Collector<Row>);

impl Collector<Fused> for Rows<'_> {
    #[inline]
    fn collect(&mut self, f: Fused) -> Result<(), OperatorError> {
        match f.row {
            Some(r) => self.0.collect(r),
            None => Ok(()),
        }
    }

    fn emit_event(&mut self, event: ControlEvent) -> Result<(), OperatorError> {
        self.0.emit_event(event)
    }
}

/// An operator of the plan whose work the fused source did: it passes rows, watermarks and
/// idleness on (the job graph keeps Flink's operators, names and uids).
pub(crate) struct Done;

impl Operator<Row, Row> for Done {
    #[inline]
    fn process(&mut self, row: Row, out: &mut dyn Collector<Row>) -> Result<(), OperatorError> {
        out.collect(row)
    }

    #[inline]
    fn process_into(
        &mut self,
        row: Row,
        out: &mut OutputBatch<'_, Row>,
    ) -> Result<(), OperatorError> {
        out.push(row)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::calc::tests::bind;
    use crate::scan::ScanSettings;
    use sluice_sql::{DataType, Scope, Timestamp};
    use sluice_types::VecCollector;

    /// Rows, watermarks and row errors (count, kept messages).
    type Outcome = (Vec<Row>, Vec<i64>, u64, Vec<String>);

    /// The source rows: `(event_type, a, ts_a, ts_b)`, with NULLs, zeros (`100 / a` fails) and
    /// timestamps that go back and forth.
    fn source_rows() -> Vec<Row> {
        (0..5000i64)
            .map(|i| {
                let ts = |ms: i64| Value::Timestamp(Timestamp::from_millis(ms));
                let a = match i % 7 {
                    0 => Value::Null,
                    3 => Value::Int(0),
                    k => Value::Int(k + i % 5),
                };
                let ts_b = if i % 11 == 0 {
                    Value::Null
                } else {
                    ts(i * 10 - (i % 13) * 40)
                };
                Row(vec![Value::Int(i % 3), a, ts(i * 10), ts_b])
            })
            .collect()
    }

    struct Chain {
        computed: Calc,
        watermark: Expr,
        calc: Calc,
        settings: ScanSettings,
    }

    fn chain(condition: &str) -> Chain {
        let source = Scope::of(&[
            ("event_type", DataType::int()),
            ("a", DataType::bigint()),
            ("ts_a", DataType::timestamp(3)),
            ("ts_b", DataType::timestamp(3)),
        ]);
        let computed = Calc::new(
            vec![
                bind("event_type", &source),
                bind("a", &source),
                bind("CASE WHEN event_type = 0 THEN ts_a ELSE ts_b END", &source),
                bind("100 / a", &source),
            ],
            None,
        );
        let out = Scope::of(&[
            ("event_type", DataType::int()),
            ("a", DataType::bigint()),
            ("t", DataType::timestamp(3)),
            ("q", DataType::bigint()),
        ]);
        Chain {
            computed,
            watermark: bind("t - INTERVAL '1' SECOND", &out),
            calc: Calc::new(
                vec![bind("a", &out), bind("t", &out), bind("q + 1", &out)],
                Some(bind(condition, &out)),
            ),
            settings: ScanSettings {
                watermark_interval: Duration::ZERO,
                idle_timeout: None,
            },
        }
    }

    fn outcome(out: VecCollector<Row>, errors: &RowErrors) -> Outcome {
        let wms = out.watermarks.iter().map(|w| w.0).collect();
        (out.records, wms, errors.count(), errors.kept())
    }

    /// The unfused operators, one after the other.
    fn unfused(c: &Chain, rows: Vec<Row>) -> Outcome {
        let errors = RowErrors::new();
        let mut computed = CalcOp::new("C1".into(), &c.computed, errors.clone());
        let wm = CompiledExpr::new(&c.watermark);
        let mut assigner = periodic_watermark(|r: &Row| watermark_input(&wm, r), c.settings);
        let mut calc = CalcOp::new("C2".into(), &c.calc, errors.clone());
        let mut out = VecCollector::default();
        for row in rows {
            let Some(row) = computed.apply(row) else {
                continue;
            };
            let mut between = VecCollector::default();
            assigner.process(row, &mut between).unwrap();
            for r in between.records {
                out.records.extend(calc.apply(r));
            }
            out.watermarks.extend(between.watermarks);
        }
        outcome(out, &errors)
    }

    /// The fused chain; with `kind`, a row of another `event_type` holds only the columns
    /// the watermark reads, as the `nexmark` source builds it.
    fn fused(c: &Chain, rows: Vec<Row>, kind: Option<i64>) -> Outcome {
        fused_kinds(c, rows, kind.map(|k| vec![k]))
    }

    /// The fused chain keeping the rows of `kinds` (all without).
    fn fused_kinds(c: &Chain, rows: Vec<Row>, kinds: Option<Vec<i64>>) -> Outcome {
        let errors = RowErrors::new();
        let plan = FusedPlan::new(
            4,
            Some((&c.computed.projections, "C1".into())),
            &c.watermark,
            &c.calc,
            "C2".into(),
            c.settings,
        );
        let reads = plan.watermark_reads();
        let mut chain = FusedEmitter::new(&plan, errors.clone());
        let mut out = VecCollector::default();
        for mut row in rows {
            let kept = kinds
                .as_ref()
                .is_none_or(|ks| ks.iter().any(|&k| row.0[0] == Value::Int(k)));
            if !kept {
                for (i, v) in row.0.iter_mut().enumerate() {
                    if !reads.contains(&i) {
                        *v = Value::Null;
                    }
                }
            }
            chain.push(row, kept, &mut out).unwrap();
        }
        outcome(out, &errors)
    }

    #[test]
    fn fused_chain_gives_the_unfused_rows_watermarks_and_errors() {
        let c = chain("a > 1 AND event_type = 2");
        let expected = unfused(&c, source_rows());
        assert!(expected.0.len() > 100, "rows kept: {}", expected.0.len());
        assert!(expected.1.len() > 2, "watermarks: {:?}", expected.1);
        assert!(expected.2 > 100, "the computed column fails on a = 0");
        assert_eq!(fused(&c, source_rows(), None), expected);
    }

    #[test]
    fn kind_filter_builds_less_and_changes_nothing() {
        let c = chain("event_type = 2 AND q + 1 > 3");
        let plan = FusedPlan::new(
            4,
            Some((&c.computed.projections, "C1".into())),
            &c.watermark,
            &c.calc,
            "C2".into(),
            c.settings,
        );
        assert_eq!(plan.kind_filter(|col| col == 0), Some(2));
        assert_eq!(plan.kind_filter(|_| false), None);
        // The CASE reads event_type, ts_a, ts_b; `100 / a` reads a (a failing row is counted
        // whatever its kind, as the unfused computed Calc counts it).
        assert_eq!(plan.watermark_reads(), vec![0, 1, 2, 3]);
        let expected = unfused(&c, source_rows());
        assert!(!expected.0.is_empty() && expected.1.len() > 2);
        assert_eq!(fused(&c, source_rows(), Some(2)), expected);
        // Not first in the AND: a row of another kind might fail the first operand, so no
        // filter.
        let later = chain("q + 1 > 3 AND event_type = 2");
        let later = FusedPlan::new(
            4,
            Some((&later.computed.projections, "C1".into())),
            &later.watermark,
            &later.calc,
            "C2".into(),
            later.settings,
        );
        assert_eq!(later.kind_filter(|col| col == 0), None);
    }

    #[test]
    fn reused_chain_keeps_its_readers_kinds_and_changes_nothing() {
        let mut c = chain("event_type = 2");
        let out = Scope::of(&[
            ("event_type", DataType::int()),
            ("a", DataType::bigint()),
            ("t", DataType::timestamp(3)),
            ("q", DataType::bigint()),
        ]);
        // The reused chain's own Calc passes its rows on as they are.
        c.calc = Calc::new(
            ["event_type", "a", "t", "q"]
                .iter()
                .map(|col| bind(col, &out))
                .collect(),
            None,
        );
        let readers = [
            "event_type = 2 AND q + 1 > 3",
            "event_type = 0 AND a > 2",
            "event_type = 2",
        ]
        .map(|r| Some(bind(r, &out)));
        let plan = FusedPlan::new(
            4,
            Some((&c.computed.projections, "C1".into())),
            &c.watermark,
            &c.calc,
            "C2".into(),
            c.settings,
        );
        let read = plan.clone().read_by(readers.to_vec());
        assert_eq!(read.readers_kinds(|col| col == 0), Some(vec![0, 2]));
        assert_eq!(read.readers_kinds(|_| false), None);
        assert_eq!(plan.readers_kinds(|col| col == 0), None, "no readers");
        let late = readers[..1]
            .iter()
            .cloned()
            .chain([Some(bind("a > 2 AND event_type = 0", &out))]);
        let late = plan.clone().read_by(late.collect());
        assert_eq!(late.readers_kinds(|col| col == 0), None, "not first");
        let unfiltered = plan.clone().read_by(vec![readers[0].clone(), None]);
        assert_eq!(
            unfiltered.readers_kinds(|col| col == 0),
            None,
            "no condition"
        );
        // Each reader's rows, the watermarks and the errors are the unfused chain's.
        let through = |o: Outcome| {
            let errors = RowErrors::new();
            let rows: Vec<Vec<Row>> = readers
                .iter()
                .map(|r| {
                    let calc = Calc::new(c.calc.projections.clone(), r.clone());
                    let mut op = CalcOp::new("R".into(), &calc, errors.clone());
                    o.0.iter().filter_map(|row| op.apply(row.clone())).collect()
                })
                .collect();
            (rows, o.1, o.2, o.3, errors.count())
        };
        let expected = through(unfused(&c, source_rows()));
        assert!(expected.0.iter().all(|r| !r.is_empty()) && expected.1.len() > 2);
        assert!(expected.2 > 100, "the computed column fails on a = 0");
        assert_eq!(
            through(fused_kinds(&c, source_rows(), Some(vec![0, 2]))),
            expected
        );
    }

    #[test]
    fn bare_computed_columns_append_nothing() {
        let source = Scope::of(&[
            ("event_type", DataType::int()),
            ("a", DataType::bigint()),
            ("ts_a", DataType::timestamp(3)),
        ]);
        let out = Scope::of(&[
            ("event_type", DataType::int()),
            ("a", DataType::bigint()),
            ("t", DataType::timestamp(3)),
        ]);
        let computed = [
            bind("event_type", &source),
            bind("a", &source),
            bind("ts_a", &source),
        ];
        let plan = FusedPlan::new(
            3,
            Some((&computed, "C1".into())),
            &bind("t", &out),
            &Calc::new(vec![bind("a", &out)], Some(bind("t IS NOT NULL", &out))),
            "C2".into(),
            ScanSettings::default(),
        );
        // All bare: nothing appended; the watermark reads ts_a only (the source's column 2).
        assert!(plan.extras.is_empty());
        assert_eq!(plan.watermark_reads(), vec![2]);
        assert_eq!(plan.kind_filter(|_| true), None);
    }
}
