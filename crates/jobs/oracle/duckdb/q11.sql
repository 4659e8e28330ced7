-- q11, user sessions: bids per bidder per session window with a 10 s gap. As Flink merges
-- session windows [t, t + gap) that intersect, ends included, a bid at most 10 s after the
-- previous one of its bidder continues the session; a later one starts a new session. The
-- session is [first bid, last bid + 10 s). Sessions are numbered over a RANGE frame, so bids with
-- equal timestamps (peers) always share their session whatever order DuckDB gives ties (a ROWS
-- frame split a session when the tie that starts it sorted after its peers).
WITH ordered AS (
  SELECT bidder, epoch_ms(dateTime) AS t,
         CASE WHEN epoch_ms(dateTime) - lag(epoch_ms(dateTime))
                     OVER (PARTITION BY bidder ORDER BY epoch_ms(dateTime)) <= 10000
              THEN 0 ELSE 1 END AS starts
  FROM bid
), numbered AS (
  SELECT bidder, t,
         sum(starts) OVER (PARTITION BY bidder ORDER BY t
                           RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS session
  FROM ordered
)
SELECT bidder, count(*) AS bid_count, epoch_ms(min(t)) AS starttime,
       epoch_ms(max(t) + 10000) AS endtime
FROM numbered GROUP BY bidder, session
