//! Why the bottleneck is busy: an ordered list of small rules over the bottleneck's
//! [`Breakdown`], evaluated in order, the first that matches wins.
//!
//! The breakdown has one of two shapes. **Skewed**: a few subtasks do the work while their
//! siblings idle ([`skew`]: key skew behind a HASH edge, else uneven load). **Uniform**: the busy
//! subtasks are alike ([`uniform`]: stalls, blocking calls, state access, source ceiling, sink
//! limit, else under-provisioned). Before both come the rules on connector facts
//! ([`connectors`]: a partitioned source at its partitions, a sink waiting on its system). Each shape has a last rule that always matches, so every
//! bottleneck gets a cause. The shape also contributes the evidence lines its rules share.

mod breakdown;
mod connectors;
mod jvm;
mod skew;
mod uniform;

pub(crate) use breakdown::Breakdown;

use crate::{Cause, Diagnosis, FixProposal, JobView, Snapshot};

/// The two shapes of a bottleneck's breakdown; each rule applies to one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    Skewed,
    Uniform,
}

/// What a rule concludes: the cause with its confidence, the evidence lines behind it, the fix
/// and its expected effect.
pub(crate) struct Finding {
    pub cause: Cause,
    /// 0..=1.
    pub confidence: f64,
    /// The rule's own lines (after the context and the shape's lines).
    pub evidence: Vec<String>,
    pub fix: Option<FixProposal>,
    pub effect: String,
    /// The operator the finding points at when it is not the one the time breakdown named
    /// (key skew names the keyed operator heading the chain).
    pub operator: Option<String>,
    /// What the rule could not determine from the data.
    pub undetermined: Vec<String>,
    /// A partitioned source's splits, when the rule is about them.
    pub source_splits: Option<crate::SourceSplits>,
}

impl Finding {
    pub fn new(
        cause: Cause,
        confidence: f64,
        evidence: Vec<String>,
        fix: Option<FixProposal>,
        effect: String,
    ) -> Finding {
        Finding {
            cause,
            confidence,
            evidence,
            fix,
            effect,
            operator: None,
            undetermined: Vec::new(),
            source_splits: None,
        }
    }
}

/// One rule: the cause it looks for (its [`Cause::name`]), the shape it applies to, and the
/// check, which returns a finding when the breakdown shows that cause.
pub(crate) struct Rule {
    pub cause: &'static str,
    pub shape: Shape,
    pub check: fn(&Breakdown) -> Option<Finding>,
}

/// Every rule, in the order they are tried.
pub(crate) const RULES: [Rule; 14] = [
    Rule {
        cause: "source-ceiling",
        shape: Shape::Skewed,
        check: connectors::partition_ceiling,
    },
    Rule {
        cause: "key-skew",
        shape: Shape::Skewed,
        check: skew::key_skew,
    },
    Rule {
        cause: "uneven-load",
        shape: Shape::Skewed,
        check: |b| Some(skew::uneven_load(b)),
    },
    Rule {
        cause: "source-ceiling",
        shape: Shape::Uniform,
        check: connectors::partition_ceiling,
    },
    Rule {
        cause: "gc-stalls",
        shape: Shape::Uniform,
        check: jvm::gc_stalls,
    },
    Rule {
        cause: "stalls",
        shape: Shape::Uniform,
        check: uniform::stalls,
    },
    Rule {
        cause: "sink-limit",
        shape: Shape::Uniform,
        check: connectors::waiting_sink,
    },
    Rule {
        cause: "blocking-calls",
        shape: Shape::Uniform,
        check: uniform::blocking_calls,
    },
    Rule {
        cause: "state-access",
        shape: Shape::Uniform,
        check: uniform::state_access,
    },
    Rule {
        cause: "serialization",
        shape: Shape::Uniform,
        check: uniform::serialization,
    },
    Rule {
        cause: "source-ceiling",
        shape: Shape::Uniform,
        check: uniform::source_ceiling,
    },
    Rule {
        cause: "source-ceiling",
        shape: Shape::Uniform,
        check: uniform::busy_source_chain,
    },
    Rule {
        cause: "sink-limit",
        shape: Shape::Uniform,
        check: uniform::sink_limit,
    },
    Rule {
        cause: "under-provisioned",
        shape: Shape::Uniform,
        check: |b| Some(uniform::under_provisioned(b)),
    },
];

