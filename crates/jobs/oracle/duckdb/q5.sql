-- q5, hot items: bids counted per auction in sliding windows of 10 s every 2 s; the auctions
-- whose count is the window's highest. A row belongs to the five windows [s, s + 10 s) whose
-- start s is a multiple of 2 s in (t - 10 s, t]: each bid is expanded into them.
WITH ms AS (
  SELECT auction, epoch_ms(dateTime) AS t FROM bid
), win AS (
  SELECT auction, (t - ((t % 2000) + 2000) % 2000) - 2000 * k AS wstart
  FROM ms CROSS JOIN range(0, 5) AS r(k)
), counts AS (
  SELECT auction, wstart, count(*) AS num FROM win GROUP BY auction, wstart
), best AS (
  SELECT wstart, max(num) AS maxn FROM counts GROUP BY wstart
)
SELECT counts.auction, counts.num
FROM counts JOIN best ON counts.wstart = best.wstart AND counts.num >= best.maxn
