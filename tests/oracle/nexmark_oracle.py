"""DuckDB oracle for the Nexmark queries (docs/src/reference/nexmark-generator.md#correctness).

Usage: nexmark_oracle.py EVENTS_CSV OUT_DIR QUERY [QUERY ...]   (writes OUT_DIR/<query>.csv)

Reads the one-table event export written by `sluice nexmark --export` (the ground truth both
the engine and DuckDB read), runs the query's SQL, and writes its rows as CSV lines in the
engine's canonical form (Sluice's one CSV rule, crates/csv: integers as digits, text quoted
when it is empty, holds a comma, quote or line break, or has edge spaces; NULL as an empty
field), sorted. Shares no code with the engine.
"""

import sys

import duckdb

SCHEMA = {
    "event_id": "UBIGINT", "event_type": "INTEGER", "ts": "BIGINT",
    "person_id": "BIGINT", "person_name": "VARCHAR", "person_email": "VARCHAR",
    "person_credit_card": "VARCHAR", "person_city": "VARCHAR", "person_state": "VARCHAR",
    "auction_id": "BIGINT", "auction_item_name": "VARCHAR", "auction_description": "VARCHAR",
    "auction_initial_bid": "BIGINT", "auction_reserve": "BIGINT", "auction_expires": "BIGINT",
    "auction_seller": "BIGINT", "auction_category": "BIGINT", "bid_auction": "BIGINT",
    "bid_bidder": "BIGINT", "bid_price": "BIGINT", "bid_channel": "VARCHAR", "bid_url": "VARCHAR",
    "extra": "VARCHAR",
}

VIEWS = """
CREATE VIEW person AS SELECT person_id AS id, person_name AS name, person_email AS emailAddress,
    person_credit_card AS creditCard, person_city AS city, person_state AS state,
    ts AS dateTime, extra FROM events WHERE event_type = 0;
CREATE VIEW auction AS SELECT auction_id AS id, auction_item_name AS itemName,
    auction_description AS description, auction_initial_bid AS initialBid,
    auction_reserve AS reserve, ts AS dateTime, auction_expires AS expires,
    auction_seller AS seller, auction_category AS category, extra FROM events WHERE event_type = 1;
CREATE VIEW bid AS SELECT bid_auction AS auction, bid_bidder AS bidder, bid_price AS price,
    bid_channel AS channel, bid_url AS url, ts AS dateTime, extra FROM events WHERE event_type = 2;
"""

# 0.908 * price as an exact DECIMAL(23,3) printed with three decimals (prices are positive).
MILLI = "printf('%d.%03d', (price * 908) // 1000, (price * 908) % 1000)"

