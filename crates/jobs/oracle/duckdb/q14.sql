-- q14, calculation: bids whose converted price (price * 0.908, exact) lies strictly between
-- 1,000,000 and 50,000,000, with the time of day of their hour (UTC) and the count of 'c' in
-- extra.
WITH b AS (
  SELECT *, CAST(price AS DECIMAL(19, 0)) * CAST(0.908 AS DECIMAL(4, 3)) AS converted FROM bid
)
SELECT auction, bidder, converted AS price,
       CASE WHEN hour(dateTime) >= 8 AND hour(dateTime) <= 18 THEN 'dayTime'
            WHEN hour(dateTime) <= 6 OR hour(dateTime) >= 20 THEN 'nightTime'
            ELSE 'otherTime' END AS bidTimeType,
       dateTime, extra,
       length(extra) - length(replace(extra, 'c', '')) AS c_counts
FROM b
WHERE converted > 1000000 AND converted < 50000000
