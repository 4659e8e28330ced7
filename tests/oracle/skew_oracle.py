"""DuckDB oracle for the skew workload's keyed sum.

Usage: skew_oracle.py INPUT_CSV MAP_WORK
INPUT_CSV has a header `key,value`: the generator's records exactly as Sluice's source emits them.
Applies the skew map (spec/skew-workload.md: MAP_WORK rounds of a 64-bit multiply/xor-shift,
wrap-around done in UHUGEINT modulo 2^64, then `& 0xFFFFF`) in SQL and prints `key,sum` sorted by key.
"""
import sys

import duckdb

M = "18446744073709551616::UHUGEINT"


def query(path: str, rounds: int) -> str:
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
