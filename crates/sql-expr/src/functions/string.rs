//! String built-ins with Flink's edge cases: `LOWER`, `UPPER`, `INITCAP`, `TRIM`/`LTRIM`/`RTRIM`,
//! `CHAR_LENGTH`, `SUBSTRING`/`SUBSTR`, `CONCAT`, `CONCAT_WS`, `REPLACE`, `POSITION`/`LOCATE`,
//! `LPAD`/`RPAD`, `REPEAT`, `REVERSE`, `REGEXP_EXTRACT`, `REGEXP_REPLACE`, `REGEXP`,
//! `SPLIT_INDEX`.
//!
//! Regular expressions are Java's in Flink and Rust's `regex` here. They agree on the common syntax
//! (classes, groups, alternation, quantifiers, anchors); Rust's has no backreferences (`\1`) and no
//! look-around (`(?=…)`, `(?<=…)`): such a literal pattern is refused when the statement is bound,
//! a computed one gives NULL. In replacements Java writes `$1` as Rust does.
//!
//! Functions whose answer is a piece of their input (`SUBSTRING`, `SPLIT_INDEX`, the `TRIM` family,
//! `REGEXP_EXTRACT`, `LOWER`/`UPPER` of text they leave unchanged) return it as a piece of the
//! input's [`SqlStr`](crate::value::SqlStr): static text (a Nexmark URL) gives a static piece,
//! with no allocation and no copy per row.

use super::{
    any_nullable, int_arg, is_integer, is_string, str_arg, string_len, FunctionRegistry, Prepared,
    ScalarFunction,
};
use std::ops::Range;

use regex_automata::meta;

use crate::types::{DataType, LogicalType};
use crate::value::Value;

fn string_type(nullable: bool) -> DataType {
    DataType::string().with_nullable(nullable)
}

fn varchar(len: u32, nullable: bool) -> DataType {
    DataType::new(LogicalType::Varchar { length: len }).with_nullable(nullable)
}

fn s(v: &str) -> Value {
    Value::str(v)
}

/// Compiles a regex, `Err` naming the problem.
pub(crate) fn compile_regex(pattern: &str) -> std::result::Result<regex::Regex, String> {
    regex::Regex::new(pattern).map_err(|e| {
        format!("the regular expression '{pattern}' is not supported (Sluice uses Rust's regex syntax: no backreferences or look-around): {e}")
    })
}

/// Prepares the regex in argument `index` when it is a literal.
fn prepare_regex_at(
    lits: &[Option<&Value>],
    index: usize,
) -> std::result::Result<Option<Prepared>, String> {
    match lits.get(index) {
        Some(Some(Value::Str(p))) => Ok(Some(Prepared::Regex(compile_regex(p)?))),
        _ => Ok(None),
    }
}

/// Runs `f` with the prepared regex, or one compiled now (NULL if it does not compile).
fn with_regex(
    prepared: Option<&Prepared>,
    pattern: &str,
    f: impl FnOnce(&regex::Regex) -> Value,
) -> Value {
    match prepared {
        Some(Prepared::Regex(re)) => f(re),
        _ => match regex::Regex::new(pattern) {
            Ok(re) => f(&re),
            Err(_) => Value::Null,
        },
    }
}

/// Flink's `SUBSTRING(s, start[, len])`: 1-based; a start of 0 counts as 1; a negative start counts
/// from the end; a negative length is NULL. The answer is the byte range of the piece in `text`.
pub(crate) fn substring(text: &str, start: i64, len: Option<i64>) -> Option<Range<usize>> {
    if matches!(len, Some(l) if l < 0) {
        return None;
    }
    // Character positions, counted once; ASCII text (the common case) is its own index.
    let n = if text.is_ascii() {
        text.len()
    } else {
        text.chars().count()
    } as i64;
    let from = if start > 0 {
        start - 1
    } else if start == 0 {
        0
    } else {
        (n + start).max(0)
    };
    if from >= n {
        return Some(0..0);
    }
    let to = match len {
        Some(l) => from.saturating_add(l).min(n),
        None => n,
    };
    let (from, to) = (from as usize, to.max(from) as usize);
    if text.is_ascii() {
        return Some(from..to);
    }
    let byte = |c: usize| text.char_indices().nth(c).map_or(text.len(), |(b, _)| b);
    Some(byte(from)..byte(to))
}

