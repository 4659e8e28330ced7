CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, `dateTime` TIMESTAMP(3), extra VARCHAR, WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND) WITH ('connector' = 'datagen');
CREATE TABLE auction (id BIGINT, seller BIGINT, category BIGINT, `dateTime` TIMESTAMP(3), WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND) WITH ('connector' = 'datagen');
SELECT cnt, COUNT(*) AS n FROM (SELECT auction, COUNT(*) AS cnt FROM bid GROUP BY auction) GROUP BY cnt;
