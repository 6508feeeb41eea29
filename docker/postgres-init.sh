#!/bin/sh
# Runs once, when the postgres container initializes its data directory: loads Adult.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" <<'SQL'
CREATE TABLE adult (
    id SERIAL PRIMARY KEY,
    age SMALLINT, workclass TEXT, fnlwgt INT, education TEXT, education_num SMALLINT,
    marital_status TEXT, occupation TEXT, relationship TEXT, race TEXT, sex TEXT,
    capital_gain INT, capital_loss INT, hours_per_week SMALLINT, native_country TEXT,
    income TEXT
);
SQL
gunzip -c /paradise/adult.csv.gz | psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" \
    --dbname "$POSTGRES_DB" -c "COPY adult (age, workclass, fnlwgt, education, education_num,
    marital_status, occupation, relationship, race, sex, capital_gain, capital_loss,
    hours_per_week, native_country, income) FROM STDIN (FORMAT csv, HEADER true)"
# The login paradise serve uses (docker/paradise.toml): it can read the protected table and
# nothing else (docs/deployment.md, "A login that can only read").
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" <<'SQL'
CREATE ROLE paradise_reader LOGIN PASSWORD 'paradise-reader'
    NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS;
ALTER ROLE paradise_reader SET default_transaction_read_only = on;
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO paradise_reader;
GRANT SELECT ON adult TO paradise_reader;
SQL