/// Flink's `SPLIT_INDEX(s, sep, i)`: the 0-based `i`-th token (empty tokens kept); NULL when out of
/// range, when `s` is empty, or when `i` is negative. The answer is a piece of `text`. A separator
/// of one character is searched as a `char` (memchr), not by the two-way substring searcher.
pub(crate) fn split_index<'t>(text: &'t str, sep: &str, index: i64) -> Option<&'t str> {
    if index < 0 || text.is_empty() {
        return None;
    }
    if sep.is_empty() {
        return (index == 0).then_some(text);
    }
    let index = usize::try_from(index).ok()?;
    let mut chars = sep.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) => text.split(c).nth(index),
        _ => text.split(sep).nth(index),
    }
}

/// `TRIM`'s characters: a space by default; the characters of the second argument otherwise.
fn trimmed(text: &str, chars: &str, mode: i8) -> Range<usize> {
    let piece = match chars.as_bytes() {
        [b] if b.is_ascii() => {
            let c = char::from(*b);
            match mode {
                -1 => text.trim_start_matches(c),
                1 => text.trim_end_matches(c),
                _ => text.trim_matches(c),
            }
        }
        _ => {
            let is_trim = |c: char| chars.contains(c);
            match mode {
                -1 => text.trim_start_matches(is_trim),
                1 => text.trim_end_matches(is_trim),
                _ => text.trim_matches(is_trim),
            }
        }
    };
    let start = piece.as_ptr() as usize - text.as_ptr() as usize;
    start..start + piece.len()
}

/// The piece `range` of the string value `v`: a static piece of static text, no allocation.
fn piece_of(v: &Value, range: Range<usize>) -> Value {
    match v {
        Value::Str(t) => Value::Str(t.slice(range)),
        _ => Value::Null,
    }
}

/// The piece `piece` (a sub-slice of `v`'s text) of the string value `v`.
fn sub_of(v: &Value, piece: &str) -> Value {
    match v {
        Value::Str(t) => Value::Str(t.sub(piece)),
        _ => s(piece),
    }
}

/// Group `group` of the first match of `re` in `text` (NULL when there is no match, no such group,
/// or the group did not take part). The capture slots live on the stack and cover groups up to
/// `group` only (group 0 is a plain find); the engine finds the match span first and runs its
/// capture search on that span only.
fn regexp_extract<'t>(re: &meta::Regex, text: &'t str, group: usize) -> Option<&'t str> {
    if group >= re.captures_len() {
        return None;
    }
    const STACK_SLOTS: usize = 16;
    let wanted = 2 * (group + 1);
    let input = regex_automata::Input::new(text);
    let mut stack = [None; STACK_SLOTS];
    let mut heap = Vec::new();
    let slots = if wanted <= STACK_SLOTS {
        &mut stack[..wanted]
    } else {
        heap.resize(wanted, None);
        &mut heap[..]
    };
    re.search_slots(&input, slots)?;
    let (start, end) = (slots[2 * group]?, slots[2 * group + 1]?);
    text.get(start.get()..end.get())
}

/// Prepares REGEXP_EXTRACT's literal pattern (checked by [`compile_regex`] for its message).
fn prepare_extract(lits: &[Option<&Value>]) -> std::result::Result<Option<Prepared>, String> {
    match lits.get(1) {
        Some(Some(Value::Str(p))) => {
            compile_regex(p)?;
            let re = meta::Regex::new(p).map_err(|e| e.to_string())?;
            Ok(Some(match parameter_key(p) {
                Some(key) => Prepared::ExtractParameter(re, key),
                None => Prepared::Extract(re),
            }))
        }
        _ => Ok(None),
    }
}

/// `KEY=` when `pattern` is `(&|^)KEY=([^&]*)` with `KEY` of ASCII letters, digits and `_`
/// (no character special to a regex).
fn parameter_key(pattern: &str) -> Option<String> {
    let key = pattern.strip_prefix("(&|^)")?.strip_suffix("=([^&]*)")?;
    let plain = !key.is_empty() && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    plain.then(|| format!("{key}="))
}

/// Group 2 of `(&|^)KEY=([^&]*)`'s first match in `text` (`key_eq` is `KEY=`): the leftmost
/// match starts at the first `KEY=` at the start of the text or after a `&` (the regex would
/// start there, at the `&` or at `^`), and its group 2 runs to the next `&` or the end.
fn parameter<'t>(text: &'t str, key_eq: &str) -> Option<&'t str> {
    let mut from = 0;
    while let Some(i) = text.get(from..)?.find(key_eq) {
        let at = from + i;
        if at == 0 || text.as_bytes()[at - 1] == b'&' {
            let rest = &text[at + key_eq.len()..];
            return Some(&rest[..rest.find('&').unwrap_or(rest.len())]);
        }
        // `KEY=` starts with an ASCII byte: the next byte starts a character.
        from = at + 1;
    }
    None
}

