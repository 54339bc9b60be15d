-- Short leased locks shared by every instance (direct issuance's onDuplicate decision per holder
-- and schema). A lock whose holder died frees itself when its lease ends; times are the server's.
CREATE TABLE named_locks (
  name        TEXT PRIMARY KEY,
  owner       TEXT NOT NULL,
  expires_at  TIMESTAMPTZ NOT NULL
);
