//! Reading REST bodies: JSON of any sane depth ([`parse_json`]) and the message of an error
//! answer ([`error_message`]).

pub(crate) fn snippet(s: &str, max: usize) -> String {
    let s = s.trim();
    let line = s.lines().next().unwrap_or("");
    if line.chars().count() > max || line.len() < s.len() {
        let cut: String = line.chars().take(max).collect();
        format!("{cut}…")
    } else {
        line.to_string()
    }
}

/// The message of an error body: Flink's `{"errors":["…", …]}` (first line of each, since Flink
/// appends server-side stack traces), otherwise the first line of the body as text.
pub fn error_message(body: &[u8]) -> Option<String> {
    if let Ok(answer) = serde_json::from_slice::<sluice_rest_api::ErrorBody>(body) {
        let parts: Vec<String> = answer
            .errors
            .iter()
            .map(|e| snippet(e, 200))
            .filter(|e| !e.is_empty())
            .collect();
        if !parts.is_empty() {
            return Some(parts.join("; "));
        }
    }
    let text = String::from_utf8_lossy(body);
    let s = snippet(&text, 200);
    (!s.is_empty()).then_some(s)
}

/// Deepest JSON nesting [`parse_json`] reads: a flame graph of Flink's default stack depth
/// (100 frames) nests about 200 levels, beyond serde_json's default limit of 128.
pub const MAX_JSON_DEPTH: usize = 1024;

/// Parses JSON nested up to [`MAX_JSON_DEPTH`] levels (checked first with a scan of the bytes,
/// so a hostile body cannot exhaust the stack).
pub fn parse_json(body: &[u8]) -> Result<serde_json::Value, String> {
    let (mut depth, mut max, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in body {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    if max > MAX_JSON_DEPTH {
        return Err(format!(
            "nested {max} levels deep (at most {MAX_JSON_DEPTH} are read)"
        ));
    }
    let mut de = serde_json::Deserializer::from_slice(body);
    de.disable_recursion_limit();
    let v = serde::Deserialize::deserialize(&mut de).map_err(|e| e.to_string())?;
    de.end().map_err(|e| e.to_string())?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flink_error_messages() {
        let body = br#"{"errors":["Job could not be found.","<Exception on server side:\norg.apache...>"]}"#;
        assert_eq!(
            error_message(body).unwrap(),
            "Job could not be found.; <Exception on server side:…"
        );
        assert_eq!(error_message(b"plain text\nmore").unwrap(), "plain text…");
        assert_eq!(error_message(b""), None);
    }

    #[test]
    fn deep_json_is_read_and_too_deep_json_refused() {
        let deep = "[".repeat(300) + &"]".repeat(300);
        assert!(parse_json(deep.as_bytes()).is_ok());
        let hostile = "[".repeat(5000) + &"]".repeat(5000);
        let e = parse_json(hostile.as_bytes()).unwrap_err();
        assert!(e.contains("5000 levels"), "{e}");
        let quoted = format!("\"{}\"", "[".repeat(5000));
        assert!(parse_json(quoted.as_bytes()).is_ok());
    }
}
