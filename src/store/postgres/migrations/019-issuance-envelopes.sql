-- Envelopes until delivered (docs/architecture.md "Envelopes until delivered"), as
-- sqlite/migrations/016-issuance-envelopes.sql.
--
-- An issuance's envelope (the dstorage/vcs body, about 2.5 KB) is needed only until the hosting
-- service has stored it. It now lives in issuance_envelopes, inserted by record_issuance with its
-- issuance and deleted by the "uploaded" marks of record_issuances, so that table holds the
-- outbox's backlog (plus the dead rows autovacuum has not yet reclaimed) and an issuance's row no
-- longer carries it, nor leaves it behind in the dead version every update of the row makes. The
-- issuance keeps the SHA-256 of the ciphertext (envelope_sha256, hex, of the decoded `data`).
--
-- issuances.envelope is retired and read by nothing; it stays as on SQLite (where dropping it
-- rewrites the table), so both engines keep the same columns: rows recorded from now on hold ''
-- in it, rows recorded before keep what it held. The envelopes of uploads pending or failed now
-- are copied to issuance_envelopes, so the outbox still sends them.
ALTER TABLE issuances ADD COLUMN envelope_sha256 TEXT;

-- An envelope (2.5 KB for an SD-JWT VC) stays in its row, uncompressed (its ciphertext does not
-- compress): only one over toast_tuple_target goes to the TOAST table, so an insert and a delete
-- touch one heap page and the primary key, not TOAST chunks and their index as well.
CREATE TABLE issuance_envelopes (
  credential_id  TEXT PRIMARY KEY,   -- the issuance's (no foreign key: its check would lock the issuance row)
  body           TEXT NOT NULL       -- JSON of the dstorage/vcs body (store.ts UploadBody)
) WITH (toast_tuple_target = 8160);

INSERT INTO issuance_envelopes (credential_id, body)
  SELECT credential_id, envelope FROM issuances
  WHERE upload_state IN ('pending', 'failed')
    AND CASE WHEN envelope LIKE '{%' THEN envelope::jsonb ? 'data' ELSE false END;

-- 017-oid4vci.sql's, but the envelope goes to issuance_envelopes (p_envelope NULL: nothing to
-- upload) and the issuance keeps its digest. The signature changes, so the old one is dropped.
DROP FUNCTION record_issuance(TEXT, TEXT, TEXT, TEXT, TEXT, TEXT, BIGINT, INTEGER, INTEGER, TEXT, TEXT,
  TIMESTAMPTZ, TIMESTAMPTZ, TEXT, TIMESTAMPTZ, TIMESTAMPTZ, TEXT, SMALLINT, INTEGER, INTEGER, TEXT, TEXT,
  TEXT, TEXT);

CREATE FUNCTION record_issuance(
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
      INSERT INTO issuance_envelopes (credential_id, body) VALUES (p_credential_id, p_envelope);
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

-- 016-status-jobs.sql's, but each record passes its envelope digest, and a mark deletes the
-- delivered envelope (the issuance keeps its digest) instead of rewriting it in the row.
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
        FROM (SELECT * FROM unnest(p_mark_ids, p_mark_paths, p_mark_ats) AS m(id, path, at) ORDER BY id) u
        WHERE i.credential_id = u.id
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
