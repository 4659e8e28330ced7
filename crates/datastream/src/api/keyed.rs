use std::sync::Arc;

use sluice_runtime::operators::KeyedReduceOp;
use sluice_types::Data;

use crate::DataStream;

/// How a keyed stream finds a record's key: any `Fn(&T) -> K` closure (what `key_by` takes), or
/// a named selector the API builds itself (`connect`'s key of either side). A type parameter of
/// [`KeyedStream`], so keyed operators call it statically — inlined — rather than through a
/// `dyn Fn` once per record.
pub trait KeySelector<T, K>: Send + Sync + 'static {
    /// The key of `record`.
    fn key_of(&self, record: &T) -> K;
}

impl<T, K, F> KeySelector<T, K> for F
where
    F: Fn(&T) -> K + Send + Sync + 'static,
{
    #[inline]
    fn key_of(&self, record: &T) -> K {
        self(record)
    }
}

/// A stream partitioned by key (Flink's `KeyedStream`). Keyed operators see each key on exactly
/// one subtask and keep state per key. `F` is the key selector's concrete type (the closure given
/// to `key_by`); code that names the type writes `impl KeySelector<T, K>` or a generic.
pub struct KeyedStream<K, T, F> {
    pub(crate) stream: DataStream<T>,
    /// The stream before `key_by` (two-phase aggregation salts it before re-keying).
    pub(crate) unkeyed: DataStream<T>,
    pub(crate) key: Arc<F>,
    pub(crate) _k: std::marker::PhantomData<fn() -> K>,
}

impl<K, T, F> Clone for KeyedStream<K, T, F> {
    fn clone(&self) -> Self {
        KeyedStream {
            stream: self.stream.clone(),
            unkeyed: self.unkeyed.clone(),
            key: self.key.clone(),
            _k: std::marker::PhantomData,
        }
    }
}

/// Numbers `sum`/`min`/`max` work on. Integer sums wrap on overflow, as Java's do.
pub trait Numeric: Copy + PartialOrd + Send + Sync + 'static {
    /// The sum of `self` and `other` (wrapping for integers, as Java's `+`).
    fn add(self, other: Self) -> Self;
}

macro_rules! numeric_int {
    ($($t:ty),*) => {$(
        impl Numeric for $t {
            #[inline]
            fn add(self, o: Self) -> Self { self.wrapping_add(o) }
        }
    )*};
}
numeric_int!(i8, i16, i32, i64, i128, u8, u16, u32, u64, u128, isize, usize);

impl Numeric for f32 {
    fn add(self, o: Self) -> Self {
        self + o
    }
}
impl Numeric for f64 {
    fn add(self, o: Self) -> Self {
        self + o
    }
}

impl<K, T, F> KeyedStream<K, T, F>
where
    K: crate::partition::JavaHash + std::hash::Hash + Eq + Clone + Send + Sync + 'static,
    T: Data,
    F: KeySelector<T, K>,
{
    /// The stream as partitioned by key (for custom keyed operators via `transform`).
    pub fn as_stream(&self) -> &DataStream<T> {
        &self.stream
    }

    /// The key function (a cheap clone of the selector, called statically).
    pub fn key_fn(&self) -> impl Fn(&T) -> K + Clone + Send + Sync + 'static {
        let key = self.key.clone();
        move |r: &T| key.key_of(r)
    }
}

