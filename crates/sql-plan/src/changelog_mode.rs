//! Flink's changelog-mode inference over a physical plan: which nodes emit updates or deletes,
//! which consumers take them, and whether updates travel as `-U`/`+U` pairs or as `+U` alone.
//!
//! Two passes, as Flink's `FlinkChangelogModeInferenceProgram` makes them:
//!
//! 1. Bottom-up, **what each node produces** and whether its consumer takes it. A scan
//!    produces insertions; `Calc`, `Exchange`, `WatermarkAssigner` and a lookup join pass their
//!    input's kinds on (and the requirement down); `Union` unites its inputs'; a `GroupAggregate`
//!    takes everything and produces updates (and deletes when its input has updates or deletes:
//!    a key's last row can be retracted). Window aggregates, interval and window joins take
//!    insertions only. A consumer given more than it takes is refused with Flink's words:
//!    `Table sink '…' doesn't support consuming update changes which is produced by node
//!    GroupAggregate(…)`.
//! 2. Top-down, **whether `-U` is needed**. A retracting consumer (another aggregate, a sink
//!    that shows every change such as `print`, a query's result) needs the old row; an upsert
//!    sink (by primary key) does not, so the aggregate below it emits `+U` alone. A filter
//!    between them needs `-U` too (Flink's FLINK-9528: `cnt < 10` over an aggregate must
//!    retract the row that stops passing).
//!
//! Pure: the plan in, the plan with its aggregates' [`PhysicalOp::GroupAggregate`] flags set (or
//! the refusal) out.

use crate::error::{Result, SqlError};
use crate::expr::Expr;
use sluice_sql_front::ChangelogMode;

use super::explain::{describe, Style};
use super::physical::{PhysicalNode, PhysicalOp};

/// What a node emits besides insertions (Flink's `ModifyKindSet` without `INSERT`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Kinds {
    /// Updates of rows emitted earlier.
    pub update: bool,
    /// Deletions of rows emitted earlier.
    pub delete: bool,
}

impl Kinds {
    /// Insertions only.
    pub const INSERT_ONLY: Kinds = Kinds {
        update: false,
        delete: false,
    };
    /// Every kind.
    pub const ALL: Kinds = Kinds {
        update: true,
        delete: true,
    };

    /// Whether only insertions flow.
    pub fn is_insert_only(self) -> bool {
        !self.update && !self.delete
    }

    fn union(self, o: Kinds) -> Kinds {
        Kinds {
            update: self.update || o.update,
            delete: self.delete || o.delete,
        }
    }

    /// What of `self` `allowed` does not take: `update`, `delete`, `update and delete`.
    fn beyond(self, allowed: Kinds) -> Option<String> {
        let mut kinds = Vec::new();
        if self.update && !allowed.update {
            kinds.push("update");
        }
        if self.delete && !allowed.delete {
            kinds.push("delete");
        }
        (!kinds.is_empty()).then(|| kinds.join(" and "))
    }
}

/// The `filesystem` sink option (Sluice's, not Flink's) that writes every row kind, each line
/// led by it (`+I`, `-U`, `+U`, `-D`): the sink then takes a changelog, `-U` included.
pub const ROW_KIND_OPTION: &str = "sluice.row-kind";

/// How a sink connector takes changes (Flink's `DynamicTableSink#getChangelogMode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SinkChanges {
    /// Insertions only (`filesystem`, `kafka`).
    InsertOnly,
    /// Every kind, `-U` included (`print`, a query's result).
    Retract,
    /// Every kind, updates as `+U` alone (`blackhole`).
    AllButUpdateBefore,
    /// By primary key: `+I`, `+U`, `-D` (`jdbc`, `upsert-kafka`); an updating query needs the key.
    Upsert,
}

impl SinkChanges {
    /// The changes a sink of these options takes (by its `connector`).
    pub fn of(options: &[(String, String)]) -> SinkChanges {
        let connector = options
            .iter()
            .find(|(k, _)| k == "connector")
            .map(|(_, v)| v.as_str());
        let option = |k: &str| {
            options
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.as_str())
        };
        match connector {
            Some("print") => SinkChanges::Retract,
            // Sluice's own capture of a changelog into files (each line led by its row kind),
            // by which `--verify` reads an updating query's answer.
            Some("filesystem")
                if option(ROW_KIND_OPTION)
                    .is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) =>
            {
                SinkChanges::Retract
            }
            Some("blackhole") => SinkChanges::AllButUpdateBefore,
            Some("jdbc" | "upsert-kafka") => SinkChanges::Upsert,
            _ => SinkChanges::InsertOnly,
        }
    }
}

