//! Flink's `url` option (`jdbc:postgresql://HOST[:PORT][,HOST2[:PORT2]]/DB[?k=v&…]`, the
//! PostgreSQL JDBC driver's forms) read into a libpq connection string (`host=… port=…
//! dbname=… user=… password=…`) that both PostgreSQL clients under Sluice take.
//!
//! `username` / `password` (Flink's options) win over the URL's `user` / `password` parameters,
//! as the driver's connection properties do. Of the driver's other parameters the ones with a
//! libpq equivalent are read (`ApplicationName`, `connectTimeout` in seconds, `currentSchema`,
//! `sslmode` `disable`/`allow`/`prefer`: Sluice connects without TLS); any other is refused by
//! name rather than ignored.

/// A parsed URL: the connection string, and the URL as shown in messages (no password).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PgConnection {
    /// libpq key-value form, values quoted.
    pub conn: String,
    /// `jdbc:postgresql://host:port/db` (parameters left out: they may hold a password).
    pub display: String,
}

const PREFIX: &str = "jdbc:postgresql:";

/// The URL's parameters Sluice reads.
const PARAMETERS: &[&str] = &[
    "user",
    "password",
    "ApplicationName",
    "connectTimeout",
    "currentSchema",
    "sslmode",
];

/// `value` as a libpq connection-string value: single-quoted, `\` and `'` escaped.
fn quote(value: &str) -> String {
    format!("'{}'", value.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// `%XX` decoded (the driver percent-decodes parameter values).
fn percent_decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("'{s}': a '%' not followed by two hex digits"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("'{s}': not UTF-8 once decoded"))
}

/// Reads `url` with the table's `username` and `password` options; the error says what is wrong
/// with the URL (the caller names the option).
pub fn parse(
    url: &str,
    username: Option<&str>,
    password: Option<&str>,
) -> Result<PgConnection, String> {
    let rest = url.trim().strip_prefix(PREFIX).ok_or_else(|| {
        format!("'{url}': Sluice's jdbc connector speaks PostgreSQL only: expected jdbc:postgresql://HOST:PORT/DATABASE")
    })?;
    let (location, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (hosts, database) = match location.strip_prefix("//") {
        Some(authority_and_path) => {
            let (authority, path) = authority_and_path
                .split_once('/')
                .unwrap_or((authority_and_path, ""));
            (authority, path)
        }
        // `jdbc:postgresql:db` and `jdbc:postgresql:/`: the local server.
        None => ("", location.trim_start_matches('/')),
    };
    if hosts.contains('@') {
        // Never echo it: it may hold a password.
        return Err(
            "the PostgreSQL driver takes no USER@HOST in its URL: give 'username' and \
             'password' (or ?user=…&password=…)"
                .into(),
        );
    }
    let mut host_list = Vec::new();
    let mut port_list = Vec::new();
    for h in hosts.split(',').filter(|h| !h.is_empty()) {
        let (host, port) = if let Some(v6) = h.strip_prefix('[') {
            let (addr, after) = v6
                .split_once(']')
                .ok_or_else(|| format!("'{url}': an IPv6 host without its closing ']'"))?;
            (addr, after.strip_prefix(':'))
        } else {
            match h.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (h, None),
            }
        };
        if host.is_empty() {
            return Err(format!("'{url}': an empty host name"));
        }
        let port = match port {
            Some(p) => p
                .parse::<u16>()
                .map_err(|_| format!("'{url}': port '{p}' is not a port number"))?,
            None => 5432,
        };
        host_list.push(host.to_string());
        port_list.push(port.to_string());
    }
    if host_list.is_empty() {
        host_list.push("localhost".into());
        port_list.push("5432".into());
    }
    let mut pairs: Vec<(&str, String)> =
        vec![("host", host_list.join(",")), ("port", port_list.join(","))];
    if database.contains('/') {
        return Err(format!(
            "'{url}': expected jdbc:postgresql://HOST:PORT/DATABASE"
        ));
    }
    if !database.is_empty() {
        pairs.push(("dbname", percent_decode(database)?));
    }
    let (mut user, mut pass) = (None, None);
    for param in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = param.split_once('=').unwrap_or((param, ""));
        let v = percent_decode(v)?;
        match k {
            "user" => user = Some(v),
            "password" => pass = Some(v),
            "ApplicationName" => pairs.push(("application_name", v)),
            "connectTimeout" => {
                v.parse::<u32>().map_err(|_| {
                    format!("'{url}': connectTimeout '{v}' is not a number of seconds")
                })?;
                pairs.push(("connect_timeout", v));
            }
            "currentSchema" => pairs.push(("options", format!("-c search_path={v}"))),
            "sslmode" => match v.as_str() {
                "disable" | "allow" | "prefer" => pairs.push(("sslmode", "disable".into())),
                _ => {
                    return Err(format!(
                        "'{url}': sslmode '{v}': Sluice's PostgreSQL clients connect without TLS \
                         (disable, allow or prefer)"
                    ))
                }
            },
            _ => {
                let close = sluice_sql::catalog::nearest(k, PARAMETERS.iter().copied());
                let hint = if close.is_empty() {
                    format!(" (supported: {})", PARAMETERS.join(", "))
                } else {
                    format!(" (did you mean {}?)", close.join(", "))
                };
                return Err(format!(
                    "'{url}': URL parameter '{k}' is not supported{hint}"
                ));
            }
        }
    }
    if let Some(u) = username.map(str::to_string).or(user) {
        pairs.push(("user", u));
    }
    if let Some(p) = password.map(str::to_string).or(pass) {
        pairs.push(("password", p));
    }
    let conn = pairs
        .iter()
        .map(|(k, v)| format!("{k}={}", quote(v)))
        .collect::<Vec<_>>()
        .join(" ");
    Ok(PgConnection {
        conn,
        display: format!("{PREFIX}{location}"),
    })
}

