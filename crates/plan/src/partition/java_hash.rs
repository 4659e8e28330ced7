//! Java `hashCode()` for Rust key types.
//!
//! Flink places a key by hashing the key *object* with its Java `hashCode()` before applying its
//! murmur finaliser (see [`super::key_groups`]). To put keys on the same key group and subtask as
//! Flink, the first step has to produce the very same 32-bit value, so every implementation here
//! mirrors the boxed Java type a Flink job would use for the corresponding Rust value.
//!
//! All arithmetic is 32-bit two's-complement with wrap-around, as in Java.

use std::rc::Rc;
use std::sync::Arc;

/// The value Java's `hashCode()` returns for the equivalent Java object.
///
/// Implement it for custom key types by combining field hashes the way the Java class they stand
/// in for does (for a Flink `TupleN`, see the tuple implementations below).
pub trait JavaHash {
    /// Java's `hashCode()` of the equivalent Java object.
    fn java_hash_code(&self) -> i32;
}

/// `Integer.hashCode()`: the value itself.
impl JavaHash for i32 {
    #[inline]
    fn java_hash_code(&self) -> i32 {
        *self
    }
}

/// Java has no unsigned int; a `u32` stands for the `Integer` with the same bit pattern.
impl JavaHash for u32 {
    #[inline]
    fn java_hash_code(&self) -> i32 {
        *self as i32
    }
}

/// `Long.hashCode()`: `(int) (v ^ (v >>> 32))`, i.e. the two halves XOR-ed.
impl JavaHash for i64 {
    #[inline]
    fn java_hash_code(&self) -> i32 {
        let bits = *self as u64;
        (bits ^ (bits >> 32)) as i32
    }
}

/// Java has no unsigned long; a `u64` stands for the `Long` with the same bit pattern.
impl JavaHash for u64 {
    #[inline]
    fn java_hash_code(&self) -> i32 {
        (*self as i64).java_hash_code()
    }
}

/// `Short.hashCode()`: the value, sign-extended.
impl JavaHash for i16 {
    #[inline]
    fn java_hash_code(&self) -> i32 {
        i32::from(*self)
    }
}

/// `Byte.hashCode()`: the value, sign-extended.
impl JavaHash for i8 {
    #[inline]
    fn java_hash_code(&self) -> i32 {
        i32::from(*self)
    }
}

/// A `u8` stands for a Java `Byte` (Java's byte is signed), so `0xFF` hashes as `-1`.
impl JavaHash for u8 {
    #[inline]
    fn java_hash_code(&self) -> i32 {
        i32::from(*self as i8)
    }
}

/// A `u16` stands for a Java `Character` holding that UTF-16 code unit (`Character.hashCode()` is
/// the unsigned code unit).
impl JavaHash for u16 {
    #[inline]
    fn java_hash_code(&self) -> i32 {
        i32::from(*self)
    }
}

/// `Character.hashCode()`: the code unit. Exact for the Basic Multilingual Plane; a Java `char`
/// cannot hold a supplementary character, so for those the code point is returned (what an
/// `Integer` holding `Character.codePointAt` would hash to).
impl JavaHash for char {
    #[inline]
    fn java_hash_code(&self) -> i32 {
        *self as i32
    }
}

/// `Boolean.hashCode()`: `1231` for true, `1237` for false.
impl JavaHash for bool {
    #[inline]
    fn java_hash_code(&self) -> i32 {
        if *self {
            1231
        } else {
            1237
        }
    }
}

/// `Double.hashCode()`: `doubleToLongBits` (every NaN collapsed to the canonical
/// `0x7ff8000000000000`) then hashed like a `Long`. `0.0` and `-0.0` differ, as in Java.
impl JavaHash for f64 {
    #[inline]
    fn java_hash_code(&self) -> i32 {
        let bits = if self.is_nan() {
            0x7ff8_0000_0000_0000_u64
        } else {
            self.to_bits()
        };
        bits.java_hash_code()
    }
}

/// `Float.hashCode()`: `floatToIntBits` (every NaN collapsed to the canonical `0x7fc00000`).
impl JavaHash for f32 {
    #[inline]
    fn java_hash_code(&self) -> i32 {
        let bits = if self.is_nan() {
            0x7fc0_0000_u32
        } else {
            self.to_bits()
        };
        bits as i32
    }
}