QUERIES = {
    "q0": "SELECT auction, bidder, price, dateTime, extra FROM bid",
    "q1": f"SELECT auction, bidder, {MILLI}, dateTime, extra FROM bid",
    "q2": "SELECT auction, price FROM bid WHERE auction % 123 = 0",
    "q3": """SELECT P.name, P.city, P.state, A.id FROM auction A JOIN person P ON A.seller = P.id
             WHERE A.category = 10 AND P.state IN ('OR', 'ID', 'CA')""",
    # Final table of the updating query: AVG(BIGINT) truncated like Flink's.
    "q4": """WITH Q AS (
               SELECT A.id, A.category, max(B.price) AS final
               FROM auction A JOIN bid B
                 ON A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires
               GROUP BY A.id, A.category)
             SELECT category, sum(final) // count(final) FROM Q GROUP BY category""",
    # HOP(size 10 s, slide 2 s): the five windows [s, s + 10 s) containing ts.
    "q5": """WITH C AS (
               SELECT auction, dateTime // 2000 * 2000 - 2000 * k AS wstart, count(*) AS num
               FROM bid CROSS JOIN range(0, 5) t(k) GROUP BY auction, wstart),
             M AS (SELECT wstart, max(num) AS maxn FROM C GROUP BY wstart)
             SELECT C.auction, C.num FROM C JOIN M USING (wstart) WHERE C.num >= M.maxn""",
    "q7": """WITH B1 AS (
               SELECT max(price) AS maxprice, dateTime // 10000 * 10000 + 10000 AS dt
               FROM bid GROUP BY dateTime // 10000)
             SELECT B.auction, B.price, B.bidder, B.dateTime, B.extra
             FROM bid B JOIN B1 ON B.price = B1.maxprice
             WHERE B.dateTime BETWEEN B1.dt - 10000 AND B1.dt""",
    "q8": """WITH P AS (SELECT id, name, dateTime // 10000 * 10000 AS starttime FROM person
                        GROUP BY id, name, starttime),
                  A AS (SELECT seller, dateTime // 10000 * 10000 AS starttime FROM auction
                        GROUP BY seller, starttime)
             SELECT P.id, P.name, P.starttime FROM P JOIN A
               ON P.id = A.seller AND P.starttime = A.starttime""",
    # Tie-break for equal price and ms: bidder, then extra (the engine's documented choice).
    "q9": """SELECT id, itemName, description, initialBid, reserve, dateTime, expires, seller,
                    category, extra, auction, bidder, price, bidTime, bidExtra
             FROM (SELECT A.*, B.auction, B.bidder, B.price, B.dateTime AS bidTime,
                          B.extra AS bidExtra,
                          row_number() OVER (PARTITION BY A.id ORDER BY B.price DESC,
                              B.dateTime ASC, B.bidder ASC, B.extra ASC) AS rn
                   FROM auction A JOIN bid B
                     ON A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires)
             WHERE rn = 1""",
    # Sessions per bidder: a new one when the gap to the previous bid exceeds 10 s (a gap of
    # exactly 10 s touches and continues it). RANGE framing keeps equal timestamps together.
    "q11": """WITH o AS (
                SELECT bidder, dateTime,
                  CASE WHEN dateTime - lag(dateTime) OVER (PARTITION BY bidder ORDER BY dateTime)
                       <= 10000 THEN 0 ELSE 1 END AS new
                FROM bid),
              s AS (SELECT bidder, dateTime,
                      sum(new) OVER (PARTITION BY bidder ORDER BY dateTime) AS sid FROM o)
              SELECT bidder, count(*), min(dateTime), max(dateTime) + 10000
              FROM s GROUP BY bidder, sid""",
    "q14": f"""SELECT auction, bidder, {MILLI},
                 CASE WHEN hour(epoch_ms(dateTime)) BETWEEN 8 AND 18 THEN 'dayTime'
                      WHEN hour(epoch_ms(dateTime)) <= 6 OR hour(epoch_ms(dateTime)) >= 20
                        THEN 'nightTime'
                      ELSE 'otherTime' END,
                 dateTime, extra, length(extra) - length(replace(extra, 'c', ''))
               FROM bid WHERE price * 908 > 1000000000 AND price * 908 < 50000000000""",
    "q21": """SELECT auction, bidder, price, channel,
                CASE lower(channel) WHEN 'apple' THEN '0' WHEN 'google' THEN '1'
                  WHEN 'facebook' THEN '2' WHEN 'baidu' THEN '3'
                  ELSE regexp_extract(url, '(&|^)channel_id=([^&]*)', 2) END
              FROM bid
              WHERE regexp_matches(url, '(&|^)channel_id=([^&]*)')
                 OR lower(channel) IN ('apple', 'google', 'facebook', 'baidu')""",
    "q22": """SELECT auction, bidder, price, channel, split_part(url, '/', 4),
                split_part(url, '/', 5), split_part(url, '/', 6) FROM bid""",
}


def field(v):
    # Sluice's one CSV rule (crates/csv): NULL is an empty field; text is quoted when it is
    # empty, holds a comma, quote or line break, or starts or ends with a space or tab.
    if v is None:
        return ""
    s = str(v)
    if s == "" or s[0] in " \t" or s[-1] in " \t" or any(c in s for c in ',"\n\r'):
        return '"' + s.replace('"', '""') + '"'
    return s


def main():
    events_csv, out_dir, queries = sys.argv[1], sys.argv[2], sys.argv[3:]
    for query in queries:
        if query not in QUERIES:
            sys.exit(f"unknown query {query}; known: {', '.join(QUERIES)}")
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE events AS SELECT * FROM read_csv(?, header = true, delim = ',', "
        "quote = '\"', escape = '\"', allow_quoted_nulls = false, columns = "
        + "{" + ", ".join(f"'{k}': '{v}'" for k, v in SCHEMA.items()) + "})",
        [events_csv],
    )
    con.execute(VIEWS)
    for query in queries:
        rows = con.execute(QUERIES[query]).fetchall()
        lines = sorted(",".join(field(v) for v in row) for row in rows)
        with open(f"{out_dir}/{query}.csv", "w", encoding="utf-8") as f:
            for line in lines:
                f.write(line + "\n")


if __name__ == "__main__":
    main()