#[allow(clippy::unwrap_used)]
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_drivers_forms_read_into_a_connection_string() {
        let c = parse(
            "jdbc:postgresql://db.example:6543/shop",
            Some("flink"),
            Some("s'cr\\t"),
        )
        .unwrap();
        assert_eq!(
            c.conn,
            "host='db.example' port='6543' dbname='shop' user='flink' password='s\\'cr\\\\t'"
        );
        assert_eq!(c.display, "jdbc:postgresql://db.example:6543/shop");
        let c = parse(
            "jdbc:postgresql://h/db?user=a&password=p%26q&currentSchema=s",
            None,
            None,
        )
        .unwrap();
        assert_eq!(
            c.conn,
            "host='h' port='5432' dbname='db' options='-c search_path=s' user='a' password='p&q'"
        );
        assert!(!c.display.contains("p%26q"));
        let c = parse("jdbc:postgresql:shop", Some("u"), None).unwrap();
        assert_eq!(
            c.conn,
            "host='localhost' port='5432' dbname='shop' user='u'"
        );
        let c = parse("jdbc:postgresql://[::1]:5433,h2/db", None, None).unwrap();
        assert_eq!(c.conn, "host='::1,h2' port='5433,5432' dbname='db'");
        // The PostgreSQL client's own parser reads it back.
        let c = parse(
            "jdbc:postgresql://h:1/d?ApplicationName=my%20app",
            Some("u"),
            Some("p"),
        )
        .unwrap();
        let e =
            sluice_postgres::Endpoint::parse(&c.conn, std::time::Duration::from_secs(1)).unwrap();
        assert_eq!(e.address(), "h:1");
    }

    #[test]
    fn what_does_not_fit_is_refused_by_name() {
        let e = parse("jdbc:mysql://h/db", None, None).unwrap_err();
        assert!(e.contains("PostgreSQL only"), "{e}");
        let e = parse("jdbc:postgresql://h:x/db", None, None).unwrap_err();
        assert!(e.contains("port 'x'"), "{e}");
        let e = parse("jdbc:postgresql://h/db?ssl=true", None, None).unwrap_err();
        assert!(e.contains("'ssl'") && e.contains("sslmode"), "{e}");
        let e = parse("jdbc:postgresql://h/db?sslmode=require", None, None).unwrap_err();
        assert!(e.contains("without TLS"), "{e}");
        let e = parse("jdbc:postgresql://u:secret@h/db", None, None).unwrap_err();
        assert!(e.contains("USER@HOST") && !e.contains("secret"), "{e}");
    }
}