/// `String.hashCode()`: `Σ s[i]·31^(n-1-i)` over the UTF-16 code units (so a supplementary
/// character contributes its surrogate pair), wrapping; the empty string hashes to `0`.
impl JavaHash for str {
    #[inline]
    fn java_hash_code(&self) -> i32 {
        self.encode_utf16().fold(0_i32, |h, unit| {
            h.wrapping_mul(31).wrapping_add(i32::from(unit))
        })
    }
}

/// Same as [`str`]: a Rust `String` stands for a Java `String`.
impl JavaHash for String {
    #[inline]
    fn java_hash_code(&self) -> i32 {
        self.as_str().java_hash_code()
    }
}

/// A Java field that may be `null`: Flink's tuples (and `Objects.hashCode`) hash `null` to `0`.
impl<T: JavaHash> JavaHash for Option<T> {
    #[inline]
    fn java_hash_code(&self) -> i32 {
        self.as_ref().map_or(0, JavaHash::java_hash_code)
    }
}

/// References hash like what they point to (Java has no value/reference distinction).
impl<T: JavaHash + ?Sized> JavaHash for &T {
    #[inline]
    fn java_hash_code(&self) -> i32 {
        (**self).java_hash_code()
    }
}

/// Boxes hash like their contents.
impl<T: JavaHash + ?Sized> JavaHash for Box<T> {
    #[inline]
    fn java_hash_code(&self) -> i32 {
        (**self).java_hash_code()
    }
}

/// Shared pointers hash like their contents.
impl<T: JavaHash + ?Sized> JavaHash for Rc<T> {
    #[inline]
    fn java_hash_code(&self) -> i32 {
        (**self).java_hash_code()
    }
}

/// Shared pointers hash like their contents.
impl<T: JavaHash + ?Sized> JavaHash for Arc<T> {
    #[inline]
    fn java_hash_code(&self) -> i32 {
        (**self).java_hash_code()
    }
}

/// Folds field hashes like Flink's `TupleN.hashCode()`: start with `f0`'s hash, then
/// `result = 31 * result + fi.hashCode()` for each further field, wrapping. (Note this is not
/// `java.util.Arrays.hashCode`, which would start from 1.)
#[inline]
fn tuple_hash(field_hashes: &[i32]) -> i32 {
    field_hashes
        .iter()
        .skip(1)
        .fold(field_hashes.first().copied().unwrap_or(0), |h, &f| {
            h.wrapping_mul(31).wrapping_add(f)
        })
}

/// Hashed like Flink's `Tuple2` (`31 * f0.hashCode() + f1.hashCode()`, wrapping).
impl<A: JavaHash, B: JavaHash> JavaHash for (A, B) {
    #[inline]
    fn java_hash_code(&self) -> i32 {
        tuple_hash(&[self.0.java_hash_code(), self.1.java_hash_code()])
    }
}

/// Hashed like Flink's `Tuple3`.
impl<A: JavaHash, B: JavaHash, C: JavaHash> JavaHash for (A, B, C) {
    #[inline]
    fn java_hash_code(&self) -> i32 {
        tuple_hash(&[
            self.0.java_hash_code(),
            self.1.java_hash_code(),
            self.2.java_hash_code(),
        ])
    }
}

