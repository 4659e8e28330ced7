//! The arithmetic aggregates do, with Flink's (Java's) semantics: integers wrap at their type's
//! width, `DECIMAL` sums are exact in `DECIMAL(38, s)` and overflow to NULL, decimal averages
//! round half up.

use serde::{Deserialize, Serialize};

use crate::cast::pow10;
use crate::types::{LogicalType, MAX_DECIMAL_PRECISION};

/// The width of an integer type, for Java's wrap-around.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum IntWidth {
    /// `TINYINT`.
    I8,
    /// `SMALLINT`.
    I16,
    /// `INT`.
    I32,
    /// `BIGINT`.
    I64,
}

impl IntWidth {
    /// The width of an integer type (`None` for others).
    pub fn of(ty: &LogicalType) -> Option<IntWidth> {
        match ty {
            LogicalType::TinyInt => Some(IntWidth::I8),
            LogicalType::SmallInt => Some(IntWidth::I16),
            LogicalType::Int => Some(IntWidth::I32),
            LogicalType::BigInt => Some(IntWidth::I64),
            _ => None,
        }
    }

    /// `v` narrowed to this width, as Java's `(byte)`, `(short)`, `(int)` casts do.
    pub fn wrap(self, v: i64) -> i64 {
        match self {
            IntWidth::I8 => i64::from(v as i8),
            IntWidth::I16 => i64::from(v as i16),
            IntWidth::I32 => i64::from(v as i32),
            IntWidth::I64 => v,
        }
    }

    /// `a + b` at this width.
    pub fn add(self, a: i64, b: i64) -> i64 {
        self.wrap(a.wrapping_add(b))
    }

    /// `a * b` at this width.
    pub fn mul(self, a: i64, b: i64) -> i64 {
        self.wrap(a.wrapping_mul(b))
    }
}

/// Whether an unscaled value fits `DECIMAL(38, s)`.
pub fn fits_decimal38(unscaled: i128) -> bool {
    unscaled.unsigned_abs() < pow10(u32::from(MAX_DECIMAL_PRECISION)).unsigned_abs()
}

/// `a + b` in `DECIMAL(38, s)` (same scale): `None` when it leaves 38 digits, as Flink's
/// `DecimalData` gives NULL.
pub fn add_decimal38(a: i128, b: i128) -> Option<i128> {
    a.checked_add(b).filter(|s| fits_decimal38(*s))
}

/// `sum × 10^-sum_scale / count` with `scale` digits after the point, rounded half up (away from
/// zero); `None` if it does not fit `DECIMAL(38, scale)`. Long division, so no intermediate
/// overflows whatever the scales.
pub fn divide_half_up(sum: i128, sum_scale: u8, count: i64, scale: u8) -> Option<i128> {
    if count <= 0 {
        return None;
    }
    // |sum| / divisor, with `extra` more digits produced one at a time by long division (so
    // nothing overflows whatever the scales), then rounded on the remainder.
    let (divisor, extra) = if scale >= sum_scale {
        (u128::from(count.unsigned_abs()), scale - sum_scale)
    } else {
        let drop = pow10(u32::from(sum_scale - scale)).unsigned_abs();
        (u128::from(count.unsigned_abs()).checked_mul(drop)?, 0)
    };
    let magnitude = sum.unsigned_abs();
    let mut q = magnitude / divisor;
    let mut r = magnitude % divisor;
    for _ in 0..extra {
        // r < divisor <= i64::MAX, so r * 10 cannot overflow.
        q = q.checked_mul(10)?.checked_add((r * 10) / divisor)?;
        r = (r * 10) % divisor;
    }
    // Half up: the dropped fraction r / divisor is at least one half.
    if r.checked_mul(2).is_none_or(|twice| twice >= divisor) {
        q = q.checked_add(1)?;
    }
    let q = i128::try_from(q).ok()?;
    let q = if sum < 0 { -q } else { q };
    fits_decimal38(q).then_some(q)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn division_rounds_half_away_from_zero() {
        // 0.02 / 3 = 0.00666… → 0.006667
        assert_eq!(divide_half_up(2, 2, 3, 6), Some(6667));
        assert_eq!(divide_half_up(-2, 2, 3, 6), Some(-6667));
        // 5.00 / 2 = 2.5 → 2.500000
        assert_eq!(divide_half_up(500, 2, 2, 6), Some(2_500_000));
        // 1 / 8 = 0.125 at scale 2 → 0.13
        assert_eq!(divide_half_up(1, 0, 8, 2), Some(13));
        assert_eq!(divide_half_up(1, 0, 0, 2), None);
    }

    #[test]
    fn integers_wrap_like_java() {
        assert_eq!(
            IntWidth::I32.add(i64::from(i32::MAX), 1),
            i64::from(i32::MIN)
        );
        assert_eq!(IntWidth::I8.add(100, 100), -56);
        assert_eq!(IntWidth::I64.add(i64::MAX, 1), i64::MIN);
    }
}
