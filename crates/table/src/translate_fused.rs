//! The translator's scan fusion ([`crate::fused`]): a `Calc` over `WatermarkAssigner` over the
//! computed columns' `Calc` (or the scan itself) over a `nexmark` scan runs in the source, the
//! three operators above it kept in the job graph (names, uids) as pass-throughs.
//!
//! Only where nothing else reads the steps in between (each appears once in the plan) and the
//! expressions are the plan's own (no `SOURCE_WATERMARK()`, refused by the unfused path); a
//! program's stream or another connector keeps the operators as they are. A reused scan (q3's)
//! fuses up to its `WatermarkAssigner` when only Calcs read that ([`FusedPlan::read_by`]).

use sluice_datastream::DataStream;
use sluice_sql::plan::explain::{physical_text, Style};
use sluice_sql::plan::{operator_name, PhysicalNode, PhysicalOp};
use sluice_sql::{Expr, Result, Row, TimestampKind};

use super::{calls_source_watermark, defined_at, Translator};
use crate::calc::Calc;
use crate::connectors::nexmark::NexmarkSpec;
use crate::connectors::{self, SourceConnector};
use crate::fused::{Done, FusedPlan};
use crate::layout::Rebound;
use crate::scan::with_rowtime;

/// The nodes of a fusable chain under its top `Calc`.
struct Chain<'n> {
    watermark: &'n PhysicalNode,
    computed: Option<&'n PhysicalNode>,
    scan: &'n PhysicalNode,
}

/// The chain under `node` if its shape allows fusion.
fn chain(node: &PhysicalNode) -> Option<Chain<'_>> {
    let PhysicalOp::Calc(_) = &node.op else {
        return None;
    };
    let watermark = node.inputs.first()?;
    let PhysicalOp::WatermarkAssigner { expr, .. } = &watermark.op else {
        return None;
    };
    if calls_source_watermark(expr) {
        return None;
    }
    below(watermark)
}

/// The chain from the `WatermarkAssigner` `watermark` down to its scan, if it has that shape.
fn below(watermark: &PhysicalNode) -> Option<Chain<'_>> {
    let below = watermark.inputs.first()?;
    let (computed, scan) = match &below.op {
        PhysicalOp::Calc(c) if c.condition.is_none() => (Some(below), below.inputs.first()?),
        PhysicalOp::TableSourceScan(_) => (None, below),
        _ => return None,
    };
    match scan.op {
        PhysicalOp::TableSourceScan(_) => Some(Chain {
            watermark,
            computed,
            scan,
        }),
        _ => None,
    }
}

/// A `Calc`'s projections and condition as its rows read them (rebound to a flat layout).
fn calc_of(node: &PhysicalNode, rebound: Rebound) -> Option<(Calc, String)> {
    let PhysicalOp::Calc(c) = &node.op else {
        return None;
    };
    let (exprs, names): (Vec<Expr>, Vec<String>) = c.projection.iter().cloned().unzip();
    let planned = Calc::new(exprs, c.condition.clone());
    let name = planned.flink_name(&names);
    let exprs = planned.projections.iter().chain(&planned.condition);
    if exprs.into_iter().any(calls_source_watermark) {
        return None;
    }
    Some(match rebound {
        Rebound::Calc {
            projection,
            condition,
        } => (Calc::new(projection, condition), name),
        _ => (planned, name),
    })
}

