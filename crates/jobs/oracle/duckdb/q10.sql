-- q10, every bid logged into partitions by day (dt) and minute (hm): the rows the partitioned
-- files hold, with the partition columns read back from the directories. Flink's
-- DATE_FORMAT(dateTime, 'yyyy-MM-dd') / 'HH:mm' are strftime's %Y-%m-%d / %H:%M.
SELECT auction, bidder, price, dateTime, extra,
       strftime(dateTime, '%Y-%m-%d') AS dt, strftime(dateTime, '%H:%M') AS hm
FROM bid
