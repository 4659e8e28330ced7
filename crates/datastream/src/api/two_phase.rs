//! Salted two-phase aggregation: the fix for a hot key that more parallelism cannot spread.

use sluice_runtime::operators::{AdaptiveSaltOp, CombineOp, PreAggregateOp, SaltOp};
use sluice_types::Data;

use crate::operator_id::IdentityHint;
use crate::partition::JavaHash;
use crate::{DataStream, KeySelector, KeyedStream, Numeric};

/// Records a `(key, salt)` partial absorbs before it is sent to the combiner.
pub const DEFAULT_EMIT_EVERY: u32 = 1024;

/// Partials are checkpointed by key group: keys and records must be serializable.
impl<K, T, KS> KeyedStream<K, T, KS>
where
    K: JavaHash + sluice_runtime::state::StateKey + Sync,
    T: Data + sluice_runtime::state::StateValue,
    KS: KeySelector<T, K>,
{
    /// A rolling `reduce` in two phases: `salt` (round robin over `buckets`) → `pre-aggregate`
    /// keyed by `(key, salt)` → `combine` keyed by the key. One hot key is spread over `buckets`
    /// subtasks of the pre-aggregation; the combiner receives one partial per
    /// [`DEFAULT_EMIT_EVERY`] records of a `(key, salt)` (and the rest at end of input).
    ///
    /// The last value emitted per key equals the one-phase `reduce`'s when `reduce` is
    /// associative and commutative (sum, min, max, count). Intermediate updates differ: the
    /// combiner emits per partial, not per record.
    pub fn two_phase<R>(&self, buckets: u32, reduce: R) -> DataStream<T>
    where
        R: Fn(T, T) -> T + Clone + Send + Sync + 'static,
    {
        self.two_phase_with(buckets, DEFAULT_EMIT_EVERY, reduce)
    }

    /// [`two_phase`](Self::two_phase) with an explicit partial-emission period.
    pub fn two_phase_with<R>(&self, buckets: u32, emit_every: u32, reduce: R) -> DataStream<T>
    where
        R: Fn(T, T) -> T + Clone + Send + Sync + 'static,
    {
        let buckets = buckets.max(1);
        // Salt before the keyBy: the salt operator chains with whatever precedes the keyBy.
        let salted = self
            .unkeyed
            .transform("salt", move |_| SaltOp::new(buckets));
        self.pre_aggregate_and_combine(salted, buckets, emit_every, reduce)
    }

    /// The adaptive variant: only keys that the salting subtask's heavy-hitter sketch reports
    /// hot (at least `hot_share` of its records) are salted; other keys keep one partial. Same
    /// final results as [`two_phase`](Self::two_phase).
    pub fn two_phase_adaptive<R>(&self, buckets: u32, hot_share: f64, reduce: R) -> DataStream<T>
    where
        R: Fn(T, T) -> T + Clone + Send + Sync + 'static,
    {
        let buckets = buckets.max(1);
        let key = self.key.clone();
        let salted = self.unkeyed.transform("salt (adaptive)", move |_| {
            let k = key.clone();
            AdaptiveSaltOp::new(move |t: &T| k.key_of(t), buckets, hot_share)
        });
        self.pre_aggregate_and_combine(salted, buckets, DEFAULT_EMIT_EVERY, reduce)
    }

    fn pre_aggregate_and_combine<R>(
        &self,
        salted: DataStream<(u32, T)>,
        buckets: u32,
        emit_every: u32,
        reduce: R,
    ) -> DataStream<T>
    where
        R: Fn(T, T) -> T + Clone + Send + Sync + 'static,
    {
        let _ = buckets;
        mark(&salted, IdentityHint::role("two-phase salt"));
        let key = self.key.clone();
        let k1 = key.clone();
        let r1 = reduce.clone();
        let pre = salted
            .key_by(move |r: &(u32, T)| (k1.key_of(&r.1), r.0))
            .as_stream()
            .transform("pre-aggregate (salted)", move |_| {
                let k = key.clone();
                PreAggregateOp::new(move |t: &T| k.key_of(t), r1.clone(), emit_every)
            });
        mark(&pre, IdentityHint::role("two-phase pre-aggregate"));
        let k2 = self.key.clone();
        let k3 = self.key.clone();
        let backend = self.stream.env.state_backend();
        let combine = pre
            .key_by(move |r: &(u32, T)| k2.key_of(&r.1))
            .as_stream()
            .transform("combine", move |ctx| {
                let k = k3.clone();
                CombineOp::new(move |t: &T| k.key_of(t), reduce.clone())
                    .with_state(super::keyed_state_api::state_config::<K>(&backend, ctx))
            });
        // The combiner keeps the one-phase aggregation's state, so it takes over its identity:
        // a savepoint of either form restores into the other.
        mark(
            &combine,
            IdentityHint {
                role: None,
                as_if_fed_by: Some(self.stream.inputs.iter().map(|e| e.from).collect()),
            },
        );
        combine
    }

    /// Two-phase rolling sum of a field (see [`two_phase`](Self::two_phase)).
    pub fn two_phase_sum<N, F>(&self, buckets: u32, field: F) -> DataStream<T>
    where
        N: Numeric,
        F: Fn(&mut T) -> &mut N + Clone + Send + Sync + 'static,
    {
        self.two_phase(
            buckets,
            super::keyed::field_fold(field, |a: N, b: N| a.add(b)),
        )
    }
}

/// Sets how the operator producing `s` derives its stable id.
fn mark<U: Data>(s: &DataStream<U>, hint: IdentityHint) {
    if let Some(id) = s.node_id() {
        s.env.with_node(id, |n| n.identity = hint);
    }
}
