-- q17, bids per auction and day: counts by price band, min, max, average and sum of the price.
-- Flink's AVG of a BIGINT is a BIGINT (the sum divided by the count, truncated; prices are
-- positive, so `//` is that division).
SELECT auction,
       strftime(dateTime, '%Y-%m-%d') AS day,
       count(*),
       count(*) FILTER (WHERE price < 10000),
       count(*) FILTER (WHERE price >= 10000 AND price < 1000000),
       count(*) FILTER (WHERE price >= 1000000),
       min(price),
       max(price),
       CAST(sum(price) // count(price) AS BIGINT),
       CAST(sum(price) AS BIGINT)
FROM bid
GROUP BY auction, strftime(dateTime, '%Y-%m-%d')