/// Rolling aggregations keep their per-key value in keyed state on the job's backend, by key
/// group: keys and records must be serializable.
impl<K, T, F> KeyedStream<K, T, F>
where
    K: crate::partition::JavaHash + sluice_runtime::state::StateKey + Sync,
    T: Data + sluice_runtime::state::StateValue,
    F: KeySelector<T, K>,
{
    fn rolling<R>(&self, name: &str, reduce: R) -> DataStream<T>
    where
        R: Fn(T, T) -> T + Clone + Send + Sync + 'static,
    {
        let key = self.key.clone();
        let r2 = reduce.clone();
        let backend = self.stream.env.state_backend();
        let out = self.stream.transform(name, move |ctx| {
            let key = key.clone();
            KeyedReduceOp::new(move |r: &T| key.key_of(r), reduce.clone())
                .with_hot_keys(sluice_runtime::hotkeys::display_key::<K>)
                .with_state(super::keyed_state_api::state_config::<K>(&backend, ctx))
        });
        // Remember how to rebuild this aggregation in two phases (for the plan fixer). Captures
        // the input edges, not the environment, so no reference cycle is created.
        let inputs = self.unkeyed.inputs.clone();
        let key = self.key.clone();
        #[allow(
            clippy::expect_used,
            reason = "two_phase ends in `transform`, which always yields an operator node"
        )]
        let rewrite: crate::node_body::TwoPhaseRewrite =
            std::sync::Arc::new(move |env: &crate::StreamEnv, buckets: u32| {
                let unkeyed = DataStream::<T> {
                    env: env.clone(),
                    node: None,
                    inputs: inputs.clone(),
                    timestamps: None,
                    _t: std::marker::PhantomData,
                };
                let k = key.clone();
                unkeyed
                    .key_by(move |t: &T| k.key_of(t))
                    .two_phase(buckets, r2.clone())
                    .node_id()
                    .expect("two_phase ends in an operator")
            });
        if let Some(id) = out.node_id() {
            out.env.with_node_impl(id, |n| n.two_phase = Some(rewrite));
        }
        out
    }

    /// Rolling reduce: per key, `reduce(current, record)` is stored and emitted for every record
    /// (the first record of a key is emitted as is).
    pub fn reduce<R>(&self, reduce: R) -> DataStream<T>
    where
        R: Fn(T, T) -> T + Clone + Send + Sync + 'static,
    {
        self.rolling("Keyed Reduce", reduce)
    }

    /// Rolling sum of the field `field` points at. Like Flink's `sum(pos)`, the other fields are
    /// those of the key's first record.
    pub fn sum<N, G>(&self, field: G) -> DataStream<T>
    where
        N: Numeric,
        G: Fn(&mut T) -> &mut N + Clone + Send + Sync + 'static,
    {
        self.rolling(
            "Keyed Aggregation",
            field_fold(field, |a: N, b: N| a.add(b)),
        )
    }

    /// Rolling minimum of a field (other fields from the key's first record, as Flink's `min`).
    pub fn min<N, G>(&self, field: G) -> DataStream<T>
    where
        N: Numeric,
        G: Fn(&mut T) -> &mut N + Clone + Send + Sync + 'static,
    {
        self.rolling(
            "Keyed Aggregation",
            field_fold(field, |a: N, b: N| if b < a { b } else { a }),
        )
    }

    /// Rolling maximum of a field (other fields from the key's first record, as Flink's `max`).
    pub fn max<N, G>(&self, field: G) -> DataStream<T>
    where
        N: Numeric,
        G: Fn(&mut T) -> &mut N + Clone + Send + Sync + 'static,
    {
        self.rolling(
            "Keyed Aggregation",
            field_fold(field, |a: N, b: N| if b > a { b } else { a }),
        )
    }
}

/// A reduce that combines one field of two records with `op` and keeps the accumulator's other
/// fields (Flink's positional `sum`/`min`/`max` semantics).
pub(crate) fn field_fold<T, N, F, O>(
    field: F,
    op: O,
) -> impl Fn(T, T) -> T + Clone + Send + Sync + 'static
where
    N: Numeric,
    F: Fn(&mut T) -> &mut N + Clone + Send + Sync + 'static,
    O: Fn(N, N) -> N + Copy + Send + Sync + 'static,
{
    move |mut acc: T, mut r: T| {
        let v = *field(&mut r);
        let slot = field(&mut acc);
        *slot = op(*slot, v);
        acc
    }
}
