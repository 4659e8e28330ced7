//! Flink's `Calc`: a projection (one expression per output column) and an optional condition,
//! over rows.
//!
//! The expressions are compiled when the operator starts (`sluice_sql::compiled`: operands read
//! in place, the condition answered as a `bool`, the tree walk only where nothing is faster).
//! Per row: the condition first (a row for which it is not TRUE is dropped); then the computed
//! projections, into a scratch buffer the operator keeps (no allocation per row); then the
//! output row takes the computed values and moves the input's columns that are projected bare
//! exactly once (cloning only a column projected twice), and likewise the
//! fields of a `ROW` column projected as `column.field` (`bid.price`, as the Nexmark views
//! read the `datagen` table): moved out of the `ROW` when no other projection reads that
//! column bare or that field again and the `ROW` is not shared, cloned otherwise. A row whose
//! evaluation fails (a cast that cannot hold, a division by zero) is counted in [`RowErrors`]
//! with its error and dropped — Sluice's rule for malformed records; Flink fails the job.
//!
//! The output row is built in a spare vector and the input row's vector becomes the next spare,
//! so a Calc that does not widen its rows allocates nothing per row. Repeated deterministic
//! subexpressions are computed once per row (`calc_shared`), only where the plain evaluation
//! would certainly have computed them.

use sluice_datastream::DataStream;
use sluice_sql::{Change, CompiledExpr, CompiledPredicate, DataType, Expr, Row, Value};
use sluice_types::{Collector, Operator, OperatorError, OutputBatch};

use crate::calc_shared::{share, Shared};
use crate::row_errors::RowErrors;

/// A projection and an optional condition, both over the input row.
#[derive(Clone, Debug)]
pub struct Calc {
    /// One expression per output column.
    pub projections: Vec<Expr>,
    /// Rows for which this is not TRUE are dropped.
    pub condition: Option<Expr>,
}

impl Calc {
    /// A Calc of these projections and condition.
    pub fn new(projections: Vec<Expr>, condition: Option<Expr>) -> Calc {
        Calc {
            projections,
            condition,
        }
    }

    /// The output columns' types.
    pub fn output_types(&self) -> Vec<DataType> {
        self.projections.iter().map(Expr::data_type).collect()
    }

    /// Flink's operator name: `Calc(select=[auction, price], where=[=(MOD(auction, 123), 0)])`,
    /// a projection that is not its output's name written `expr AS name`.
    pub fn flink_name(&self, output_names: &[String]) -> String {
        let select: Vec<String> = self
            .projections
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let text = e.to_string();
                match output_names.get(i) {
                    Some(n) if *n != text => format!("{text} AS {n}"),
                    _ => text,
                }
            })
            .collect();
        match &self.condition {
            Some(c) => format!("Calc(select=[{}], where=[{c}])", select.join(", ")),
            None => format!("Calc(select=[{}])", select.join(", ")),
        }
    }
}

/// Where an output column comes from.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Slot {
    /// Input column moved out (projected bare exactly once).
    Move(usize),
    /// Input column cloned (projected bare more than once).
    Clone(usize),
    /// Field `.1` of the `ROW` input column `.0`: moved out when `.2` (the only reader of that
    /// field, and the column is not projected bare), else cloned.
    Field(usize, usize, bool),
    /// The `k`-th computed projection.
    Eval(usize),
}

/// The Calc as an operator (also run inside a fused scan, [`crate::fused`]).
pub(crate) struct CalcOp {
    name: String,
    slots: Vec<Slot>,
    /// The projections that are computed, compiled.
    computed: Vec<CompiledExpr>,
    condition: Option<CompiledPredicate>,
    /// Common subexpressions, computed once per row into columns after the input's: the row's
    /// width, and the slots before and after the condition, compiled.
    shared: Option<(Shared, Vec<CompiledExpr>, Vec<CompiledExpr>)>,
    scratch: Vec<Value>,
    /// An empty vector with room, for the next output row.
    spare: Vec<Value>,
    errors: RowErrors,
}

