"""DuckDB oracle for the skew workload's keyed sum.

Usage: skew_oracle.py INPUT_CSV MAP_WORK
INPUT_CSV has a header `key,value`: the generator's records exactly as Sluice's source emits them.
Applies the skew map (docs/src/reference/skew-workload.md: MAP_WORK rounds of a 64-bit
multiply/xor-shift,
wrap-around done in UHUGEINT modulo 2^64, then `& 0xFFFFF`) in SQL and prints `key,sum` sorted by key.
"""
import sys

import duckdb

M = "18446744073709551616::UHUGEINT"


def recursive_query(path: str, rounds: int) -> str:
    """The same map as a recursive CTE that keeps one row per record (USING KEY), for many
    rounds, where unrolling would build a query of thousands of CTEs."""
    return (
        f"WITH RECURSIVE rec AS (SELECT row_number() OVER () AS i, key::BIGINT AS key, "
        f"value::UHUGEINT AS v FROM read_csv('{path}', header = true, "
        f"columns = {{'key': 'BIGINT', 'value': 'BIGINT'}})), "
        f"w(i, key, v, n) USING KEY (i) AS ("
        f"SELECT i, key, v, 0 FROM rec UNION "
        f"SELECT i, key, xor(t, t >> 29), n + 1 FROM (SELECT i, key, "
        f"(v * 6364136223846793005::UHUGEINT + 1442695040888963407::UHUGEINT) % {M} AS t, n "
        f"FROM w) WHERE n < {rounds}) "
        f"SELECT key, CAST(SUM(v & 1048575::UHUGEINT) AS BIGINT) AS sum FROM w "
        f"GROUP BY key ORDER BY key"
    )


def query(path: str, rounds: int) -> str:
    if rounds > 64:
        return recursive_query(path, rounds)
    ctes = []
    prev = "rec"
    for n in range(1, rounds + 1):
        ctes.append(
            f"w{n} AS (SELECT key, xor(t, t >> 29) AS v FROM "
            f"(SELECT key, (v * 6364136223846793005::UHUGEINT + 1442695040888963407::UHUGEINT) % {M} AS t FROM {prev}))"
        )
        prev = f"w{n}"
    with_rounds = (", " + ", ".join(ctes)) if ctes else ""
    return (
        f"WITH rec AS (SELECT key::BIGINT AS key, value::UHUGEINT AS v "
        f"FROM read_csv('{path}', header = true, columns = {{'key': 'BIGINT', 'value': 'BIGINT'}}))"
        f"{with_rounds} "
        f"SELECT key, CAST(SUM(v & 1048575::UHUGEINT) AS BIGINT) AS sum FROM {prev} GROUP BY key ORDER BY key"
    )


def main() -> None:
    path, rounds = sys.argv[1], int(sys.argv[2])
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    print("key,sum")
    for key, total in con.execute(query(path, rounds)).fetchall():
        print(f"{key},{total}")


if __name__ == "__main__":
    main()
