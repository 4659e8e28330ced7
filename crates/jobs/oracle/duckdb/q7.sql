-- q7, highest bid: the highest price of each 10 s tumbling window (window [s, s + 10 s), s the
-- event time floored to 10 s), joined back to every bid of that price whose time lies in
-- [end - 10 s, end] (BETWEEN is inclusive). Columns in the query's order: auction, price,
-- bidder (the sink takes them by position).
WITH w AS (
  SELECT price, epoch_ms(dateTime) AS t FROM bid
), maxes AS (
  SELECT max(price) AS maxprice, epoch_ms((t - ((t % 10000) + 10000) % 10000) + 10000) AS wend
  FROM w GROUP BY t - ((t % 10000) + 10000) % 10000
)
SELECT B.auction, B.price, B.bidder, B.dateTime, B.extra
FROM bid B JOIN maxes M ON B.price = M.maxprice
WHERE B.dateTime BETWEEN M.wend - INTERVAL 10 SECOND AND M.wend
