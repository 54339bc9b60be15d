-- PostgreSQL only: group commit (docs/architecture.md "Group commit"). The issuance records and
-- "uploaded" marks one instance asks for in one turn of its event loop are written by one call,
-- so one statement, one transaction and one commit instead of one each: a commit is most of what
-- a write costs the server.
--
-- Each record runs record_issuance in its own subtransaction (a BEGIN … EXCEPTION block is a
-- savepoint): one that raises rolls back alone (its allocation bump, audit row and event with it)
-- and comes back as its row's error_code and error_message, and the others commit. A refused
-- record (a taken nonce or slot) inserts nothing, as with record_issuance alone. The marks run
-- together in one more subtransaction, reported on a row with o = 0 when they fail; a mark also
-- drops the delivered envelope's ciphertext, keeping its SHA-256. Errors that
-- end the statement (a cancel, statement_timeout) or the commit fail every write of the call.
--
-- p_records: a JSON array of objects, each record_issuance's arguments by name plus `o` (the
-- caller's position, from 1) and, optionally, the webhook event written with an inserted record
-- (event_id, event_type, event_data; only while an endpoint exists). The caller orders records by
-- their dedupe lock, so that two instances' calls take those locks in the same order.
-- p_mark_*: the marks, ordered by credential id for the same reason (their row locks).
CREATE FUNCTION record_issuances(
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
      lease_until TIMESTAMPTZ, email_hash TEXT, shard SMALLINT, lock_space INTEGER, lock_key INTEGER,
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
        r.audit_actor, r.audit_reason);
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
