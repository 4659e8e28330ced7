-- q0, passthrough: every bid's columns.
SELECT auction, bidder, price, dateTime, extra FROM bid
