use std::hash::Hash;

use sluice_types::{Collector, Operator, OperatorError};

use crate::fasthash::FastHashMap;

/// Rolling keyed reduce, as Flink's `StreamGroupedReduceOperator`: for each record, combine it
/// with the key's current value (`reduce(current, record)`), store the result and emit it. The
/// first record of a key is stored and emitted as is. One output per input.
///
/// State lives in an in-memory hash map scoped to this subtask (the subtask only ever sees keys of
/// its own key groups); the full keyed-state backends replace it in a later stage.
pub struct KeyedReduceOp<K, T, KS, R> {
    key_of: KS,
    reduce: R,
    state: FastHashMap<K, T>,
}

impl<K, T, KS, R> KeyedReduceOp<K, T, KS, R> {
    pub fn new(key_of: KS, reduce: R) -> Self {
        KeyedReduceOp {
            key_of,
            reduce,
            state: FastHashMap::default(),
        }
    }

    /// Number of keys with state.
    pub fn keys(&self) -> usize {
        self.state.len()
    }
}

impl<K, T, KS, R> Operator<T, T> for KeyedReduceOp<K, T, KS, R>
where
    K: Hash + Eq + Send,
    T: Clone + Send,
    KS: Fn(&T) -> K + Send,
    R: FnMut(T, T) -> T + Send,
{
    #[inline]
    fn process(&mut self, r: T, out: &mut dyn Collector<T>) -> Result<(), OperatorError> {
        let key = (self.key_of)(&r);
        match self.state.get_mut(&key) {
            Some(acc) => {
                let next = (self.reduce)(acc.clone(), r);
                acc.clone_from(&next);
                out.collect(next)
            }
            None => {
                self.state.insert(key, r.clone());
                out.collect(r)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_types::VecCollector;

    #[test]
    fn emits_one_running_value_per_input_per_key() {
        let mut op = KeyedReduceOp::new(
            |r: &(u8, i64)| r.0,
            |a: (u8, i64), b: (u8, i64)| (a.0, a.1 + b.1),
        );
        let mut out = VecCollector::default();
        for r in [(1, 5), (2, 1), (1, 7), (1, -2), (2, 10)] {
            op.process(r, &mut out).unwrap();
        }
        assert_eq!(out.records, vec![(1, 5), (2, 1), (1, 12), (1, 10), (2, 11)]);
        assert_eq!(op.keys(), 2);
    }
}