impl Breakdown<'_> {
    pub fn shape(&self) -> Shape {
        if self.skewed {
            Shape::Skewed
        } else {
            Shape::Uniform
        }
    }
}

/// Classifies the bottleneck `vi` with its busy subtasks `hot`: context evidence, the shape's
/// evidence, then the first matching rule's finding.
pub(crate) fn classify(
    job: &JobView,
    vi: usize,
    hot: Vec<usize>,
    samples: &[Snapshot],
    mut evidence: Vec<String>,
    mut undetermined: Vec<String>,
) -> Diagnosis {
    let b = Breakdown::new(job, vi, hot, samples);
    let shape = b.shape();
    evidence.extend(b.context_evidence());
    evidence.extend(match shape {
        Shape::Skewed => skew::shape_evidence(&b),
        Shape::Uniform => uniform::shape_evidence(&b),
    });
    let finding = RULES
        .iter()
        .filter(|r| r.shape == shape)
        .find_map(|r| {
            let f = (r.check)(&b)?;
            debug_assert_eq!(
                f.cause.name(),
                r.cause,
                "a rule finds the cause it is named after"
            );
            Some(f)
        })
        // Unreachable (each shape's last rule always matches), but total rather than a panic.
        .unwrap_or_else(|| match shape {
            Shape::Skewed => skew::uneven_load(&b),
            Shape::Uniform => uniform::under_provisioned(&b),
        });
    if b.operator_from_profile() {
        // Flink reports no time per operator; the flame graph's frames named it instead.
        for u in undetermined
            .iter_mut()
            .filter(|u| u.starts_with("time per chained operator"))
        {
            *u = "time per chained operator: not reported; the operator inside the chain is \
                  named from the flame graph's frames"
                .to_string();
        }
    }
    let mut bottleneck = b.bottleneck();
    if let Some(op) = finding.operator {
        if bottleneck.operator.as_ref() != Some(&op) {
            bottleneck.operator_share = None;
        }
        bottleneck.operator = Some(op);
    }
    evidence.extend(finding.evidence);
    undetermined.extend(finding.undetermined);
    Diagnosis {
        bottleneck: Some(bottleneck),
        cause: finding.cause,
        confidence: finding.confidence,
        evidence,
        fix: finding.fix,
        expected_effect: finding.effect,
        undetermined,
        source_splits: finding.source_splits,
        lag: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_shape_ends_with_a_rule_that_always_matches() {
        for shape in [Shape::Skewed, Shape::Uniform] {
            let last = RULES.iter().rfind(|r| r.shape == shape).map(|r| r.cause);
            let expected = match shape {
                Shape::Skewed => "uneven-load",
                Shape::Uniform => "under-provisioned",
            };
            assert_eq!(last, Some(expected));
        }
        // Skewed rules come first, so the shape alone decides which list applies.
        let first_uniform = RULES.iter().position(|r| r.shape == Shape::Uniform);
        assert_eq!(first_uniform, Some(3));
    }

    #[test]
    fn rules_are_named_after_the_cause_they_find() {
        let names: Vec<&str> = RULES.iter().map(|r| r.cause).collect();
        for c in [
            Cause::KeySkew { hot_keys: vec![] },
            Cause::UnevenLoad,
            Cause::Stalls,
            Cause::GcStalls {
                taskmanager: String::new(),
            },
            Cause::BlockingCalls,
            Cause::StateAccess,
            Cause::Serialization,
            Cause::SourceCeiling,
            Cause::SinkLimit,
            Cause::UnderProvisioned,
        ] {
            assert!(names.contains(&c.name()), "no rule for {}", c.name());
        }
    }
}
