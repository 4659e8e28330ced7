CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, `dateTime` TIMESTAMP(3), extra VARCHAR, WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND) WITH ('connector' = 'datagen');
CREATE TABLE auction (id BIGINT, seller BIGINT, category BIGINT, `dateTime` TIMESTAMP(3), WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND) WITH ('connector' = 'datagen');
CREATE TABLE sink_print3 (id BIGINT, auction BIGINT, price BIGINT) WITH ('connector' = 'print');
EXPLAIN CHANGELOG_MODE INSERT INTO sink_print3 SELECT id, auction, price FROM (SELECT A.id, B.auction, B.price, ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC) AS rn FROM auction A, bid B WHERE A.id = B.auction) WHERE rn <= 1;
