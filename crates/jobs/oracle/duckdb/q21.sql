-- q21, add channel id: known channels map to a fixed id, others to the url's channel_id
-- parameter (NULL when the url has none, as Flink's REGEXP_EXTRACT answers a failed match;
-- DuckDB's regexp_extract would answer ''); bids with neither are dropped.
WITH b AS (
  SELECT *,
         CASE WHEN regexp_matches(url, '(&|^)channel_id=([^&]*)')
              THEN regexp_extract(url, '(&|^)channel_id=([^&]*)', 2) END AS from_url
  FROM bid
)
SELECT auction, bidder, price, channel,
       CASE lower(channel) WHEN 'apple' THEN '0' WHEN 'google' THEN '1'
                           WHEN 'facebook' THEN '2' WHEN 'baidu' THEN '3'
                           ELSE from_url END AS channel_id
FROM b
WHERE from_url IS NOT NULL OR lower(channel) IN ('apple', 'google', 'facebook', 'baidu')