impl Translator<'_> {
    /// `node` (a `Calc`, named `name`, its uid `uid` taken) and the chain under it fused into
    /// the source, or `None` (nothing taken) when it cannot be.
    pub(super) fn fused_chain(
        &mut self,
        node: &PhysicalNode,
        name: &str,
        uid: &str,
    ) -> Result<Option<DataStream<Row>>> {
        let Some(chain) = chain(node).filter(|_| !self.unfused) else {
            return Ok(None);
        };
        let once = |n: &PhysicalNode| self.seen.get(&physical_text(n, Style::Exec)) == Some(&1);
        if ![Some(chain.watermark), chain.computed, Some(chain.scan)]
            .into_iter()
            .flatten()
            .all(once)
        {
            return Ok(None);
        }
        let top = calc_of(node, self.rebind(node)?.rebound);
        let computed = match chain.computed {
            Some(c) => match calc_of(c, self.rebind(c)?.rebound) {
                Some(calc) => Some(calc),
                None => return Ok(None),
            },
            None => None,
        };
        let Some((top, top_name)) = top else {
            return Ok(None);
        };
        let watermark = match (self.rebind(chain.watermark)?.rebound, &chain.watermark.op) {
            (Rebound::Watermark { expr, .. }, _) => expr,
            (_, PhysicalOp::WatermarkAssigner { expr, .. }) => expr.clone(),
            _ => return Ok(None),
        };
        let Some(spec) = self.nexmark_rows(chain.scan)? else {
            return Ok(None);
        };
        // Taken in the plan's pre order, as the unfused translation takes them.
        let watermark_uid = self.uid();
        let computed_uid = chain.computed.map(|_| self.uid());
        let scan_uid = self.uid();
        let plan = FusedPlan::new(
            spec.width(),
            computed
                .as_ref()
                .map(|(c, n)| (c.projections.as_slice(), n.clone())),
            &watermark,
            &top,
            top_name,
            self.settings,
        );
        let mut rows = spec
            .fused_stream(self.env, &plan, &self.errors)
            .name(&operator_name(chain.scan))
            .uid(&scan_uid);
        let mut kept = vec![(chain.watermark, watermark_uid)];
        if let (Some(c), Some(u)) = (chain.computed, computed_uid) {
            kept.insert(0, (c, u));
        }
        for (n, u) in kept {
            let n = operator_name(n);
            rows = rows.transform(&n, |_| Done).name(&n).uid(&u);
            self.fused_uids.push(u);
        }
        self.fused_uids.push(uid.to_string());
        let rows = rows.transform(name, |_| Done).name(name).uid(uid);
        self.fused += 1;
        // The rowtime column, where the Calc keeps it, is the rows' event time.
        let layout = self.rebind(node)?.layout;
        Ok(Some(
            match node
                .schema
                .iter()
                .position(|f| f.ty.time_attribute() == TimestampKind::Rowtime)
                .and_then(|i| layout.as_ref().map_or(Some(i), |l| l.at(i)))
            {
                Some(i) => with_rowtime(rows, i),
                None => rows,
            },
        ))
    }

    /// The `nexmark` table `scan` reads, building what the plan reads of it in its layout;
    /// `None` for a program's stream or another connector.
    fn nexmark_rows(&self, scan: &PhysicalNode) -> Result<Option<NexmarkSpec>> {
        let PhysicalOp::TableSourceScan(s) = &scan.op else {
            return Ok(None);
        };
        let table = s.path.last().map(String::as_str).unwrap_or_default();
        if self.tables.get(table).is_some() {
            return Ok(None);
        }
        let def = self.table(&s.path)?;
        if connectors::takes_watermark(def) || def.option("connector") != Some("nexmark") {
            return Ok(None);
        }
        let mut source = SourceConnector::for_table(def).map_err(|e| defined_at(e, def))?;
        let key = physical_text(scan, Style::Exec);
        if let Some(read) = self.demands.get(&key) {
            source = source.pruned(read);
        }
        if let Some(l) = self.flat.layouts.get(&key) {
            let width = self.flat.widths.get(&key).copied().unwrap_or(0);
            source = source.flattened(l, width);
        }
        Ok(match source {
            SourceConnector::Nexmark(spec) => Some(spec),
            _ => None,
        })
    }

    /// The `WatermarkAssigner` `node` (its uid `uid` taken; `rowtime` and `expr` rebound) and
    /// the computed columns' `Calc` and `nexmark` scan under it fused into the source, when
    /// Calcs read it that the first fusion could not take (a reused scan: q3's `person` and
    /// `auction`), or `None` (nothing taken). The source keeps only the rows of the readers'
    /// kinds where their conditions say ([`FusedPlan::readers_kinds`]).
    pub(super) fn fused_reused(
        &mut self,
        node: &PhysicalNode,
        rowtime: usize,
        expr: &Expr,
        uid: &str,
    ) -> Result<Option<DataStream<Row>>> {
        let Some(chain) = below(node).filter(|_| !self.unfused) else {
            return Ok(None);
        };
        let Some(computed) = chain.computed else {
            return Ok(None);
        };
        let key = physical_text(node, Style::Exec);
        let count = |n: &PhysicalNode| self.seen.get(&physical_text(n, Style::Exec)).copied();
        let readers = self.readers.get(&key).cloned().unwrap_or_default();
        // Nothing but this watermark reads the computed columns and the scan, and only Calcs
        // read the watermark.
        if calls_source_watermark(expr)
            || count(computed) != count(node)
            || count(chain.scan) != count(node)
            || readers.len() != count(node).unwrap_or(0)
            || !readers.iter().all(|r| matches!(r.op, PhysicalOp::Calc(_)))
        {
            return Ok(None);
        }
        let Some((computed_calc, computed_name)) =
            calc_of(computed, self.rebind(computed)?.rebound)
        else {
            return Ok(None);
        };
        let mut conditions = Vec::with_capacity(readers.len());
        for r in &readers {
            match calc_of(r, self.rebind(r)?.rebound) {
                Some((c, _)) => conditions.push(c.condition),
                None => return Ok(None),
            }
        }
        let Some(spec) = self.nexmark_rows(chain.scan)? else {
            return Ok(None);
        };
        // The chain's own Calc passes the watermark's rows on as they are.
        let identity = Calc::new(
            computed_calc
                .projections
                .iter()
                .enumerate()
                .map(|(index, e)| Expr::Column {
                    index,
                    name: String::new(),
                    ty: e.data_type(),
                })
                .collect(),
            None,
        );
        // Taken in the plan's pre order, as the unfused translation takes them.
        let computed_uid = self.uid();
        let scan_uid = self.uid();
        let plan = FusedPlan::new(
            spec.width(),
            Some((computed_calc.projections.as_slice(), computed_name)),
            expr,
            &identity,
            String::new(),
            self.settings,
        )
        .read_by(conditions);
        let mut rows = spec
            .fused_stream(self.env, &plan, &self.errors)
            .name(&operator_name(chain.scan))
            .uid(&scan_uid);
        for (n, u) in [(computed, computed_uid.as_str()), (node, uid)] {
            let n = operator_name(n);
            rows = rows.transform(&n, |_| Done).name(&n).uid(u);
        }
        self.fused += 1;
        Ok(Some(with_rowtime(rows, rowtime)))
    }
}
