-- q22, get URL directories: the url's parts 3, 4 and 5 (0-based) split on '/', empty parts
-- kept, NULL past the end (Flink's SPLIT_INDEX); DuckDB's lists are 1-based.
SELECT auction, bidder, price, channel,
       string_split(url, '/')[4] AS dir1,
       string_split(url, '/')[5] AS dir2,
       string_split(url, '/')[6] AS dir3
FROM bid
