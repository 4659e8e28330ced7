CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, `dateTime` TIMESTAMP(3), extra VARCHAR, WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND) WITH ('connector' = 'datagen');
CREATE TABLE auction (id BIGINT, seller BIGINT, category BIGINT, `dateTime` TIMESTAMP(3), WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND) WITH ('connector' = 'datagen');
CREATE TABLE sink_fs2 (auction BIGINT, price BIGINT) WITH ('connector' = 'filesystem', 'path' = 'file:///tmp/sluice-oracle-fs-sink', 'format' = 'csv');
EXPLAIN CHANGELOG_MODE INSERT INTO sink_fs2 SELECT auction, price FROM (SELECT auction, price, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC, `dateTime` ASC) AS rn FROM bid) WHERE rn <= 1;