/// Hashed like Flink's `Tuple4`.
impl<A: JavaHash, B: JavaHash, C: JavaHash, D: JavaHash> JavaHash for (A, B, C, D) {
    #[inline]
    fn java_hash_code(&self) -> i32 {
        tuple_hash(&[
            self.0.java_hash_code(),
            self.1.java_hash_code(),
            self.2.java_hash_code(),
            self.3.java_hash_code(),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected values were printed by a real JDK, not derived from this code.

    #[test]
    fn string_hashes_match_java() {
        assert_eq!("hello".java_hash_code(), 99_162_322);
        assert_eq!("".java_hash_code(), 0);
        assert_eq!("a".java_hash_code(), 97);
        assert_eq!(String::from("abc").java_hash_code(), 96_354);
        // Classic Java collision: equal hashes for different strings.
        assert_eq!("Aa".java_hash_code(), "BB".java_hash_code());
        // Overflow must wrap exactly like Java's int arithmetic.
        assert_eq!("polygenelubricants".java_hash_code(), i32::MIN);
        assert_eq!("VIP_CUSTOMER".java_hash_code(), -1_174_109_728);
    }

    #[test]
    fn non_ascii_strings_hash_utf16_code_units() {
        assert_eq!("é".java_hash_code(), 233);
        assert_eq!("日本".java_hash_code(), 835_047);
        // U+1F600 is the surrogate pair D83D DE00 in UTF-16: 0xD83D * 31 + 0xDE00.
        assert_eq!("😀".java_hash_code(), 1_772_899);
        assert_eq!("a😀b".java_hash_code(), 57_849_694);
    }

    #[test]
    fn integer_and_long_hashes_match_java() {
        assert_eq!(42_i32.java_hash_code(), 42);
        assert_eq!((-7_i32).java_hash_code(), -7);
        assert_eq!(u32::MAX.java_hash_code(), -1);
        assert_eq!(0_i64.java_hash_code(), 0);
        assert_eq!((-1_i64).java_hash_code(), 0);
        assert_eq!((-5_i64).java_hash_code(), 4);
        assert_eq!((1_i64 << 32).java_hash_code(), 1);
        assert_eq!(i64::MIN.java_hash_code(), i32::MIN);
        assert_eq!(i64::MAX.java_hash_code(), i32::MIN);
        assert_eq!(1_234_567_890_123_i64.java_hash_code(), 1_912_276_436);
        assert_eq!(u64::MAX.java_hash_code(), 0);
    }

    #[test]
    fn small_ints_bool_and_char_match_java() {
        assert_eq!((-3_i16).java_hash_code(), -3);
        assert_eq!((-3_i8).java_hash_code(), -3);
        assert_eq!(0xFF_u8.java_hash_code(), -1);
        assert_eq!(0x7F_u8.java_hash_code(), 127);
        assert_eq!(0xFFFF_u16.java_hash_code(), 65_535);
        assert_eq!(true.java_hash_code(), 1231);
        assert_eq!(false.java_hash_code(), 1237);
        assert_eq!('a'.java_hash_code(), 97);
        assert_eq!('日'.java_hash_code(), 0x65E5);
    }

    #[test]
    fn floating_point_hashes_match_java() {
        assert_eq!(0.0_f64.java_hash_code(), 0);
        assert_eq!((-0.0_f64).java_hash_code(), i32::MIN);
        assert_eq!(1.0_f64.java_hash_code(), 1_072_693_248);
        assert_eq!(1.5_f64.java_hash_code(), 1_073_217_536);
        assert_eq!(f64::NAN.java_hash_code(), 2_146_959_360);
        // A NaN with a different payload must still hash as the canonical NaN.
        assert_eq!(
            f64::from_bits(0x7ff0_0000_0000_0001).java_hash_code(),
            2_146_959_360
        );
        assert_eq!(1.0_f32.java_hash_code(), 1_065_353_216);
        assert_eq!((-0.0_f32).java_hash_code(), i32::MIN);
        assert_eq!(f32::NAN.java_hash_code(), 2_143_289_344);
        assert_eq!(f32::from_bits(0xffc0_0001).java_hash_code(), 2_143_289_344);
    }

    #[test]
    fn tuples_hash_like_flink_tuples() {
        // Tuple2.of("a", 1).hashCode() == 31 * 97 + 1
        assert_eq!(("a", 1_i32).java_hash_code(), 3008);
        assert_eq!(("a", 1_i32, true).java_hash_code(), 3008 * 31 + 1231);
        assert_eq!(
            (1_i32, 2_i32, 3_i32, 4_i32).java_hash_code(),
            ((31 + 2) * 31 + 3) * 31 + 4
        );
        // Wrapping, not overflow panics.
        assert_eq!(
            (i32::MAX, i32::MAX).java_hash_code(),
            i32::MAX.wrapping_mul(31).wrapping_add(i32::MAX)
        );
    }

    #[test]
    fn options_and_pointers_delegate() {
        assert_eq!(None::<String>.java_hash_code(), 0);
        assert_eq!(Some("hello").java_hash_code(), 99_162_322);
        assert_eq!((None::<i32>, 5_i32).java_hash_code(), 5);
        assert_eq!(Box::new(7_i64).java_hash_code(), 7);
        let s: Box<str> = "hello".into();
        assert_eq!(s.java_hash_code(), 99_162_322);
        assert_eq!(Arc::<str>::from("hello").java_hash_code(), 99_162_322);
        assert_eq!(Rc::new(-5_i64).java_hash_code(), 4);
        assert_eq!((&&"hello").java_hash_code(), 99_162_322);
    }
}
