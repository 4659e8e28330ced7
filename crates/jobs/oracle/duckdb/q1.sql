-- q1, currency conversion: the price times 0.908 as an exact decimal (Flink's DECIMAL(23, 3):
-- BIGINT as DECIMAL(19, 0) times DECIMAL(4, 3)).
SELECT auction, bidder, CAST(price AS DECIMAL(19, 0)) * CAST(0.908 AS DECIMAL(4, 3)) AS price,
       dateTime, extra
FROM bid
