#!/bin/sh
# Runs once, when the mariadb container initializes its data directory: loads Adult.
set -eu
gunzip -c /paradise/adult.csv.gz > /tmp/adult.csv
mariadb --local-infile=1 -uroot -p"$MARIADB_ROOT_PASSWORD" "$MARIADB_DATABASE" <<'SQL'
CREATE TABLE adult (
    id INT AUTO_INCREMENT PRIMARY KEY,
    age SMALLINT, workclass VARCHAR(16), fnlwgt INT, education VARCHAR(12),
    education_num SMALLINT, marital_status VARCHAR(21), occupation VARCHAR(17),
    relationship VARCHAR(14), race VARCHAR(18), sex VARCHAR(6), capital_gain INT,
    capital_loss INT, hours_per_week SMALLINT, native_country VARCHAR(26), income VARCHAR(5)
) CHARACTER SET utf8mb4;
LOAD DATA LOCAL INFILE '/tmp/adult.csv' INTO TABLE adult CHARACTER SET utf8mb4
    FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '"' LINES TERMINATED BY '\n'
    IGNORE 1 LINES
    (age, workclass, fnlwgt, education, education_num, marital_status, occupation,
     relationship, race, sex, capital_gain, capital_loss, hours_per_week, native_country,
     income);
SQL
rm -f /tmp/adult.csv