impl CalcOp {
    pub(crate) fn new(name: String, calc: &Calc, errors: RowErrors) -> CalcOp {
        let bare = |e: &Expr| match e {
            Expr::Column { index, .. } => Some(*index),
            _ => None,
        };
        let field = |e: &Expr| match e {
            Expr::Field { expr, index, .. } => bare(expr).map(|c| (c, *index)),
            _ => None,
        };
        let shared = share(&calc.projections, calc.condition.as_ref());
        let (p, condition) = match &shared {
            Some(s) => (&s.projections, s.condition.clone()),
            None => (&calc.projections, calc.condition.clone()),
        };
        let bare_uses = |j: usize| p.iter().filter(|e| bare(e) == Some(j)).count();
        let mut computed = Vec::new();
        let slots = p
            .iter()
            .map(|e| match (bare(e), field(e)) {
                // A column read for a field too is cloned, so the field is still there.
                (Some(j), _)
                    if bare_uses(j) == 1
                        && !p.iter().any(|e| field(e).is_some_and(|(c, _)| c == j)) =>
                {
                    Slot::Move(j)
                }
                (Some(j), _) => Slot::Clone(j),
                (None, Some((c, f))) => {
                    let readers = p.iter().filter(|e| field(e) == Some((c, f))).count();
                    Slot::Field(c, f, readers == 1 && bare_uses(c) == 0)
                }
                (None, None) => {
                    computed.push(CompiledExpr::new(e));
                    Slot::Eval(computed.len() - 1)
                }
            })
            .collect();
        let compile = |exprs: &[Expr]| exprs.iter().map(CompiledExpr::new).collect::<Vec<_>>();
        CalcOp {
            name,
            slots,
            scratch: Vec::with_capacity(computed.len()),
            spare: Vec::new(),
            computed,
            condition: condition.as_ref().map(CompiledPredicate::new),
            shared: shared.map(|s| {
                let (before, after) = (compile(&s.before), compile(&s.after));
                (s, before, after)
            }),
            errors,
        }
    }

    /// Computes the common subexpressions of one phase into the row; `false` (counted) if one
    /// failed.
    #[inline]
    fn slots(&self, row: &mut Row, exprs: &[CompiledExpr]) -> bool {
        for e in exprs {
            match e.eval(row) {
                Ok(v) => row.0.push(v),
                Err(err) => {
                    self.errors.record(|| format!("{}: {err}", self.name));
                    return false;
                }
            }
        }
        true
    }

    /// The output row, or `None` when the row is filtered out or failed.
    #[inline]
    pub(crate) fn apply(&mut self, mut row: Row) -> Option<Row> {
        if let Some((s, before, _)) = &self.shared {
            s.prepare(&mut row);
            if !self.slots(&mut row, before) {
                return None;
            }
        }
        if let Some(c) = &self.condition {
            match c.holds(&row) {
                Ok(true) => {}
                Ok(false) => return None,
                Err(e) => {
                    self.errors.record(|| format!("{}: {e}", self.name));
                    return None;
                }
            }
        }
        if let Some((_, _, after)) = &self.shared {
            if !self.slots(&mut row, after) {
                return None;
            }
        }
        self.scratch.clear();
        for e in &self.computed {
            match e.eval(&row) {
                Ok(v) => self.scratch.push(v),
                Err(err) => {
                    self.errors.record(|| format!("{}: {err}", self.name));
                    return None;
                }
            }
        }
        let mut computed = self.scratch.drain(..);
        // The output goes into the spare vector when it has room, and the input's vector,
        // emptied, is the next row's spare when it has: no allocation per row when the output
        // is not wider than the input (a widening Calc allocates its row, as it must).
        let width = self.slots.len();
        let mut out = if self.spare.capacity() >= width {
            std::mem::take(&mut self.spare)
        } else {
            Vec::with_capacity(width)
        };
        for slot in &self.slots {
            out.push(match *slot {
                Slot::Move(j) => row
                    .0
                    .get_mut(j)
                    .map_or(Value::Null, |v| std::mem::replace(v, Value::Null)),
                Slot::Clone(j) => row.get(j).clone(),
                Slot::Field(c, f, take) => field_of(&mut row, c, f, take),
                Slot::Eval(_) => computed.next().unwrap_or(Value::Null),
            });
        }
        drop(computed);
        std::mem::swap(&mut row.0, &mut out);
        if out.capacity() >= width {
            out.clear();
            self.spare = out;
        }
        Some(row)
    }
}

