-- q15, bids per day: counts of bids, distinct bidders and distinct auctions, in all and by price
-- band (FILTER). Flink's DATE_FORMAT(ts, 'yyyy-MM-dd') is strftime's '%Y-%m-%d'.
SELECT strftime(dateTime, '%Y-%m-%d') AS day,
       count(*),
       count(*) FILTER (WHERE price < 10000),
       count(*) FILTER (WHERE price >= 10000 AND price < 1000000),
       count(*) FILTER (WHERE price >= 1000000),
       count(DISTINCT bidder),
       count(DISTINCT bidder) FILTER (WHERE price < 10000),
       count(DISTINCT bidder) FILTER (WHERE price >= 10000 AND price < 1000000),
       count(DISTINCT bidder) FILTER (WHERE price >= 1000000),
       count(DISTINCT auction),
       count(DISTINCT auction) FILTER (WHERE price < 10000),
       count(DISTINCT auction) FILTER (WHERE price >= 10000 AND price < 1000000),
       count(DISTINCT auction) FILTER (WHERE price >= 1000000)
FROM bid
GROUP BY strftime(dateTime, '%Y-%m-%d')
