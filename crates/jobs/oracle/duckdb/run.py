"""DuckDB oracle for the official Nexmark SQL queries (`sluice nexmark --sql --verify`).

Usage: run.py EVENTS_CSV QUERY_SQL OUT_JSONL [SIDE_INPUT_CSV]

Reads the events as a flat csv table of 26 columns (the layout of Flink's event dump in
tests/fixtures/flink/nexmark-sql/: `event_type`, then person `p_*`, auction `a_*` and bid `b_*`
fields, NULL for the other kinds; `.gz` decompressed), builds the views `person`, `auction` and
`bid` with the official views' column names, runs QUERY_SQL (our own DuckDB translation of one
official query, beside this file) and writes its rows to OUT_JSONL, one JSON array per row:
integers as numbers, DECIMALs as their text, TIMESTAMPs as epoch milliseconds (UTC), text as
strings, NULL as null. Shares no code with Sluice. Exit status 3: DuckDB is not importable.
"""

import datetime
import decimal
import json
import sys

try:
    import duckdb
except ImportError:
    sys.stderr.write("the duckdb module is not importable\n")
    sys.exit(3)

COLUMNS = [
    ("event_type", "INTEGER"),
    ("p_id", "BIGINT"), ("p_name", "VARCHAR"), ("p_emailAddress", "VARCHAR"),
    ("p_creditCard", "VARCHAR"), ("p_city", "VARCHAR"), ("p_state", "VARCHAR"),
    ("p_dateTime", "TIMESTAMP"), ("p_extra", "VARCHAR"),
    ("a_id", "BIGINT"), ("a_itemName", "VARCHAR"), ("a_description", "VARCHAR"),
    ("a_initialBid", "BIGINT"), ("a_reserve", "BIGINT"), ("a_dateTime", "TIMESTAMP"),
    ("a_expires", "TIMESTAMP"), ("a_seller", "BIGINT"), ("a_category", "BIGINT"),
    ("a_extra", "VARCHAR"),
    ("b_auction", "BIGINT"), ("b_bidder", "BIGINT"), ("b_price", "BIGINT"),
    ("b_channel", "VARCHAR"), ("b_url", "VARCHAR"), ("b_dateTime", "TIMESTAMP"),
    ("b_extra", "VARCHAR"),
]

VIEWS = """
CREATE VIEW person AS SELECT p_id AS id, p_name AS name, p_emailAddress AS emailAddress,
    p_creditCard AS creditCard, p_city AS city, p_state AS state, p_dateTime AS dateTime,
    p_extra AS extra
  FROM events WHERE event_type = 0;
CREATE VIEW auction AS SELECT a_id AS id, a_itemName AS itemName, a_description AS description,
    a_initialBid AS initialBid, a_reserve AS reserve, a_dateTime AS dateTime,
    a_expires AS expires, a_seller AS seller, a_category AS category, a_extra AS extra
  FROM events WHERE event_type = 1;
CREATE VIEW bid AS SELECT b_auction AS auction, b_bidder AS bidder, b_price AS price,
    b_channel AS channel, b_url AS url, b_dateTime AS dateTime, b_extra AS extra
  FROM events WHERE event_type = 2;
"""

EPOCH = datetime.datetime(1970, 1, 1)


def cell(v):
    if isinstance(v, datetime.datetime):
        return (v - EPOCH) // datetime.timedelta(milliseconds=1)
    if isinstance(v, decimal.Decimal):
        return str(v)
    return v


def main():
    events, query_sql, out = sys.argv[1], sys.argv[2], sys.argv[3]
    con = duckdb.connect()
    columns = "{" + ", ".join(f"'{n}': '{t}'" for n, t in COLUMNS) + "}"
    # Flink's csv: no header, `"` quotes doubled inside, no escape character; empty is NULL.
    con.execute(
        "CREATE TABLE events AS SELECT * FROM read_csv(?, header = false, delim = ',', "
        "quote = '\"', escape = '\"', nullstr = '', auto_detect = false, "
        f"columns = {columns})",
        [events],
    )
    con.execute(VIEWS)
    if len(sys.argv) > 4:
        con.execute(
            "CREATE TABLE side_input AS SELECT * FROM read_csv(?, header = false, "
            "auto_detect = false, columns = {'key': 'BIGINT', 'value': 'VARCHAR'})",
            [sys.argv[4]],
        )
    with open(query_sql, encoding="utf-8") as f:
        query = f.read()
    rows = con.execute(query).fetchall()
    with open(out, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps([cell(v) for v in row]) + "\n")


if __name__ == "__main__":
    main()
