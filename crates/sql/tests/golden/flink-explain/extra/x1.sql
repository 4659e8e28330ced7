CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, `dateTime` TIMESTAMP(3), extra VARCHAR, WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND) WITH ('connector' = 'datagen');
CREATE TABLE auction (id BIGINT, seller BIGINT, category BIGINT, `dateTime` TIMESTAMP(3), WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND) WITH ('connector' = 'datagen');
SELECT B.auction, A.seller FROM bid B JOIN auction A ON B.auction = A.id AND B.`dateTime` BETWEEN A.`dateTime` - INTERVAL '10' SECOND AND A.`dateTime` + INTERVAL '5' SECOND;