/// Field `f` of the `ROW` column `c` (NULL when the column is NULL, as `c.f` evaluates): moved
/// out with `take` when the `ROW` is not shared, else cloned.
#[inline]
fn field_of(row: &mut Row, c: usize, f: usize, take: bool) -> Value {
    let Some(Value::Row(fields)) = row.0.get_mut(c) else {
        return Value::Null;
    };
    if take {
        if let Some(fields) = std::sync::Arc::get_mut(fields) {
            return fields
                .get_mut(f)
                .map_or(Value::Null, |v| std::mem::replace(v, Value::Null));
        }
    }
    fields.get(f).cloned().unwrap_or(Value::Null)
}

impl Operator<Row, Row> for CalcOp {
    #[inline]
    fn process(&mut self, row: Row, out: &mut dyn Collector<Row>) -> Result<(), OperatorError> {
        match self.apply(row) {
            Some(r) => out.collect(r),
            None => Ok(()),
        }
    }

    #[inline]
    fn process_into(
        &mut self,
        row: Row,
        out: &mut OutputBatch<'_, Row>,
    ) -> Result<(), OperatorError> {
        match self.apply(row) {
            Some(r) => out.push(r),
            None => Ok(()),
        }
    }
}

/// Adds `calc` after `input`, named as Flink names it ([`Calc::flink_name`]); failed rows are
/// counted in `errors`. The output has no event-time reader: set it on the rowtime column with
/// [`crate::scan::with_rowtime`] if the projection keeps one.
pub fn calc(
    input: &DataStream<Row>,
    calc: &Calc,
    output_names: &[String],
    errors: &RowErrors,
) -> DataStream<Row> {
    calc_named(input, calc, &calc.flink_name(output_names), errors)
}

/// [`calc()`] named `name` (a Calc rebound to a flat scan's rows keeps its plan's name).
pub fn calc_named(
    input: &DataStream<Row>,
    calc: &Calc,
    name: &str,
    errors: &RowErrors,
) -> DataStream<Row> {
    let (c, errors, op_name) = (calc.clone(), errors.clone(), name.to_string());
    input.transform(name, move |_| {
        CalcOp::new(op_name.clone(), &c, errors.clone())
    })
}

/// A Calc over a changelog: each change's row projected and filtered, its kind kept (a row
/// the condition drops is dropped whatever its kind: the consumer then sees neither its `+U`
/// nor its `-U`, which is why a filter over updates needs `-U`, see `changelog_mode`).
struct ChangeCalcOp(CalcOp);

impl Operator<Change, Change> for ChangeCalcOp {
    #[inline]
    fn process(&mut self, c: Change, out: &mut dyn Collector<Change>) -> Result<(), OperatorError> {
        match self.0.apply(c.row) {
            Some(row) => out.collect(Change { kind: c.kind, row }),
            None => Ok(()),
        }
    }
}

