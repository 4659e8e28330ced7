-- q19, each auction's 10 highest bids with their number (ROW_NUMBER() by price descending).
-- Bids of equal price take their numbers in an order the query leaves open: the check compares
-- (auction, price, rank_number) only (`compare::tie_free_columns`).
SELECT auction, bidder, price, channel, url, dateTime, extra, rank_number
FROM (
  SELECT *, row_number() OVER (PARTITION BY auction ORDER BY price DESC) AS rank_number
  FROM bid
)
WHERE rank_number <= 10