/// The node's name in Flink's messages: its description up to the first parenthesis.
fn node_name(node: &PhysicalNode) -> String {
    let d = describe(node, Style::Physical);
    d.split('(').next().unwrap_or_default().to_string()
}

/// Pass 1 below `node`: what it produces, refused where a consumer is given more than it takes
/// (`allowed`, asked for by `requester`).
fn visit(node: &PhysicalNode, allowed: Kinds, requester: &str) -> Result<Kinds> {
    let produced = match &node.op {
        PhysicalOp::TableSourceScan(_) => Kinds::INSERT_ONLY,
        PhysicalOp::Calc(_)
        | PhysicalOp::Exchange(_)
        | PhysicalOp::WatermarkAssigner { .. }
        | PhysicalOp::MiniBatchAssigner { .. }
        | PhysicalOp::LookupJoin { .. } => {
            return match node.inputs.first() {
                Some(i) => visit(i, allowed, requester),
                None => Ok(Kinds::INSERT_ONLY),
            }
        }
        PhysicalOp::Union => {
            let mut k = Kinds::INSERT_ONLY;
            for i in &node.inputs {
                k = k.union(visit(i, allowed, requester)?);
            }
            return Ok(k);
        }
        PhysicalOp::LocalGroupAggregate(_) => {
            // Accumulators of insertions (the planner splits only those), not a changelog.
            let name = node_name(node);
            if let Some(i) = node.inputs.first() {
                visit(i, Kinds::INSERT_ONLY, &name)?;
            }
            Kinds::INSERT_ONLY
        }
        PhysicalOp::GlobalGroupAggregate { .. } => {
            if let Some(i) = node.inputs.first() {
                visit(i, Kinds::INSERT_ONLY, "GlobalGroupAggregate")?;
            }
            Kinds {
                update: true,
                delete: false,
            }
        }
        PhysicalOp::GroupAggregate { .. } => {
            let name = node_name(node);
            let input = match node.inputs.first() {
                Some(i) => visit(i, Kinds::ALL, &name)?,
                None => Kinds::INSERT_ONLY,
            };
            Kinds {
                update: true,
                delete: !input.is_insert_only(),
            }
        }
        PhysicalOp::Rank { .. } => {
            let name = node_name(node);
            if let Some(i) = node.inputs.first() {
                visit(i, Kinds::ALL, &name)?;
            }
            Kinds::ALL
        }
        PhysicalOp::Deduplicate {
            keep_last, rowtime, ..
        } => {
            let name = node_name(node);
            if let Some(i) = node.inputs.first() {
                visit(i, Kinds::INSERT_ONLY, &name)?;
            }
            // Only keeping the first row by processing time never revises what it emitted.
            if !keep_last && !rowtime {
                Kinds::INSERT_ONLY
            } else {
                Kinds::ALL
            }
        }
        PhysicalOp::Join(_) => {
            // An inner join forwards its inputs' changes (Flink's inference).
            let name = node_name(node);
            let mut k = Kinds::INSERT_ONLY;
            for i in &node.inputs {
                k = k.union(visit(i, Kinds::ALL, &name)?);
            }
            k
        }
        _ => {
            let name = node_name(node);
            for i in &node.inputs {
                visit(i, Kinds::INSERT_ONLY, &name)?;
            }
            Kinds::INSERT_ONLY
        }
    };
    if let Some(diff) = produced.beyond(allowed) {
        return Err(SqlError::unsupported(
            None,
            format!(
                "{requester} doesn't support consuming {diff} changes which is produced by node {}",
                describe(node, Style::Physical)
            ),
        ));
    }
    Ok(produced)
}

/// Refuses `node` if it emits anything but insertions, as a consumer named `requester` that
/// takes insertions only (Flink's words: `… doesn't support consuming update changes …`).
pub fn refuse_updates(node: &PhysicalNode, requester: &str) -> Result<()> {
    visit(node, Kinds::INSERT_ONLY, requester).map(|_| ())
}

