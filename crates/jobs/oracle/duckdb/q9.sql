-- q9, winning bid per auction: of the bids within the auction's lifetime, the highest price,
-- the earliest of equal prices (ROW_NUMBER() over that order, the first row).
SELECT id, itemName, description, initialBid, reserve, dateTime, expires, seller, category, extra,
       auction, bidder, price, bid_dateTime, bid_extra
FROM (
  SELECT A.id, A.itemName, A.description, A.initialBid, A.reserve, A.dateTime, A.expires,
         A.seller, A.category, A.extra,
         B.auction, B.bidder, B.price, B.dateTime AS bid_dateTime, B.extra AS bid_extra,
         row_number() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.dateTime ASC) AS rownum
  FROM auction A JOIN bid B ON A.id = B.auction
  WHERE B.dateTime BETWEEN A.dateTime AND A.expires
)
WHERE rownum <= 1
