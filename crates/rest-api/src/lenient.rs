//! Lenient readers for fields whose JSON type varies between servers (Flink sends metric values
//! as strings, Sluice as numbers; a broken answer may send anything): used with
//! `#[serde(default, deserialize_with = "…")]` so that reading never fails on a field's type,
//! only a caller's check does.

use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// One JSON value as read, kept just enough to tell numbers, strings and the rest apart
/// (objects and arrays are read and dropped). Serialises back as the same JSON scalar.
#[derive(Clone, Debug, PartialEq)]
pub enum Scalar {
    /// A JSON integer that fits `i64` (negative ones included).
    Int(i64),
    /// A JSON integer above `i64::MAX`.
    UInt(u64),
    /// A JSON number with a fraction or exponent.
    Float(f64),
    /// A JSON string.
    Str(String),
    /// `true` or `false`.
    Bool(bool),
    /// `null`.
    Null,
    /// An object or an array (its content is not kept).
    Compound,
}

impl Scalar {
    /// A finite number from a JSON number or a numeric string (`" 12 "`, `"NaN"` is `None`).
    pub fn number(&self) -> Option<f64> {
        let x = match self {
            Scalar::Int(i) => *i as f64,
            Scalar::UInt(u) => *u as f64,
            Scalar::Float(f) => *f,
            Scalar::Str(s) => s.trim().parse::<f64>().ok()?,
            _ => return None,
        };
        x.is_finite().then_some(x)
    }

    /// As text: a string as it is, `null` as empty, a scalar as its JSON text.
    pub fn text(&self) -> String {
        match self {
            Scalar::Str(s) => s.clone(),
            Scalar::Null => String::new(),
            other => other.to_string(),
        }
    }

    /// A boolean from `true`/`false` or the strings `"true"`/`"false"`.
    pub fn boolean(&self) -> Option<bool> {
        match self {
            Scalar::Bool(b) => Some(*b),
            Scalar::Str(s) => s.trim().parse::<bool>().ok(),
            _ => None,
        }
    }
}

/// The value as JSON text (strings quoted, objects and arrays as `{…}`).
impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Int(i) => write!(f, "{i}"),
            Scalar::UInt(u) => write!(f, "{u}"),
            Scalar::Float(x) if x.fract() == 0.0 && x.abs() < 1e16 => write!(f, "{x:.1}"),
            // Large magnitudes in exponent form, as JSON writers print them (`1e+18`).
            Scalar::Float(x) if x.abs() >= 1e16 => {
                let e = format!("{x:e}");
                match e.split_once('e') {
                    Some((m, exp)) if !exp.starts_with('-') => write!(f, "{m}e+{exp}"),
                    _ => f.write_str(&e),
                }
            }
            Scalar::Float(x) => write!(f, "{x}"),
            Scalar::Str(s) => write!(f, "{s:?}"),
            Scalar::Bool(b) => write!(f, "{b}"),
            Scalar::Null => f.write_str("null"),
            Scalar::Compound => f.write_str("{…}"),
        }
    }
}

impl Serialize for Scalar {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Scalar::Int(i) => s.serialize_i64(*i),
            Scalar::UInt(u) => s.serialize_u64(*u),
            Scalar::Float(x) => s.serialize_f64(*x),
            Scalar::Str(t) => s.serialize_str(t),
            Scalar::Bool(b) => s.serialize_bool(*b),
            Scalar::Null | Scalar::Compound => s.serialize_unit(),
        }
    }
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Scalar, E> {
        Ok(Scalar::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Scalar, E> {
        Ok(Scalar::Int(v))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar, E> {
        Ok(i64::try_from(v).map_or(Scalar::UInt(v), Scalar::Int))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Scalar, E> {
        Ok(Scalar::Float(v))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Scalar, E> {
        Ok(Scalar::Str(v.to_string()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Scalar, E> {
        Ok(Scalar::Str(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Scalar, E> {
        Ok(Scalar::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Scalar, E> {
        Ok(Scalar::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Scalar, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Scalar, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Scalar::Compound)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Scalar, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Scalar::Compound)
    }
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Scalar, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
}

/// Text of any JSON value ([`Scalar::text`]); for `String` fields.
pub fn text<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Scalar::deserialize(d)?.text())
}

/// A finite number of any JSON value ([`Scalar::number`]); for `Option<f64>` fields.
pub fn number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    Ok(Scalar::deserialize(d)?.number())
}

/// A whole number `>= 0` of any JSON value, else `None`; for `Option<u64>` fields.
pub fn count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(match Scalar::deserialize(d)? {
        Scalar::Int(i) => u64::try_from(i).ok(),
        Scalar::UInt(u) => Some(u),
        _ => None,
    })
}

/// A JSON boolean, else `None`; for `Option<bool>` fields.
pub fn flag<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    Ok(match Scalar::deserialize(d)? {
        Scalar::Bool(b) => Some(b),
        _ => None,
    })
}

/// A list whose elements that do not read as `T` are dropped, and which is empty when the
/// value is not a list; for `Vec<T>` fields of answers where one odd entry must not hide the
/// others.
pub fn list<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<MaybeList<T>>::deserialize(d)?
        .map(|l| l.0)
        .unwrap_or_default())
}

/// A list, tolerant as [`list`] describes; `None` when the value is not a list.
pub fn some_list<'de, D, T>(d: D) -> Result<Option<Vec<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(MaybeList::<T>::deserialize(d)?.into_option())
}

/// A list read element by element (elements that fail to read dropped), or not a list.
struct MaybeList<T>(Vec<T>, bool);

impl<T> MaybeList<T> {
    fn into_option(self) -> Option<Vec<T>> {
        self.1.then_some(self.0)
    }
}

impl<'de, T: Deserialize<'de> + Default> Deserialize<'de> for MaybeList<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de> + Default> Visitor<'de> for V<T> {
            type Value = MaybeList<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(e) = seq.next_element::<Lax<T>>()? {
                    out.push(e.0);
                }
                Ok(MaybeList(out, true))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(MaybeList(Vec::new(), false))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(MaybeList(Vec::new(), false))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(MaybeList(Vec::new(), false))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(MaybeList(Vec::new(), false))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(MaybeList(Vec::new(), false))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(MaybeList(Vec::new(), false))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(MaybeList(Vec::new(), false))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// One element of a list: an object read as `T`, anything else as `T::default()` (as if it were
/// an empty object: every field of the types read here is lenient and defaulted).
struct Lax<T>(T);

impl<'de, T: Deserialize<'de> + Default> Deserialize<'de> for Lax<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de> + Default> Visitor<'de> for V<T> {
            type Value = Lax<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(Lax)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Lax(T::default()))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Lax(T::default()))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Lax(T::default()))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Lax(T::default()))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Lax(T::default()))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
                Ok(Lax(T::default()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Lax(T::default()))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// An object read as `T`, anything else as `T::default()`; for nested-object fields.
pub fn object<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Lax::<T>::deserialize(d)?.0)
}

