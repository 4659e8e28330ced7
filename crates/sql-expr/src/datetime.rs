//! Civil dates and times without a time-zone database: days ↔ year/month/day (proleptic
//! Gregorian, Howard Hinnant's algorithms), the text forms of `DATE`/`TIME`/`TIMESTAMP`, and the
//! Java `SimpleDateFormat` patterns `DATE_FORMAT`, `TO_TIMESTAMP`, `FROM_UNIXTIME` take.
//!
//! `TIMESTAMP_LTZ` values are shown in the session time zone; Sluice's session time zone is UTC
//! for now (Flink's `table.local-time-zone` other than UTC is refused by the planner).

use crate::value::Timestamp;

/// Milliseconds in a day.
pub const MILLIS_PER_DAY: i64 = 86_400_000;

/// Days since 1970-01-01 of a civil date.
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date (year, month 1..=12, day 1..=31) of days since 1970-01-01.
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        _ => 28,
    }
}

/// The fields of a timestamp.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Civil {
    /// Year.
    pub year: i64,
    /// Month, 1..=12.
    pub month: u32,
    /// Day of month, 1..=31.
    pub day: u32,
    /// Hour, 0..=23.
    pub hour: u32,
    /// Minute.
    pub minute: u32,
    /// Second.
    pub second: u32,
    /// Nanoseconds within the second.
    pub nano: u32,
}

impl Civil {
    /// The fields of a timestamp.
    pub fn of(ts: Timestamp) -> Civil {
        let days = ts.millis.div_euclid(MILLIS_PER_DAY);
        let ms = ts.millis.rem_euclid(MILLIS_PER_DAY);
        let (year, month, day) = civil_from_days(days);
        Civil {
            year,
            month,
            day,
            hour: (ms / 3_600_000) as u32,
            minute: (ms / 60_000 % 60) as u32,
            second: (ms / 1000 % 60) as u32,
            nano: (ms % 1000) as u32 * 1_000_000 + ts.nanos_of_milli,
        }
    }

    /// The timestamp of these fields, if they are a valid date and time.
    pub fn to_timestamp(self) -> Option<Timestamp> {
        if !(1..=12).contains(&self.month)
            || self.day == 0
            || self.day > days_in_month(self.year, self.month)
            || self.hour > 23
            || self.minute > 59
            || self.second > 59
            || self.nano >= 1_000_000_000
        {
            return None;
        }
        let days = days_from_civil(self.year, self.month, self.day);
        let ms = days * MILLIS_PER_DAY
            + i64::from(self.hour) * 3_600_000
            + i64::from(self.minute) * 60_000
            + i64::from(self.second) * 1000
            + i64::from(self.nano / 1_000_000);
        Some(Timestamp {
            millis: ms,
            nanos_of_milli: self.nano % 1_000_000,
        })
    }

    /// Day of week, 1 = Monday … 7 = Sunday.
    pub fn iso_weekday(&self) -> u32 {
        let days = days_from_civil(self.year, self.month, self.day);
        (days + 3).rem_euclid(7) as u32 + 1
    }
}

/// Adds months to a timestamp, clamping the day to the month's end (Flink's `addMonths`).
pub fn add_months(ts: Timestamp, months: i64) -> Timestamp {
    let c = Civil::of(ts);
    let total = c.year * 12 + i64::from(c.month) - 1 + months;
    let year = total.div_euclid(12);
    let month = total.rem_euclid(12) as u32 + 1;
    let day = c.day.min(days_in_month(year, month));
    Civil {
        year,
        month,
        day,
        ..c
    }
    .to_timestamp()
    .unwrap_or(ts)
}

/// `yyyy-MM-dd` of days since the epoch.
pub fn format_date(days: i64) -> String {
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}")
}

/// `HH:mm:ss[.fff]` of nanoseconds since midnight, with `precision` fractional digits.
pub fn format_time(nanos: i64, precision: u8) -> String {
    let secs = nanos / 1_000_000_000;
    let frac = (nanos % 1_000_000_000) as u32;
    let mut s = format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
    push_fraction(&mut s, frac, precision);
    s
}

fn push_fraction(s: &mut String, nano: u32, precision: u8) {
    if precision > 0 {
        let digits = format!("{nano:09}");
        s.push('.');
        s.push_str(&digits[..usize::from(precision.min(9))]);
    }
}

/// `yyyy-MM-dd HH:mm:ss[.fff]` with `precision` fractional digits (Flink's cast to string).
pub fn format_timestamp(ts: Timestamp, precision: u8) -> String {
    let c = Civil::of(ts);
    let mut s = format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}",
        c.year, c.month, c.day, c.hour, c.minute, c.second
    );
    push_fraction(&mut s, c.nano, precision);
    s
}