fn initcap(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut start = true;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if start {
                out.extend(c.to_uppercase());
            } else {
                out.extend(c.to_lowercase());
            }
            start = false;
        } else {
            out.push(c);
            start = true;
        }
    }
    out
}

fn pad(text: &str, len: i64, filler: &str, left: bool) -> Option<String> {
    if len < 0 {
        return None;
    }
    let len = len as usize;
    let chars: Vec<char> = text.chars().collect();
    if chars.len() >= len {
        return Some(chars[..len].iter().collect());
    }
    let fill: Vec<char> = filler.chars().collect();
    if fill.is_empty() {
        return None;
    }
    let padding: String = fill.iter().cycle().take(len - chars.len()).collect();
    Some(if left {
        format!("{padding}{text}")
    } else {
        format!("{text}{padding}")
    })
}

fn one_string_same_type(r: &mut FunctionRegistry, name: &str, f: fn(&str) -> String) {
    r.register(
        name,
        ScalarFunction::new(
            name,
            &format!("{name}(<STRING>)"),
            |t, _| (t.len() == 1 && is_string(&t[0])).then(|| t[0].clone()),
            move |a, _| Ok(s(&f(str_arg(&a[0])))),
        ),
    );
}

/// `LOWER`/`UPPER`: ASCII text that the case mapping would not change is returned as it is (a
/// static input stays static, nothing is allocated); other text is mapped.
fn case_fn(r: &mut FunctionRegistry, name: &str, upper: bool) {
    r.register(
        name,
        ScalarFunction::new(
            name,
            &format!("{name}(<STRING>)"),
            |t, _| (t.len() == 1 && is_string(&t[0])).then(|| t[0].clone()),
            move |a, _| {
                let text = str_arg(&a[0]);
                let unchanged = if upper {
                    text.bytes()
                        .all(|b| b.is_ascii() && !b.is_ascii_lowercase())
                } else {
                    text.bytes()
                        .all(|b| b.is_ascii() && !b.is_ascii_uppercase())
                };
                Ok(match (unchanged, upper) {
                    (true, _) => a[0].clone(),
                    (false, true) => s(&text.to_uppercase()),
                    (false, false) => s(&text.to_lowercase()),
                })
            },
        ),
    );
}

fn trim_fn(r: &mut FunctionRegistry, name: &str, mode: i8) {
    r.register(
        name,
        ScalarFunction::new(
            name,
            &format!("{name}(<STRING>), {name}(<STRING>, <STRING>)"),
            |t, _| {
                (matches!(t.len(), 1 | 2) && t.iter().all(is_string))
                    .then(|| varchar(string_len(&t[0]), any_nullable(t)))
            },
            move |a, _| {
                let chars = a.get(1).map_or(" ", str_arg);
                Ok(piece_of(&a[0], trimmed(str_arg(&a[0]), chars, mode)))
            },
        ),
    );
}

