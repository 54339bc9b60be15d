-- As sqlite/migrations/013-status-jobs.sql (docs/operations.md "Bulk status changes"): each
-- job's selection taken when it is created, worked through under a lease that any instance may
-- take over once it expires.
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
  lease_until  TIMESTAMPTZ,
  error        TEXT,                            -- the last failed run's error
  attempts     INTEGER NOT NULL DEFAULT 0,      -- failed runs; the job fails after a few
  created_at   TIMESTAMPTZ NOT NULL,
  finished_at  TIMESTAMPTZ
);
CREATE INDEX status_jobs_running ON status_jobs (lease_until) WHERE state = 'running';

CREATE TABLE status_job_items (
  job_id         TEXT NOT NULL REFERENCES status_jobs (id) ON DELETE CASCADE,
  credential_id  TEXT NOT NULL,
  PRIMARY KEY (job_id, credential_id)
);

-- The job a status change belongs to, in the audit log.
ALTER TABLE audit_log ADD COLUMN job_id TEXT;

-- The batch-issue run a direct issuance belongs to (the selector's `batchId`), and the credential
-- a renewal replaces, both written by record_issuance below.
ALTER TABLE issuances ADD COLUMN batch_id TEXT;
CREATE INDEX issuances_batch ON issuances (batch_id) WHERE batch_id IS NOT NULL;
ALTER TABLE issuances ADD COLUMN renewed_from TEXT;
CREATE INDEX issuances_renewed_from ON issuances (renewed_from) WHERE renewed_from IS NOT NULL;

-- record_issuance of 008-record-issuance.sql with the two columns above (NULL by default), and
-- record_issuances of 013-record-issuances.sql passing them on from its records.
DROP FUNCTION record_issuance(TEXT, TEXT, TEXT, TEXT, TEXT, TEXT, BIGINT, INTEGER, INTEGER, TEXT, TEXT,
  TIMESTAMPTZ, TIMESTAMPTZ, TEXT, TIMESTAMPTZ, TIMESTAMPTZ, TEXT, SMALLINT, INTEGER, INTEGER, TEXT, TEXT);
CREATE FUNCTION record_issuance(
  p_credential_id TEXT, p_channel TEXT, p_user_id TEXT, p_holder_did TEXT, p_schema_id TEXT,
  p_proof_type TEXT, p_nonce BIGINT, p_partition INTEGER, p_index INTEGER, p_subject_hash TEXT,
  p_kid TEXT, p_created_at TIMESTAMPTZ, p_expires_at TIMESTAMPTZ, p_envelope TEXT,
  p_next_attempt_at TIMESTAMPTZ, p_lease_until TIMESTAMPTZ, p_email_hash TEXT, p_shard SMALLINT,
  -- The two-int advisory lock a hosted issuance takes (database.ts LOCK_DEDUPE_NAMESPACE and the
  -- hash of its holder, schema, proof type and claims); NULL: no dedupe.
  p_lock_space INTEGER, p_lock_key INTEGER,
  -- The `issue` audit row's actor and reason; NULL actor: no audit row.
  p_audit_actor TEXT, p_audit_reason TEXT,
  -- The batch-issue run (the bulk selector's batchId) and the credential this one renews.
  p_batch_id TEXT DEFAULT NULL, p_renewed_from TEXT DEFAULT NULL,
  OUT outcome TEXT, OUT existing TEXT
) LANGUAGE plpgsql AS $$
BEGIN
  IF p_lock_key IS NOT NULL THEN
    -- Two identical hosted requests on two instances take turns here; each statement below takes
    -- a new snapshot, so the second one sees the first one's committed issuance.
    PERFORM pg_advisory_xact_lock(p_lock_space, p_lock_key);
  END IF;
  -- A taken credential id, nonce or slot makes it insert nothing: the unique constraints decide
  -- between racing instances.
  INSERT INTO issuances (credential_id, channel, user_id, holder_did, schema_id, proof_type, revocation_nonce,
      status_partition, status_index, subject_hash, kid, created_at, expires_at, envelope, upload_state,
      next_attempt_at, lease_until, email_hash, batch_id, renewed_from)
    SELECT p_credential_id, p_channel, p_user_id, p_holder_did, p_schema_id, p_proof_type, p_nonce,
      p_partition, p_index, p_subject_hash, p_kid, p_created_at, p_expires_at, p_envelope, 'pending',
      p_next_attempt_at, p_lease_until, p_email_hash, p_batch_id, p_renewed_from
    WHERE (p_partition IS NULL
        OR EXISTS (SELECT 1 FROM status_list_partitions p WHERE p.partition = p_partition AND p_index < p.size))
      AND (p_lock_key IS NULL OR NOT EXISTS (SELECT 1 FROM issuances d
        WHERE d.holder_did = p_holder_did AND d.schema_id = p_schema_id AND d.proof_type = p_proof_type
          AND d.subject_hash = p_subject_hash AND d.channel = 'hosted' AND d.status = 0
          AND d.expires_at > p_created_at))
    ON CONFLICT DO NOTHING;
  IF FOUND THEN
    IF p_partition IS NOT NULL THEN
      INSERT INTO status_list_allocations (partition, shard, allocated) VALUES (p_partition, p_shard, 1)
        ON CONFLICT (partition, shard) DO UPDATE SET allocated = status_list_allocations.allocated + 1;
    END IF;
    IF p_audit_actor IS NOT NULL THEN
      INSERT INTO audit_log (at, actor, action, target, reason)
        VALUES (p_created_at, p_audit_actor, 'issue', p_credential_id, p_audit_reason);
    END IF;
    outcome := 'inserted';
    RETURN;
  END IF;
  SELECT credential_id INTO existing FROM issuances WHERE credential_id = p_credential_id;
  IF FOUND THEN
    outcome := 'duplicate';
    RETURN;
  END IF;
  IF p_lock_key IS NOT NULL THEN
    SELECT credential_id INTO existing FROM issuances
      WHERE holder_did = p_holder_did AND schema_id = p_schema_id AND proof_type = p_proof_type
        AND subject_hash = p_subject_hash AND channel = 'hosted' AND status = 0 AND expires_at > p_created_at
      ORDER BY created_at DESC, seq DESC LIMIT 1;
    IF FOUND THEN
      outcome := 'duplicate';
      RETURN;
    END IF;
  END IF;
  outcome := CASE WHEN EXISTS (SELECT 1 FROM issuances WHERE revocation_nonce = p_nonce)
    THEN 'nonce-taken' ELSE 'slot-taken' END;
END
$$;

CREATE OR REPLACE FUNCTION record_issuances(
  p_records JSONB, p_mark_ids TEXT[], p_mark_paths TEXT[], p_mark_ats TIMESTAMPTZ[]
) RETURNS TABLE (o INTEGER, outcome TEXT, existing TEXT, error_code TEXT, error_message TEXT)
LANGUAGE plpgsql AS $$
DECLARE
  r RECORD;
  res RECORD;
BEGIN
  FOR r IN SELECT * FROM jsonb_to_recordset(p_records) AS x(
      o INTEGER, credential_id TEXT, channel TEXT, user_id TEXT, holder_did TEXT, schema_id TEXT, proof_type TEXT,
      nonce BIGINT, slot_partition INTEGER, slot_index INTEGER, subject_hash TEXT, kid TEXT,
      created_at TIMESTAMPTZ, expires_at TIMESTAMPTZ, envelope TEXT, next_attempt_at TIMESTAMPTZ,
      lease_until TIMESTAMPTZ, email_hash TEXT, batch_id TEXT, renewed_from TEXT, shard SMALLINT, lock_space INTEGER, lock_key INTEGER,
      audit_actor TEXT, audit_reason TEXT, event_id TEXT, event_type TEXT, event_data TEXT)
  LOOP
    o := r.o;
    outcome := NULL;
    existing := NULL;
    error_code := NULL;
    error_message := NULL;
    BEGIN
      SELECT * INTO res FROM record_issuance(r.credential_id, r.channel, r.user_id, r.holder_did, r.schema_id,
        r.proof_type, r.nonce, r.slot_partition, r.slot_index, r.subject_hash, r.kid, r.created_at, r.expires_at,
        r.envelope, r.next_attempt_at, r.lease_until, r.email_hash, r.shard, r.lock_space, r.lock_key,
        r.audit_actor, r.audit_reason, r.batch_id, r.renewed_from);
      IF res.outcome = 'inserted' AND r.event_id IS NOT NULL THEN
        INSERT INTO webhook_events (id, type, data, created_at)
          SELECT r.event_id, r.event_type, r.event_data, r.created_at WHERE EXISTS (SELECT 1 FROM webhook_endpoints);
      END IF;
      outcome := res.outcome;
      existing := res.existing;
    EXCEPTION WHEN OTHERS THEN
      error_code := SQLSTATE;
      error_message := SQLERRM;
    END;
    RETURN NEXT;
  END LOOP;
  IF cardinality(p_mark_ids) > 0 THEN
    BEGIN
      WITH done AS (
        UPDATE issuances i SET upload_state = 'uploaded', storage_path = u.path, uploaded_at = u.at,
          next_attempt_at = NULL, lease_until = NULL, last_error = NULL, upload_attempts = i.upload_attempts + 1,
          -- Delivered: the envelope keeps all but its ciphertext, and the ciphertext's SHA-256
          -- (store.ts DeliveredEnvelope).
          envelope = CASE WHEN i.envelope::jsonb ? 'data' THEN ((i.envelope::jsonb - 'data') || jsonb_build_object(
            'dataSha256', encode(sha256(decode(i.envelope::jsonb ->> 'data', 'base64')), 'hex')))::text
            ELSE i.envelope END
        FROM (SELECT * FROM unnest(p_mark_ids, p_mark_paths, p_mark_ats) AS m(id, path, at) ORDER BY id) u
        WHERE i.credential_id = u.id
        RETURNING i.credential_id, i.storage_path, i.upload_attempts, u.at)
      INSERT INTO webhook_events (id, type, data, created_at)
        SELECT 'evt_' || gen_random_uuid(), 'credential.delivered',
          json_build_object('credentialId', d.credential_id, 'storagePath', d.storage_path,
            'attempts', d.upload_attempts)::text, d.at
        FROM done d WHERE EXISTS (SELECT 1 FROM webhook_endpoints);
    EXCEPTION WHEN OTHERS THEN
      o := 0;
      outcome := NULL;
      existing := NULL;
      error_code := SQLSTATE;
      error_message := SQLERRM;
      RETURN NEXT;
    END;
  END IF;
END
$$;
