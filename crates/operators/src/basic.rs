use sluice_types::{Collector, Operator, OperatorError, OutputBatch};

/// `map`: one output per input.
pub struct MapOp<F>(pub F);

impl<In, Out, F> Operator<In, Out> for MapOp<F>
where
    F: FnMut(In) -> Out + Send,
{
    #[inline]
    fn process(&mut self, r: In, out: &mut dyn Collector<Out>) -> Result<(), OperatorError> {
        out.collect((self.0)(r))
    }

    #[inline]
    fn process_into(&mut self, r: In, out: &mut OutputBatch<'_, Out>) -> Result<(), OperatorError>
    where
        Out: Send,
    {
        out.push((self.0)(r))
    }
}

/// `filter`: the records for which the predicate holds.
pub struct FilterOp<F>(pub F);

impl<T, F> Operator<T, T> for FilterOp<F>
where
    F: FnMut(&T) -> bool + Send,
{
    #[inline]
    fn process(&mut self, r: T, out: &mut dyn Collector<T>) -> Result<(), OperatorError> {
        if (self.0)(&r) {
            out.collect(r)
        } else {
            Ok(())
        }
    }

    #[inline]
    fn process_into(&mut self, r: T, out: &mut OutputBatch<'_, T>) -> Result<(), OperatorError>
    where
        T: Send,
    {
        if (self.0)(&r) {
            out.push(r)
        } else {
            Ok(())
        }
    }
}

/// `flat_map`: zero or more outputs per input, from any iterable.
pub struct FlatMapOp<F>(pub F);

impl<In, Out, I, F> Operator<In, Out> for FlatMapOp<F>
where
    F: FnMut(In) -> I + Send,
    I: IntoIterator<Item = Out>,
{
    #[inline]
    fn process(&mut self, r: In, out: &mut dyn Collector<Out>) -> Result<(), OperatorError> {
        for o in (self.0)(r) {
            out.collect(o)?;
        }
        Ok(())
    }

    #[inline]
    fn process_into(&mut self, r: In, out: &mut OutputBatch<'_, Out>) -> Result<(), OperatorError>
    where
        Out: Send,
    {
        for o in (self.0)(r) {
            out.push(o)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_types::VecCollector;

    #[test]
    fn map_filter_flat_map_transform_as_documented() {
        let mut out = VecCollector::default();
        let mut m = MapOp(|x: i32| x * 10);
        let mut f = FilterOp(|x: &i32| x % 2 == 0);
        let mut fm = FlatMapOp(|x: i32| vec![x; x as usize]);
        for x in 1..=3 {
            m.process(x, &mut out).unwrap();
            f.process(x, &mut out).unwrap();
            fm.process(x, &mut out).unwrap();
        }
        assert_eq!(out.records, vec![10, 1, 20, 2, 2, 2, 30, 3, 3, 3]);
    }
}
