-- The outbox's index moves to issuance_envelopes, so that an "uploaded" mark is a HOT update of its
-- issuance (docs/architecture.md "The outbox on PostgreSQL"; PostgreSQL only: SQLite keeps its
-- indexes, and its update costs no index writes of the kind PostgreSQL's does).
--
-- An update of a row can stay on its page and write no index entry (a heap-only tuple, HOT) only
-- when no indexed column changes, counting the columns a partial index's predicate names. The
-- mark changes upload_state and next_attempt_at, which issuances_outbox and
-- issuances_failed_created named, so it wrote a new entry in every index whose predicate its row
-- meets (nine for a hosted SD-JWT issuance). Now no index of issuances names a column the mark
-- changes:
--
-- - issuance_envelopes.due_at is the outbox's due time: an issuance's next_attempt_at while its
--   upload is pending, NULL once it has failed for good. Its row exists while the upload is pending
--   or failed and goes with the mark, as the envelope does; the outbox reads due uploads through
--   issuance_envelopes_due and joins their issuances by primary key.
-- - Failed uploads, for history's upload_failed filter and the failed count, are read through
--   issuances_upload_error_created, on last_error: a failed upload always has one (the new check),
--   an upload delivered at its first attempt keeps NULL, so its mark leaves that index alone.
--   Pending uploads that met an error are in it too (few, and their mark is not HOT).
--
-- issuances.upload_state and next_attempt_at stay what records are read from.

-- NULL for a pending or failed issuance recorded before 019 without an envelope to copy (nothing
-- to send): it still needs its row here to be found by the outbox.
ALTER TABLE issuance_envelopes ALTER COLUMN body DROP NOT NULL;
ALTER TABLE issuance_envelopes ADD COLUMN due_at TIMESTAMPTZ;
UPDATE issuance_envelopes e SET due_at = i.next_attempt_at
  FROM issuances i WHERE i.credential_id = e.credential_id AND i.upload_state = 'pending';
INSERT INTO issuance_envelopes (credential_id, body, due_at)
  SELECT i.credential_id, NULL, CASE WHEN i.upload_state = 'pending' THEN i.next_attempt_at END FROM issuances i
  WHERE i.upload_state IN ('pending', 'failed')
    AND NOT EXISTS (SELECT 1 FROM issuance_envelopes e WHERE e.credential_id = i.credential_id);
CREATE INDEX issuance_envelopes_due ON issuance_envelopes (due_at) WHERE due_at IS NOT NULL;
DROP INDEX issuances_outbox;

UPDATE issuances SET last_error = '' WHERE upload_state = 'failed' AND last_error IS NULL;
ALTER TABLE issuances ADD CONSTRAINT issuances_failed_has_error
  CHECK (upload_state <> 'failed' OR last_error IS NOT NULL);
CREATE INDEX issuances_upload_error_created ON issuances (created_at, seq) WHERE last_error IS NOT NULL;
DROP INDEX issuances_failed_created;

-- A hosted issuance's live duplicate is looked for twice (before signing, and again under its
-- dedupe lock when it is recorded) by holder, schema, proof type and subject, newest first. With
-- created_at and seq in the dedupe index, that index answers both in order, and it is the
-- cheapest plan also while the table has no statistics yet: a plan cached then (a fresh database,
-- before autovacuum's first ANALYZE) read every issuance of the schema through
-- issuances_schema_created_seq on each lookup.
DROP INDEX issuances_dedupe;
CREATE INDEX issuances_dedupe ON issuances (holder_did, schema_id, proof_type, subject_hash, created_at, seq);

-- Room on each page for the new version of the rows its inserts leave there: the mark follows
-- its insert within milliseconds, while the insert's page is still the one being filled, and a
-- HOT update needs space on the row's own page (the dead version is pruned away later).
ALTER TABLE issuances SET (fillfactor = 90);

-- 019's, but the envelope's row carries the outbox's due time.
CREATE OR REPLACE FUNCTION record_issuance(
  p_credential_id TEXT, p_channel TEXT, p_user_id TEXT, p_holder_did TEXT, p_schema_id TEXT,
  p_proof_type TEXT, p_nonce BIGINT, p_partition INTEGER, p_index INTEGER, p_subject_hash TEXT,
  p_kid TEXT, p_created_at TIMESTAMPTZ, p_expires_at TIMESTAMPTZ,
  -- The envelope (JSON; NULL for an oid4vci credential: nothing to upload) and its digest.
  p_envelope TEXT, p_envelope_sha256 TEXT,
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
      status_partition, status_index, subject_hash, kid, created_at, expires_at, envelope, envelope_sha256,
      upload_state, next_attempt_at, lease_until, email_hash, batch_id, renewed_from)
    SELECT p_credential_id, p_channel, p_user_id, p_holder_did, p_schema_id, p_proof_type, p_nonce,
      p_partition, p_index, p_subject_hash, p_kid, p_created_at, p_expires_at, '', p_envelope_sha256,
      CASE WHEN p_channel = 'oid4vci' THEN 'none' ELSE 'pending' END,
      p_next_attempt_at, p_lease_until, p_email_hash, p_batch_id, p_renewed_from
    WHERE (p_partition IS NULL
        OR EXISTS (SELECT 1 FROM status_list_partitions p WHERE p.partition = p_partition AND p_index < p.size))
      AND (p_lock_key IS NULL OR NOT EXISTS (SELECT 1 FROM issuances d
        WHERE d.holder_did = p_holder_did AND d.schema_id = p_schema_id AND d.proof_type = p_proof_type
          AND d.subject_hash = p_subject_hash AND d.channel = 'hosted' AND d.status = 0
          AND d.expires_at > p_created_at))
    ON CONFLICT DO NOTHING;
  IF FOUND THEN
    IF p_envelope IS NOT NULL THEN
      INSERT INTO issuance_envelopes (credential_id, body, due_at)
        VALUES (p_credential_id, p_envelope, p_next_attempt_at);
    END IF;
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

-- 019's, but a mark finds its issuances by primary key whatever the plan cached.
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
      created_at TIMESTAMPTZ, expires_at TIMESTAMPTZ, envelope TEXT, envelope_sha256 TEXT, next_attempt_at TIMESTAMPTZ,
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
        r.envelope, r.envelope_sha256, r.next_attempt_at, r.lease_until, r.email_hash, r.shard, r.lock_space,
        r.lock_key, r.audit_actor, r.audit_reason, r.batch_id, r.renewed_from);
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
          next_attempt_at = NULL, lease_until = NULL, last_error = NULL, upload_attempts = i.upload_attempts + 1
        FROM unnest(p_mark_ids, p_mark_paths, p_mark_ats) AS u(id, path, at)
        -- By the marks' ids as well, so that the plan probes the primary key: a plan cached while
        -- the table was small joins with a scan of the whole table.
        WHERE i.credential_id = u.id AND i.credential_id = ANY (p_mark_ids)
        RETURNING i.credential_id, i.storage_path, i.upload_attempts, u.at),
      -- Delivered: the envelope goes (the issuance keeps its digest). By the marks' ids, probing
      -- the primary key (a join with `done` may be planned as a scan of the table).
      delivered AS (DELETE FROM issuance_envelopes WHERE credential_id = ANY (p_mark_ids))
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