/// What `node` produces (after [`infer`] accepted the plan).
pub fn produced(node: &PhysicalNode) -> Kinds {
    visit(node, Kinds::ALL, "").unwrap_or(Kinds::ALL)
}

/// The row kinds `node` emits, once [`infer`] set the update-before flags.
pub fn mode(node: &PhysicalNode) -> ChangelogMode {
    match &node.op {
        PhysicalOp::GroupAggregate {
            update_before,
            retract,
            ..
        } => ChangelogMode {
            update_after: true,
            update_before: *update_before,
            delete: *retract,
        },
        PhysicalOp::GlobalGroupAggregate { update_before, .. } => ChangelogMode {
            update_after: true,
            update_before: *update_before,
            delete: false,
        },
        PhysicalOp::Rank { update_before, .. } => ChangelogMode {
            update_after: true,
            update_before: *update_before,
            delete: true,
        },
        PhysicalOp::Deduplicate {
            keep_last,
            rowtime,
            update_before,
            ..
        } => {
            if !keep_last && !rowtime {
                ChangelogMode::INSERT_ONLY
            } else {
                // Flink declares every kind (it never emits `-D` here, but says it may).
                ChangelogMode {
                    update_after: true,
                    update_before: *update_before,
                    delete: true,
                }
            }
        }
        PhysicalOp::Calc(_)
        | PhysicalOp::Exchange(_)
        | PhysicalOp::WatermarkAssigner { .. }
        | PhysicalOp::MiniBatchAssigner { .. }
        | PhysicalOp::LookupJoin { .. } => node
            .inputs
            .first()
            .map(mode)
            .unwrap_or(ChangelogMode::INSERT_ONLY),
        PhysicalOp::Union => {
            node.inputs
                .iter()
                .map(mode)
                .fold(ChangelogMode::INSERT_ONLY, |a, b| ChangelogMode {
                    update_after: a.update_after || b.update_after,
                    update_before: a.update_before || b.update_before,
                    delete: a.delete || b.delete,
                })
        }
        _ => ChangelogMode::INSERT_ONLY,
    }
}

/// Pass 2: sets each aggregate's `update_before` (whether its consumers need `-U`) and
/// `retract` (whether its input has updates or deletes).
fn set_update_before(node: &mut PhysicalNode, needed: bool) {
    let carries_updates = produced(node).update;
    match &mut node.op {
        PhysicalOp::GroupAggregate {
            update_before,
            retract,
            ..
        } => {
            *update_before = needed;
            *retract = node
                .inputs
                .first()
                .is_some_and(|i| !produced(i).is_insert_only());
            for i in &mut node.inputs {
                set_update_before(i, true);
            }
        }
        PhysicalOp::Rank {
            update_before,
            retract,
            ..
        } => {
            *update_before = needed;
            *retract = node
                .inputs
                .first()
                .is_some_and(|i| !produced(i).is_insert_only());
            for i in &mut node.inputs {
                set_update_before(i, true);
            }
        }
        PhysicalOp::GlobalGroupAggregate { update_before, .. } => {
            *update_before = needed;
            for i in &mut node.inputs {
                set_update_before(i, false);
            }
        }
        PhysicalOp::Join(_) => {
            // Each side's retractions name the exact rows they take out.
            for i in &mut node.inputs {
                set_update_before(i, true);
            }
        }
        PhysicalOp::Deduplicate { update_before, .. } => {
            *update_before = needed;
            for i in &mut node.inputs {
                set_update_before(i, false);
            }
        }
        PhysicalOp::Calc(c) => {
            let needed = needed || (c.condition.is_some() && carries_updates);
            for i in &mut node.inputs {
                set_update_before(i, needed);
            }
        }
        PhysicalOp::Exchange(_)
        | PhysicalOp::WatermarkAssigner { .. }
        | PhysicalOp::MiniBatchAssigner { .. }
        | PhysicalOp::LookupJoin { .. }
        | PhysicalOp::Union => {
            for i in &mut node.inputs {
                set_update_before(i, needed);
            }
        }
        _ => {
            for i in &mut node.inputs {
                set_update_before(i, false);
            }
        }
    }
}

