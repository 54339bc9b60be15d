-- Short leased locks shared by every process on the file (WORKERS=N), as PostgreSQL's
-- 004-named-locks.sql: direct issuance's onDuplicate decision per holder and schema, and the
-- renewal sweep. A lock whose holder died frees itself when its lease ends. expires_at is Unix
-- milliseconds by the processes' clock, which on one machine is the same clock.
CREATE TABLE named_locks (
  name        TEXT PRIMARY KEY,
  owner       TEXT NOT NULL,
  expires_at  INTEGER NOT NULL
) WITHOUT ROWID;