/// Reads `yyyy-M-d` at the start of `s`; the rest of the text.
fn parse_date_part(s: &str) -> Option<((i64, u32, u32), &str)> {
    let mut parts = s.splitn(3, '-');
    let y: i64 = parts.next()?.trim().parse().ok()?;
    let m: u32 = parts.next()?.parse().ok()?;
    let rest = parts.next()?;
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let d: u32 = rest[..end].parse().ok()?;
    Some(((y, m, d), &rest[end..]))
}

/// Reads `H:m[:s[.fffffffff]]`: (hour, minute, second, nano).
fn parse_time_part(s: &str) -> Option<(u32, u32, u32, u32)> {
    let (hms, frac) = match s.split_once('.') {
        Some((a, b)) => (a, Some(b)),
        None => (s, None),
    };
    let mut it = hms.split(':');
    let h: u32 = it.next()?.parse().ok()?;
    let mi: u32 = it.next()?.parse().ok()?;
    let sec: u32 = match it.next() {
        Some(x) => x.parse().ok()?,
        None => 0,
    };
    if it.next().is_some() {
        return None;
    }
    let nano = match frac {
        Some(f) if !f.is_empty() && f.len() <= 9 && f.bytes().all(|b| b.is_ascii_digit()) => {
            format!("{f:0<9}").parse().ok()?
        }
        Some(_) => return None,
        None => 0,
    };
    Some((h, mi, sec, nano))
}

/// Parses `yyyy-MM-dd[ HH:mm[:ss[.f…]]]` (also with `T`), as Flink's cast from string does.
pub fn parse_timestamp(s: &str) -> Option<Timestamp> {
    let s = s.trim();
    let ((year, month, day), rest) = parse_date_part(s)?;
    let (hour, minute, second, nano) = if rest.is_empty() {
        (0, 0, 0, 0)
    } else {
        let rest = rest.strip_prefix([' ', 'T'])?;
        parse_time_part(rest.trim())?
    };
    Civil {
        year,
        month,
        day,
        hour,
        minute,
        second,
        nano,
    }
    .to_timestamp()
}

/// Parses `yyyy-MM-dd` into days since the epoch.
pub fn parse_date(s: &str) -> Option<i64> {
    let ((y, m, d), rest) = parse_date_part(s.trim())?;
    if !rest.is_empty() || m == 0 || m > 12 || d == 0 || d > days_in_month(y, m) {
        return None;
    }
    Some(days_from_civil(y, m, d))
}

/// Parses `HH:mm[:ss[.f…]]` into nanoseconds since midnight.
pub fn parse_time(s: &str) -> Option<i64> {
    let (h, m, sec, nano) = parse_time_part(s.trim())?;
    if h > 23 || m > 59 || sec > 59 {
        return None;
    }
    Some(
        (i64::from(h) * 3600 + i64::from(m) * 60 + i64::from(sec)) * 1_000_000_000
            + i64::from(nano),
    )
}

/// One piece of a compiled `SimpleDateFormat` pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FormatItem {
    /// Text copied as is.
    Literal(String),
    /// A pattern letter and how many times it is repeated.
    Field(char, usize),
}

/// The pattern letters Sluice implements (Java's `SimpleDateFormat` meanings).
const LETTERS: &str = "yMdHhmsSaEkK";

