CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, `dateTime` TIMESTAMP(3), extra VARCHAR, WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND) WITH ('connector' = 'datagen');
CREATE TABLE auction (id BIGINT, seller BIGINT, category BIGINT, `dateTime` TIMESTAMP(3), WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND) WITH ('connector' = 'datagen');
CREATE TABLE sink_kafka (auction BIGINT, c BIGINT, s BIGINT, m BIGINT, a BIGINT) WITH ('connector' = 'kafka', 'topic' = 'q', 'properties.bootstrap.servers' = '127.0.0.1:9092', 'format' = 'json');
INSERT INTO sink_kafka SELECT auction, COUNT(*) AS c, SUM(price) AS s, MAX(price) AS m, AVG(price) AS a FROM bid GROUP BY auction;
