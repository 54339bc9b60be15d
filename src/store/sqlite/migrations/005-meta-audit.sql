-- What the database knows about itself: `environment` is written by the first start that opens it
-- (development, test or production); a production start refuses a database another made.
CREATE TABLE meta (
  key    TEXT PRIMARY KEY,
  value  TEXT NOT NULL
);

-- Who did what: one row per admin action, written in the same transaction as the change
-- where the change is one database transaction (issue, revoke, suspend, unsuspend, claims.import).
CREATE TABLE audit_log (
  id      INTEGER PRIMARY KEY AUTOINCREMENT,
  at      TEXT NOT NULL,
  actor   TEXT NOT NULL,
  action  TEXT NOT NULL,
  target  TEXT NOT NULL,
  reason  TEXT
);
CREATE INDEX audit_log_action ON audit_log (action, id);
CREATE INDEX audit_log_actor ON audit_log (actor, id);