/// [`calc_named`] over a changelog.
pub fn calc_changes(
    input: &DataStream<Change>,
    calc: &Calc,
    name: &str,
    errors: &RowErrors,
) -> DataStream<Change> {
    let (c, errors, op_name) = (calc.clone(), errors.clone(), name.to_string());
    input.transform(name, move |_| {
        ChangeCalcOp(CalcOp::new(op_name.clone(), &c, errors.clone()))
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use sluice_sql::{bind_expr, BindContext, FunctionRegistry, Scope};
    use sluice_types::VecCollector;

    /// `text` bound over `scope` (shared by the Calc's tests).
    pub(crate) fn bind(text: &str, scope: &Scope) -> Expr {
        let f = FunctionRegistry::builtins();
        let ast = sqlparser::parser::Parser::new(&sluice_sql::dialect::FlinkDialect)
            .try_with_sql(text)
            .unwrap()
            .parse_expr()
            .unwrap();
        bind_expr(&ast, scope, &BindContext::new(&f)).unwrap()
    }

    #[test]
    fn filters_projects_and_counts_failures() {
        let scope = Scope::of(&[("a", DataType::bigint()), ("s", DataType::string())]);
        let c = Calc::new(
            vec![
                bind("s", &scope),
                bind("a * 2", &scope),
                bind("10 / a", &scope),
            ],
            Some(bind("MOD(a, 2) = 0", &scope)),
        );
        assert_eq!(
            c.flink_name(&["s".into(), "x".into(), "y".into()]),
            "Calc(select=[s, *(a, 2) AS x, /(10, a) AS y], where=[=(MOD(a, 2), 0)])"
        );
        let errors = RowErrors::new();
        let mut op = CalcOp::new("Calc".into(), &c, errors.clone());
        let mut out = VecCollector::default();
        for a in [1i64, 2, 0] {
            op.process(Row(vec![Value::Int(a), Value::str("t")]), &mut out)
                .unwrap();
        }
        assert_eq!(
            out.records,
            vec![Row(vec![Value::str("t"), Value::Int(4), Value::Int(5)])]
        );
        assert_eq!(errors.count(), 1, "10 / 0 is a dead letter");
    }

    #[test]
    fn fields_of_a_row_column_are_moved_or_cloned_as_other_projections_need() {
        let bid = DataType::new(sluice_sql::LogicalType::Row(vec![
            sluice_sql::RowField {
                name: "auction".into(),
                ty: DataType::bigint(),
            },
            sluice_sql::RowField {
                name: "extra".into(),
                ty: DataType::string(),
            },
        ]));
        let scope = Scope::of(&[("t", DataType::int()), ("bid", bid)]);
        let row = |shared: Option<&mut Vec<Value>>| {
            let fields: std::sync::Arc<[Value]> = vec![Value::Int(7), Value::str("x")].into();
            if let Some(keep) = shared {
                keep.push(Value::Row(fields.clone()));
            }
            Row(vec![Value::Int(2), Value::Row(fields)])
        };
        let run = |projections: &[&str], input: Row| {
            let c = Calc::new(projections.iter().map(|p| bind(p, &scope)).collect(), None);
            let mut op = CalcOp::new("Calc".into(), &c, RowErrors::new());
            let mut out = VecCollector::default();
            op.process(input, &mut out).unwrap();
            out.records
        };
        let bid_row = Value::Row(vec![Value::Int(7), Value::str("x")].into());
        // Moved: each field read once, the column not projected bare.
        assert_eq!(
            run(&["bid.extra", "bid.auction", "t"], row(None)),
            vec![Row(vec![Value::str("x"), Value::Int(7), Value::Int(2)])]
        );
        // A field read twice, and the column projected bare after its fields: cloned, so
        // every reader gets the value whatever the order.
        assert_eq!(
            run(&["bid.extra", "bid.extra", "bid"], row(None)),
            vec![Row(vec![Value::str("x"), Value::str("x"), bid_row.clone()])]
        );
        assert_eq!(
            run(&["bid", "bid.auction"], row(None)),
            vec![Row(vec![bid_row.clone(), Value::Int(7)])]
        );
        // A ROW shared with someone else is read, never emptied.
        let mut kept = Vec::new();
        assert_eq!(
            run(&["bid.auction"], row(Some(&mut kept))),
            vec![Row(vec![Value::Int(7)])]
        );
        assert_eq!(kept, vec![bid_row]);
        // A NULL ROW's fields are NULL.
        assert_eq!(
            run(&["bid.auction", "t"], Row(vec![Value::Int(0), Value::Null])),
            vec![Row(vec![Value::Null, Value::Int(0)])]
        );
    }
}