pub(super) fn register(r: &mut FunctionRegistry) {
    case_fn(r, "LOWER", false);
    case_fn(r, "UPPER", true);
    one_string_same_type(r, "INITCAP", initcap);
    trim_fn(r, "TRIM", 0);
    trim_fn(r, "BTRIM", 0);
    trim_fn(r, "LTRIM", -1);
    trim_fn(r, "RTRIM", 1);
    for name in ["CHAR_LENGTH", "CHARACTER_LENGTH"] {
        r.register(
            name,
            ScalarFunction::new(
                name,
                &format!("{name}(<STRING>)"),
                |t, _| {
                    (t.len() == 1 && is_string(&t[0]))
                        .then(|| DataType::int().with_nullable(t[0].nullable))
                },
                |a, _| Ok(Value::Int(str_arg(&a[0]).chars().count() as i64)),
            ),
        );
    }
    for name in ["SUBSTRING", "SUBSTR"] {
        r.register(
            name,
            ScalarFunction::new(
                name,
                &format!("{name}(<STRING>, <INTEGER>), {name}(<STRING>, <INTEGER>, <INTEGER>)"),
                |t, _| {
                    (matches!(t.len(), 2 | 3) && is_string(&t[0]) && t[1..].iter().all(is_integer))
                        .then(|| varchar(string_len(&t[0]), true))
                },
                |a, _| {
                    let len = a.get(2).map(int_arg);
                    Ok(substring(str_arg(&a[0]), int_arg(&a[1]), len)
                        .map_or(Value::Null, |range| piece_of(&a[0], range)))
                },
            ),
        );
    }
    r.register(
        "CONCAT",
        ScalarFunction::new(
            "CONCAT",
            "CONCAT(<STRING>, …)",
            |t, _| (!t.is_empty() && t.iter().all(is_string)).then(|| string_type(any_nullable(t))),
            |a, _| {
                let mut out = String::new();
                for v in a {
                    out.push_str(str_arg(v));
                }
                Ok(s(&out))
            },
        ),
    );
    r.register(
        "CONCAT_WS",
        ScalarFunction::new(
            "CONCAT_WS",
            "CONCAT_WS(<STRING>, <STRING>, …)",
            |t, _| (t.len() >= 2 && t.iter().all(is_string)).then(|| string_type(t[0].nullable)),
            |a, _| {
                if a[0].is_null() {
                    return Ok(Value::Null);
                }
                let parts: Vec<&str> = a[1..]
                    .iter()
                    .filter(|v| !v.is_null())
                    .map(str_arg)
                    .collect();
                Ok(s(&parts.join(str_arg(&a[0]))))
            },
        )
        .non_strict(),
    );
    r.register(
        "REPLACE",
        ScalarFunction::new(
            "REPLACE",
            "REPLACE(<STRING>, <STRING>, <STRING>)",
            |t, _| (t.len() == 3 && t.iter().all(is_string)).then(|| string_type(any_nullable(t))),
            |a, _| {
                let from = str_arg(&a[1]);
                if from.is_empty() {
                    return Ok(a[0].clone());
                }
                Ok(s(&str_arg(&a[0]).replace(from, str_arg(&a[2]))))
            },
        ),
    );
    // POSITION(needle IN haystack) is bound as POSITION(needle, haystack); LOCATE(needle,
    // haystack[, from]). 1-based; 0 when absent.
    for name in ["POSITION", "LOCATE"] {
        r.register(
            name,
            ScalarFunction::new(
                name,
                &format!("{name}(<STRING>, <STRING>[, <INTEGER>])"),
                |t, _| {
                    let ok = match t.len() {
                        2 => is_string(&t[0]) && is_string(&t[1]),
                        3 => is_string(&t[0]) && is_string(&t[1]) && is_integer(&t[2]),
                        _ => false,
                    };
                    ok.then(|| DataType::int().with_nullable(any_nullable(t)))
                },
                |a, _| {
                    let needle = str_arg(&a[0]);
                    let hay: Vec<char> = str_arg(&a[1]).chars().collect();
                    let from = a.get(2).map(int_arg).unwrap_or(1);
                    if from < 1 {
                        return Ok(Value::Int(0));
                    }
                    let start = (from - 1) as usize;
                    if start > hay.len() {
                        return Ok(Value::Int(0));
                    }
                    let tail: String = hay[start..].iter().collect();
                    Ok(Value::Int(match tail.find(needle) {
                        Some(byte) => (start + tail[..byte].chars().count() + 1) as i64,
                        None => 0,
                    }))
                },
            ),
        );
    }
    for (name, left) in [("LPAD", true), ("RPAD", false)] {
        r.register(
            name,
            ScalarFunction::new(
                name,
                &format!("{name}(<STRING>, <INTEGER>, <STRING>)"),
                |t, _| {
                    (t.len() == 3 && is_string(&t[0]) && is_integer(&t[1]) && is_string(&t[2]))
                        .then(|| string_type(true))
                },
                move |a, _| {
                    Ok(pad(str_arg(&a[0]), int_arg(&a[1]), str_arg(&a[2]), left)
                        .map(|x| s(&x))
                        .unwrap_or(Value::Null))
                },
            ),
        );
    }
    r.register(
        "REPEAT",
        ScalarFunction::new(
            "REPEAT",
            "REPEAT(<STRING>, <INTEGER>)",
            |t, _| {
                (t.len() == 2 && is_string(&t[0]) && is_integer(&t[1]))
                    .then(|| string_type(any_nullable(t)))
            },
            |a, _| Ok(s(&str_arg(&a[0]).repeat(int_arg(&a[1]).max(0) as usize))),
        ),
    );
    r.register(
        "REVERSE",
        ScalarFunction::new(
            "REVERSE",
            "REVERSE(<STRING>)",
            |t, _| (t.len() == 1 && is_string(&t[0])).then(|| string_type(t[0].nullable)),
            |a, _| Ok(s(&str_arg(&a[0]).chars().rev().collect::<String>())),
        ),
    );
    r.register(
        "REGEXP_EXTRACT",
        ScalarFunction::new(
            "REGEXP_EXTRACT",
            "REGEXP_EXTRACT(<STRING>, <STRING>[, <INTEGER>])",
            |t, _| {
                let ok = match t.len() {
                    2 => is_string(&t[0]) && is_string(&t[1]),
                    3 => is_string(&t[0]) && is_string(&t[1]) && is_integer(&t[2]),
                    _ => false,
                };
                ok.then(|| string_type(true))
            },
            |a, p| {
                let group = a.get(2).map(int_arg).unwrap_or(0);
                if group < 0 {
                    return Ok(Value::Null);
                }
                let extract = |re: &meta::Regex| {
                    regexp_extract(re, str_arg(&a[0]), group as usize)
                        .map_or(Value::Null, |piece| sub_of(&a[0], piece))
                };
                Ok(match p {
                    Some(Prepared::ExtractParameter(_, key)) if group == 2 => {
                        parameter(str_arg(&a[0]), key)
                            .map_or(Value::Null, |piece| sub_of(&a[0], piece))
                    }
                    Some(Prepared::Extract(re) | Prepared::ExtractParameter(re, _)) => extract(re),
                    _ => match meta::Regex::new(str_arg(&a[1])) {
                        Ok(re) => extract(&re),
                        Err(_) => Value::Null,
                    },
                })
            },
        )
        .with_prepare(prepare_extract),
    );
    r.register(
        "REGEXP_REPLACE",
        ScalarFunction::new(
            "REGEXP_REPLACE",
            "REGEXP_REPLACE(<STRING>, <STRING>, <STRING>)",
            |t, _| (t.len() == 3 && t.iter().all(is_string)).then(|| string_type(true)),
            |a, p| {
                Ok(with_regex(p, str_arg(&a[1]), |re| {
                    s(&re.replace_all(str_arg(&a[0]), str_arg(&a[2])))
                }))
            },
        )
        .with_prepare(|l| prepare_regex_at(l, 1)),
    );
    r.register(
        "REGEXP",
        ScalarFunction::new(
            "REGEXP",
            "REGEXP(<STRING>, <STRING>)",
            |t, _| {
                (t.len() == 2 && t.iter().all(is_string))
                    .then(|| DataType::boolean().with_nullable(true))
            },
            |a, p| {
                Ok(with_regex(p, str_arg(&a[1]), |re| {
                    Value::Bool(re.is_match(str_arg(&a[0])))
                }))
            },
        )
        .with_prepare(|l| prepare_regex_at(l, 1)),
    );
    r.register(
        "SPLIT_INDEX",
        ScalarFunction::new(
            "SPLIT_INDEX",
            "SPLIT_INDEX(<STRING>, <STRING>, <INTEGER>)",
            |t, _| {
                (t.len() == 3 && is_string(&t[0]) && is_string(&t[1]) && is_integer(&t[2]))
                    .then(|| string_type(true))
            },
            |a, _| {
                Ok(split_index(str_arg(&a[0]), str_arg(&a[1]), int_arg(&a[2]))
                    .map_or(Value::Null, |piece| sub_of(&a[0], piece)))
            },
        ),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parameter_is_found_as_the_regex_finds_it() {
        let key = parameter_key("(&|^)channel_id=([^&]*)").unwrap();
        assert_eq!(key, "channel_id=");
        for p in [
            "(&|^)a.b=([^&]*)",
            "(&|^)=([^&]*)",
            "(&|^)k=([^&]*)x",
            "(&|^)k=(.*)",
        ] {
            assert_eq!(parameter_key(p), None, "{p}");
        }
        let re = meta::Regex::new("(&|^)channel_id=([^&]*)").unwrap();
        let texts = [
            "",
            "channel_id=",
            "channel_id=7",
            "channel_id=7&k=v",
            "https://x.com/a/b/c?channel_id=7&k=v",
            "a=1&channel_id=99&b",
            "a=1&xchannel_id=5&channel_id=6",
            "xchannel_id=5",
            "&channel_id=&",
            "&&channel_id=1&&",
            "a&channel_id=é&ü",
            "ü&channel_id=a\nb&c",
            "channel_id=1&channel_id=2",
            "chchannel_id=3&channel_id",
            "channel_idchannel_id=4",
            "&channel_id",
        ];
        for t in texts {
            assert_eq!(parameter(t, &key), regexp_extract(&re, t, 2), "{t:?}");
        }
    }
}
