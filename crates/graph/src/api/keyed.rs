use std::sync::Arc;

use sluice_runtime::operators::KeyedReduceOp;
use sluice_types::Data;

use crate::DataStream;

/// A stream partitioned by key (Flink's `KeyedStream`). Keyed operators see each key on exactly
/// one subtask and keep state per key.
pub struct KeyedStream<K, T> {
    pub(crate) stream: DataStream<T>,
    /// The stream before `key_by` (two-phase aggregation salts it before re-keying).
    pub(crate) unkeyed: DataStream<T>,
    pub(crate) key: Arc<dyn Fn(&T) -> K + Send + Sync>,
}

impl<K, T> Clone for KeyedStream<K, T> {
    fn clone(&self) -> Self {
        KeyedStream {
            stream: self.stream.clone(),
            unkeyed: self.unkeyed.clone(),
            key: self.key.clone(),
        }
    }
}

/// Numbers `sum`/`min`/`max` work on. Integer sums wrap on overflow, as Java's do.
pub trait Numeric: Copy + PartialOrd + Send + Sync + 'static {
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

impl<K, T> KeyedStream<K, T>
where
    K: std::hash::Hash + Eq + Clone + Send + Sync + 'static,
    T: Data,
{
    /// The stream as partitioned by key (for custom keyed operators via `transform`).
    pub fn as_stream(&self) -> &DataStream<T> {
        &self.stream
    }

    /// The key function.
    pub fn key_fn(&self) -> Arc<dyn Fn(&T) -> K + Send + Sync> {
        self.key.clone()
    }

    fn rolling<R>(&self, name: &str, reduce: R) -> DataStream<T>
    where
        R: Fn(T, T) -> T + Clone + Send + Sync + 'static,
    {
        let key = self.key.clone();
        self.stream.transform(name, move |_| {
            let key = key.clone();
            KeyedReduceOp::new(move |r: &T| key(r), reduce.clone())
        })
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
    pub fn sum<N, F>(&self, field: F) -> DataStream<T>
    where
        N: Numeric,
        F: Fn(&mut T) -> &mut N + Clone + Send + Sync + 'static,
    {
        self.rolling("Keyed Aggregation", move |mut acc, mut r| {
            let v = *field(&mut r);
            let slot = field(&mut acc);
            *slot = slot.add(v);
            acc
        })
    }

    /// Rolling minimum of a field (other fields from the key's first record, as Flink's `min`).
    pub fn min<N, F>(&self, field: F) -> DataStream<T>
    where
        N: Numeric,
        F: Fn(&mut T) -> &mut N + Clone + Send + Sync + 'static,
    {
        self.rolling("Keyed Aggregation", move |mut acc, mut r| {
            let v = *field(&mut r);
            let slot = field(&mut acc);
            if v < *slot {
                *slot = v;
            }
            acc
        })
    }

    /// Rolling maximum of a field (other fields from the key's first record, as Flink's `max`).
    pub fn max<N, F>(&self, field: F) -> DataStream<T>
    where
        N: Numeric,
        F: Fn(&mut T) -> &mut N + Clone + Send + Sync + 'static,
    {
        self.rolling("Keyed Aggregation", move |mut acc, mut r| {
            let v = *field(&mut r);
            let slot = field(&mut acc);
            if v > *slot {
                *slot = v;
            }
            acc
        })
    }
}
