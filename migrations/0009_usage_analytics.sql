-- Usage analytics (docs/analytics.md): how many verdicts each key got, by outcome, and the credits
-- they spent, in buckets of a minute, an hour and a day. A key is counted under its lineage (the first
-- key of its rotation chain, api_keys.id), so a rotated key's history goes on under its new key.
--
-- Each process writes its counts to the three tables in one statement; each table is partitioned by
-- range on the bucket start, its partitions made ahead by the processes (a day of minutes, a month of
-- hours, a year of days each), and removed past the retention by detaching and dropping whole
-- partitions, never by deleting rows.
CREATE TABLE usage_minutes (
  lineage integer NOT NULL,
  start timestamptz NOT NULL,
  valid bigint NOT NULL,
  restricted bigint NOT NULL,
  rate_limited bigint NOT NULL,
  usage_exceeded bigint NOT NULL,
  forbidden bigint NOT NULL,
  disabled bigint NOT NULL,
  expired bigint NOT NULL,
  credits bigint NOT NULL,
  PRIMARY KEY (lineage, start)
) PARTITION BY RANGE (start);

CREATE TABLE usage_hours (LIKE usage_minutes INCLUDING ALL) PARTITION BY RANGE (start);
CREATE TABLE usage_days (LIKE usage_minutes INCLUDING ALL) PARTITION BY RANGE (start);