/// Compiles a `SimpleDateFormat` pattern; an error names a letter Sluice does not implement.
pub fn compile_format(pattern: &str) -> Result<Vec<FormatItem>, String> {
    let mut items = Vec::new();
    let mut chars = pattern.chars().peekable();
    let mut literal = String::new();
    while let Some(c) = chars.next() {
        if c == '\'' {
            // 'text' is literal text; '' is a quote.
            if chars.peek() == Some(&'\'') {
                chars.next();
                literal.push('\'');
                continue;
            }
            loop {
                match chars.next() {
                    Some('\'') if chars.peek() == Some(&'\'') => {
                        chars.next();
                        literal.push('\'');
                    }
                    Some('\'') | None => break,
                    Some(x) => literal.push(x),
                }
            }
        } else if c.is_ascii_alphabetic() {
            if !LETTERS.contains(c) {
                return Err(format!(
                    "the date format letter '{c}' is not supported (supported: {LETTERS})"
                ));
            }
            let mut n = 1;
            while chars.peek() == Some(&c) {
                chars.next();
                n += 1;
            }
            if !literal.is_empty() {
                items.push(FormatItem::Literal(std::mem::take(&mut literal)));
            }
            items.push(FormatItem::Field(c, n));
        } else {
            literal.push(c);
        }
    }
    if !literal.is_empty() {
        items.push(FormatItem::Literal(literal));
    }
    Ok(items)
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

fn pad(out: &mut String, v: i64, width: usize) {
    out.push_str(&format!("{v:0width$}"));
}

/// Formats a timestamp with a compiled pattern.
pub fn format_with(ts: Timestamp, items: &[FormatItem]) -> String {
    let c = Civil::of(ts);
    let mut out = String::new();
    for item in items {
        match item {
            FormatItem::Literal(s) => out.push_str(s),
            FormatItem::Field(letter, n) => {
                let n = *n;
                match letter {
                    'y' if n == 2 => pad(&mut out, c.year.rem_euclid(100), 2),
                    'y' => pad(&mut out, c.year, n),
                    'M' if n >= 4 => out.push_str(MONTHS[c.month as usize - 1]),
                    'M' if n == 3 => out.push_str(&MONTHS[c.month as usize - 1][..3]),
                    'M' => pad(&mut out, i64::from(c.month), n),
                    'd' => pad(&mut out, i64::from(c.day), n),
                    'H' => pad(&mut out, i64::from(c.hour), n),
                    'k' => pad(
                        &mut out,
                        i64::from(if c.hour == 0 { 24 } else { c.hour }),
                        n,
                    ),
                    'K' => pad(&mut out, i64::from(c.hour % 12), n),
                    'h' => pad(
                        &mut out,
                        i64::from(if c.hour.is_multiple_of(12) {
                            12
                        } else {
                            c.hour % 12
                        }),
                        n,
                    ),
                    'm' => pad(&mut out, i64::from(c.minute), n),
                    's' => pad(&mut out, i64::from(c.second), n),
                    'S' => pad(&mut out, i64::from(c.nano / 1_000_000), n),
                    'a' => out.push_str(if c.hour < 12 { "AM" } else { "PM" }),
                    'E' => {
                        let day = DAYS[c.iso_weekday() as usize - 1];
                        out.push_str(if n >= 4 { day } else { &day[..3] });
                    }
                    _ => {}
                }
            }
        }
    }
    out
}

/// Parses text with a compiled pattern (numeric fields only, plus `a`); `None` if it does not fit.
pub fn parse_with(text: &str, items: &[FormatItem]) -> Option<Timestamp> {
    let mut c = Civil {
        year: 1970,
        month: 1,
        day: 1,
        hour: 0,
        minute: 0,
        second: 0,
        nano: 0,
    };
    let mut pm = None;
    let mut rest = text;
    for (i, item) in items.iter().enumerate() {
        match item {
            FormatItem::Literal(s) => rest = rest.strip_prefix(s.as_str())?,
            FormatItem::Field('a', _) => {
                if let Some(r) = rest.strip_prefix("AM") {
                    pm = Some(false);
                    rest = r;
                } else {
                    rest = rest.strip_prefix("PM")?;
                    pm = Some(true);
                }
            }
            FormatItem::Field(letter, n) => {
                // Adjacent numeric fields read exactly their width; otherwise read all digits.
                let next_numeric = matches!(items.get(i + 1), Some(FormatItem::Field(..)));
                let max = if next_numeric { *n } else { 18 };
                let len = rest
                    .bytes()
                    .take(max)
                    .take_while(u8::is_ascii_digit)
                    .count();
                if len == 0 {
                    return None;
                }
                let v: i64 = rest[..len].parse().ok()?;
                rest = &rest[len..];
                let v32 = u32::try_from(v).ok()?;
                match letter {
                    'y' => c.year = if *n == 2 { 2000 + v } else { v },
                    'M' => c.month = v32,
                    'd' => c.day = v32,
                    'H' | 'k' | 'K' | 'h' => {
                        c.hour = if *letter == 'k' && v32 == 24 { 0 } else { v32 }
                    }
                    'm' => c.minute = v32,
                    's' => c.second = v32,
                    'S' => c.nano = v32.checked_mul(1_000_000)?,
                    _ => return None,
                }
            }
        }
    }
    if !rest.is_empty() {
        return None;
    }
    if let Some(pm) = pm {
        c.hour = c.hour % 12 + if pm { 12 } else { 0 };
    }
    c.to_timestamp()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_round_trips() {
        for days in [-800_000, -1, 0, 1, 59, 365 * 30, 20_000, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
        assert_eq!(format_date(0), "1970-01-01");
        assert_eq!(parse_date("2015-07-05"), Some(16_621));
    }

    #[test]
    fn simple_date_format_patterns() {
        let ts = parse_timestamp("2015-07-05 21:03:02.045").unwrap();
        let f = compile_format("yy/M/d h:m:s a EEE EEEE MMM MMMM").unwrap();
        assert_eq!(format_with(ts, &f), "15/7/5 9:3:2 PM Sun Sunday Jul July");
        let f = compile_format("yyyy-MM-dd HH:mm:ss.SSS").unwrap();
        assert_eq!(format_with(ts, &f), "2015-07-05 21:03:02.045");
        assert_eq!(parse_with("2015-07-05 21:03:02.045", &f), Some(ts));
        let f = compile_format("dd/MM/yyyy").unwrap();
        assert_eq!(
            parse_with("05/07/2015", &f),
            parse_timestamp("2015-07-05 00:00:00")
        );
        assert!(compile_format("yyyy-QQ").unwrap_err().contains("'Q'"));
        assert_eq!(format_with(ts, &compile_format("'T'''HH").unwrap()), "T'21");
    }
}