/// A whole number `>= 0` of any JSON value, else 0; for `u64` fields.
pub fn count_or_zero<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    Ok(count(d)?.unwrap_or(0))
}

/// A JSON string as it is, anything else `None`; for `Option<String>` fields.
pub fn some_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Scalar::deserialize(d)? {
        Scalar::Str(s) => Some(s),
        _ => None,
    })
}

/// A whole number of any JSON value (a number or a numeric string, a fraction cut off), else
/// `None`; for `Option<i64>` fields such as timestamps.
pub fn int<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    Ok(match Scalar::deserialize(d)? {
        Scalar::Int(i) => Some(i),
        other => other
            .number()
            .filter(|x| x.abs() < 9.2e18)
            .map(|x| x as i64),
    })
}

/// A list of texts ([`Scalar::text`] of each element); empty when not a list.
pub fn list_of_text<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Vec<String>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a list")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(s) = seq.next_element::<Scalar>()? {
                out.push(s.text());
            }
            Ok(out)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(Vec::new())
        }
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }
    }
    d.deserialize_any(V)
}

/// Any JSON value, `null` included, as `Some`; for `Option<Scalar>` fields whose absence and
/// `null` differ (serde reads `null` as `None` otherwise).
pub fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Scalar>, D::Error> {
    Scalar::deserialize(d).map(Some)
}

/// An object read as `Some(T)` (anything else present as `Some(T::default())`); for optional
/// nested-object fields.
pub fn some_object<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Some(Lax::<T>::deserialize(d)?.0))
}

/// Writes a number read as `f64` as a JSON integer when it is whole (as the server computes
/// it: Flink writes these fields as `long`s), as a float otherwise, `None` as `null`.
pub fn write_number<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    // Whole values within f64's exact integer range round-trip through i64 unchanged.
    const EXACT: f64 = 9_007_199_254_740_992.0;
    match v {
        Some(x) if x.fract() == 0.0 && x.abs() <= EXACT => s.serialize_i64(*x as i64),
        Some(x) => s.serialize_f64(*x),
        None => s.serialize_unit(),
    }
}

/// A whole number of any JSON value ([`int`]), else 0; for `i64` fields such as timestamps.
pub fn int_or_zero<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    Ok(int(d)?.unwrap_or(0))
}

/// A finite number of any JSON value ([`number`]), else 0; for `f64` fields.
pub fn number_or_zero<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(number(d)?.unwrap_or(0.0))
}

/// A JSON boolean ([`flag`]), else `false`; for `bool` fields.
pub fn flag_or_false<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(flag(d)?.unwrap_or(false))
}

/// `null` as `None`, an object read as `Some(T)` (anything else as `Some(T::default())`); for
/// nullable nested-object fields, where `null` means "none" (unlike [`some_object`]).
pub fn object_or_null<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<Lax<T>>::deserialize(d)?.map(|l| l.0))
}

#[cfg(test)]
mod tests {
    use super::Scalar;

    #[test]
    fn a_scalar_reads_back_as_the_json_text_an_error_message_quotes() {
        assert_eq!(Scalar::Float(1e18).to_string(), "1e+18");
        assert_eq!(Scalar::Float(-2.5e20).to_string(), "-2.5e+20");
        assert_eq!(Scalar::Float(3.0).to_string(), "3.0");
        assert_eq!(Scalar::Float(0.25).to_string(), "0.25");
        assert_eq!(Scalar::Int(-7).to_string(), "-7");
        assert_eq!(Scalar::Str("x".into()).to_string(), "\"x\"");
    }
}
