//! Rules for a skewed bottleneck: a few subtasks busy, their siblings much less so.

use super::{Breakdown, Finding};
use crate::{pct, Cause, FixProposal, HotKey, PlanChange, ShipStrategy};

/// Evidence shared by the skew rules: the hot subtasks against their siblings, and their share
/// of the records.
pub(super) fn shape_evidence(b: &Breakdown) -> Vec<String> {
    let subtask_list = b
        .hot
        .iter()
        .map(|i| format!("{}/{}", i + 1, b.p))
        .collect::<Vec<_>>()
        .join(", ");
    let mut evidence = vec![format!(
        "subtask(s) ({subtask_list}) busy {}, their {} sibling(s) busy {} / idle {}",
        pct(b.hot_busy),
        b.others.len(),
        pct(b.others_busy),
        pct(b.others_idle)
    )];
    if let Some(share) = b.hot_share {
        evidence.push(format!(
            "they receive {:.0}% of the vertex's records ({:.0}/s of {:.0}/s)",
            share * 100.0,
            b.hot_rate,
            b.total_rate
        ));
    }
    evidence
}

/// 0.7, plus 0.1 when the hot subtasks get clearly more than their even share of the records.
fn base_confidence(b: &Breakdown) -> f64 {
    let mut confidence = 0.7;
    if let Some(share) = b.hot_share {
        if share > b.hot.len() as f64 / b.p as f64 + 0.1 {
            confidence += 0.1;
        }
    }
    confidence
}

/// Behind a HASH edge: hot keys. Raising the parallelism cannot help (a key's records all go to
/// one subtask); a two-phase aggregation salts the hot keys.
pub(super) fn key_skew(b: &Breakdown) -> Option<Finding> {
    if !b.keyed {
        return None;
    }
    let (v, p) = (b.v, b.p);
    let mut confidence = base_confidence(b);
    let mut evidence = Vec::new();
    let mut undetermined = Vec::new();
    let keys: Vec<HotKey> = v
        .hot_keys
        .iter()
        .flatten()
        .filter(|k| k.share >= 0.05)
        .take(5)
        .cloned()
        .collect();
    match &v.hot_keys {
        None => undetermined.push("hot keys: not reported by this server".to_string()),
        Some(_) if keys.is_empty() => evidence.push(
            "no single key reaches 5% of the records: many warm keys share the hot subtask(s)"
                .to_string(),
        ),
        Some(_) => {
            confidence += 0.1;
            for k in &keys {
                evidence.push(format!(
                    "key `{}` carries {:.0}% of the vertex's records",
                    k.key,
                    k.share * 100.0
                ));
            }
        }
    }
    evidence.push(
        "raising the parallelism will not help: every record of a key goes to the one subtask \
         that owns its key group"
            .to_string(),
    );
    // The skew enters through the HASH input, i.e. at the chain's head (the keyed operator):
    // that is what to split, whichever chained operator spends the most time on the hot
    // subtask's records.
    let target = b.first_op.clone().unwrap_or_else(|| v.name.clone());
    let buckets = ((4 * p) as u32).next_power_of_two().max(16);
    let key_text = if keys.is_empty() {
        "the hot keys".to_string()
    } else {
        keys.iter()
            .map(|k| format!("`{}`", k.key))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let fix = FixProposal {
        description: format!(
            "salt {key_text}: pre-aggregate on (key, salt) over {buckets} buckets, then combine \
             per key (same results, the hot key's records spread over all subtasks)"
        ),
        change: format!("two-phase aggregation on `{target}` with {buckets} buckets"),
        plan_change: Some(PlanChange::TwoPhase {
            operator: target.clone(),
            buckets,
        }),
    };
    let gain = b.hot_share.map(|s| s * p as f64).filter(|g| *g > 1.0);
    let effect = match gain {
        Some(g) => format!(
            "the load spreads evenly over the {p} subtasks: up to {g:.1}x the throughput, the \
             hot subtask's busy time falling toward {}",
            pct(b.hot_busy / g)
        ),
        None => format!("the load spreads evenly over the {p} subtasks"),
    };
    let mut finding = Finding::new(
        Cause::KeySkew { hot_keys: keys },
        confidence.min(0.95),
        evidence,
        Some(fix),
        effect,
    );
    finding.operator = Some(target);
    finding.undetermined = undetermined;
    Some(finding)
}

/// Behind a non-keyed edge: the upstream wiring spreads records unevenly; REBALANCE spreads
/// them round-robin. Always matches a skewed breakdown.
pub(super) fn uneven_load(b: &Breakdown) -> Finding {
    let v = b.v;
    if v.is_source && v.ship_strategies.is_empty() {
        // A source has no input to rewire: its subtasks read unequal shares of the input's
        // splits (some read none).
        return Finding::new(
            Cause::UnevenLoad,
            base_confidence(b).min(0.95),
            vec![
                "a source's subtasks read unequal shares of its input's splits (files, \
                 partitions): the busy ones read more, the idle ones little or nothing"
                    .to_string(),
            ],
            Some(FixProposal {
                description: "split the input more evenly (more, equal partitions or files); \
                              more subtasks cannot read a split together"
                    .to_string(),
                change: "more, evenly sized splits of the source's input".to_string(),
                plan_change: None,
            }),
            "every source subtask reads an equal share".to_string(),
        );
    }
    let evidence = vec![format!(
        "its input is {} (not keyed): records are unevenly spread by the upstream wiring",
        v.ship_strategies.join(", ")
    )];
    let target = b.first_op.clone().unwrap_or_else(|| v.name.clone());
    let fix = FixProposal {
        description: "spread records round-robin over all subtasks".to_string(),
        change: format!("feed `{target}` through REBALANCE at parallelism {}", b.p),
        plan_change: Some(PlanChange::Parallelism {
            operator: target,
            parallelism: b.p,
            ship: ShipStrategy::Rebalance,
        }),
    };
    Finding::new(
        Cause::UnevenLoad,
        base_confidence(b).min(0.95),
        evidence,
        Some(fix),
        "every subtask gets an equal share of the records".to_string(),
    )
}
