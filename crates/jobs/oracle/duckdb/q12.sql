-- q12, bids per bidder in processing-time tumbling windows of 10 s. Which window a bid falls in
-- depends on the wall clock of the run, so no oracle can know the rows; what it can know is each
-- bidder's total over all windows. Sluice's rows are rolled up to the same shape before they are
-- compared (nexmark_sql/proctime.rs), after their windows are checked to be 10 s, aligned and
-- one per bidder.
SELECT bidder, count(*) AS bid_count
FROM bid
GROUP BY bidder
