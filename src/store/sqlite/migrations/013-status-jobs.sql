-- Bulk status changes (docs/operations.md "Bulk status changes"): one row per job, its selection
-- taken when it is created (the items), worked through in credential id order under a lease that
-- any instance may take over once it expires, so a job outlives the process that started it.
CREATE TABLE status_jobs (
  id           TEXT PRIMARY KEY,
  change       TEXT NOT NULL CHECK (change IN ('revoke', 'suspend', 'unsuspend')),
  selector     TEXT NOT NULL,                   -- JSON of the request's selector (the email as its keyed hash)
  reason       TEXT NOT NULL,
  actor        TEXT NOT NULL,
  state        TEXT NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'done', 'failed')),
  total        INTEGER NOT NULL,
  done         INTEGER NOT NULL DEFAULT 0,
  failed       INTEGER NOT NULL DEFAULT 0,
  cursor       TEXT,                            -- the last credential id worked; NULL before the first
  lease_owner  TEXT,
  lease_until  INTEGER,                         -- epoch ms
  error        TEXT,                            -- the last failed run's error
  attempts     INTEGER NOT NULL DEFAULT 0,      -- failed runs; the job fails after a few
  created_at   TEXT NOT NULL,
  finished_at  TEXT
);
CREATE INDEX status_jobs_running ON status_jobs (lease_until) WHERE state = 'running';

CREATE TABLE status_job_items (
  job_id         TEXT NOT NULL REFERENCES status_jobs (id) ON DELETE CASCADE,
  credential_id  TEXT NOT NULL,
  PRIMARY KEY (job_id, credential_id)
) WITHOUT ROWID;

-- The job a status change belongs to, in the audit log.
ALTER TABLE audit_log ADD COLUMN job_id TEXT;

-- The batch-issue run a direct issuance belongs to (the selector's `batchId`), and the credential
-- a renewal replaces.
ALTER TABLE issuances ADD COLUMN batch_id TEXT;
CREATE INDEX issuances_batch ON issuances (batch_id) WHERE batch_id IS NOT NULL;
ALTER TABLE issuances ADD COLUMN renewed_from TEXT;
CREATE INDEX issuances_renewed_from ON issuances (renewed_from) WHERE renewed_from IS NOT NULL;
