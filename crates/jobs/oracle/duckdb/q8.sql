-- q8, monitor new users: the people (distinct id, name) and the sellers of auctions of each
-- 10 s tumbling window, joined on id = seller within the same window; the window's start.
WITH p AS (
  SELECT DISTINCT id, name,
         epoch_ms(dateTime) - ((epoch_ms(dateTime) % 10000) + 10000) % 10000 AS wstart
  FROM person
), a AS (
  SELECT DISTINCT seller,
         epoch_ms(dateTime) - ((epoch_ms(dateTime) % 10000) + 10000) % 10000 AS wstart
  FROM auction
)
SELECT p.id, p.name, epoch_ms(p.wstart) AS stime
FROM p JOIN a ON p.id = a.seller AND p.wstart = a.wstart
