CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, `dateTime` TIMESTAMP(3), extra VARCHAR, WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND) WITH ('connector' = 'datagen');
CREATE TABLE auction (id BIGINT, seller BIGINT, category BIGINT, `dateTime` TIMESTAMP(3), WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND) WITH ('connector' = 'datagen');
CREATE TABLE sink_print4 (auction BIGINT, bidder BIGINT, price BIGINT, `dateTime` TIMESTAMP(3)) WITH ('connector' = 'print');
EXPLAIN CHANGELOG_MODE INSERT INTO sink_print4 SELECT auction, bidder, price, `dateTime` FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder ORDER BY `dateTime` DESC) AS rn FROM bid) WHERE rn = 1;
