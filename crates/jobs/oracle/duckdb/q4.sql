-- q4, average winning price per category: per auction the highest bid within its lifetime, then
-- per category the average of those prices. Flink's AVG of a BIGINT is a BIGINT, the sum divided
-- by the count in integer arithmetic (truncated); prices are positive, so `//` is that division.
WITH q AS (
  SELECT max(B.price) AS final, A.category
  FROM auction A JOIN bid B ON A.id = B.auction
  WHERE B.dateTime BETWEEN A.dateTime AND A.expires
  GROUP BY A.id, A.category
)
SELECT category, CAST(sum(final) // count(final) AS BIGINT) FROM q GROUP BY category
