-- q13, bounded side input join: each bid joined with the side input row whose key is
-- auction mod 10000 (the side input file is a table `side_input(key, value)`).
SELECT B.auction, B.bidder, B.price, B.dateTime, S.value
FROM bid B JOIN side_input S ON B.auction % 10000 = S.key