/// The columns of `node`'s output that identify a row of its changelog (Flink's upsert key):
/// an aggregate's keys, carried through projections that keep them as they are.
pub fn upsert_key(node: &PhysicalNode) -> Option<Vec<usize>> {
    match &node.op {
        PhysicalOp::GroupAggregate { agg, .. } | PhysicalOp::GlobalGroupAggregate { agg, .. } => {
            Some((0..agg.group.len()).collect())
        }
        PhysicalOp::Deduplicate { keys, .. } => Some(keys.clone()),
        PhysicalOp::Rank { rank, .. } => {
            let mut k = rank.partition.clone();
            if rank.output_rank {
                k.push(node.schema.len() - 1);
            } else if rank.end != Some(1) {
                return None;
            }
            Some(k)
        }
        PhysicalOp::Calc(c) => {
            let below = upsert_key(node.inputs.first()?)?;
            below
                .iter()
                .map(|k| {
                    c.projection
                        .iter()
                        .position(|(e, _)| matches!(e, Expr::Column { index, .. } if index == k))
                })
                .collect()
        }
        PhysicalOp::Exchange(_) | PhysicalOp::WatermarkAssigner { .. } => {
            upsert_key(node.inputs.first()?)
        }
        _ => None,
    }
}

/// Infers the changelog modes of one planned tree: a sink's (or, without a sink, a query's
/// result, which shows every change) consumers checked, the aggregates' flags set.
pub fn infer(root: &mut PhysicalNode) -> Result<()> {
    let (query, needed) = match &root.op {
        PhysicalOp::Sink(s) => {
            let takes = SinkChanges::of(&s.options);
            let name = format!("Table sink '{}'", s.full_name());
            let allowed = if takes == SinkChanges::InsertOnly {
                Kinds::INSERT_ONLY
            } else {
                Kinds::ALL
            };
            let Some(input) = root.inputs.first() else {
                return Ok(());
            };
            let produced = visit(input, allowed, &name)?;
            if takes == SinkChanges::Upsert && !produced.is_insert_only() {
                let columns: Vec<&str> = s.columns.iter().map(|(n, _)| n.as_str()).collect();
                check_upsert_key(input, &columns, &s.primary_key, &name)?;
            }
            (input, takes == SinkChanges::Retract)
        }
        _ => {
            visit(root, Kinds::ALL, "the query's result")?;
            (&*root, true)
        }
    };
    let _ = query;
    match root.op {
        PhysicalOp::Sink(_) => {
            for i in &mut root.inputs {
                set_update_before(i, needed);
            }
        }
        _ => set_update_before(root, needed),
    }
    Ok(())
}

/// An upsert sink of an updating query: its primary key must be the query's upsert key, so
/// that each key's changes overwrite one row (Flink adds a `SinkUpsertMaterializer` otherwise,
/// which Sluice does not run: refused rather than written wrong).
fn check_upsert_key(
    input: &PhysicalNode,
    columns: &[&str],
    primary_key: &[String],
    sink: &str,
) -> Result<()> {
    if primary_key.is_empty() {
        return Err(SqlError::validation(
            None,
            format!("{sink}: please declare primary key for sink table when query contains update/delete record."),
        ));
    }
    // The key's columns by position: the query's columns are written into the sink's in order.
    let names: Vec<&str> = input.schema.iter().map(|f| f.name.as_str()).collect();
    let pk: Option<Vec<usize>> = primary_key
        .iter()
        .map(|k| columns.iter().position(|n| n == k))
        .collect();
    let key = upsert_key(input);
    let same = match (&pk, &key) {
        (Some(p), Some(k)) => {
            let (mut p, mut k) = (p.clone(), k.clone());
            p.sort_unstable();
            k.sort_unstable();
            p == k
        }
        _ => false,
    };
    if same {
        return Ok(());
    }
    let key_text = match &key {
        Some(k) => format!(
            "({})",
            k.iter()
                .map(|&i| names.get(i).copied().unwrap_or("?"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        None => "none Sluice can derive".into(),
    };
    Err(SqlError::unsupported(
        None,
        format!(
            "{sink}: its primary key ({}) is not the upsert key of the query's changes {key_text}; \
             Flink would add a SinkUpsertMaterializer, which this version does not run",
            primary_key.join(", ")
        ),
    ))
}
