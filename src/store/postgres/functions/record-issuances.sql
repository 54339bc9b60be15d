-- Records a group of issuances and "uploaded" marks in one statement, one transaction and one commit
-- (docs/architecture.md "Repeatable SQL functions"). Every event it writes comes built by the caller
-- (src/events): a record's `credential.issued` in its JSON, and each mark's `credential.delivered`
-- as its id and the JSON around `attempts`, which only this statement counts. Migration 023's
-- four-parameter record_issuances, which built the mark's event here, stays for instances of
-- earlier versions during a rolling deploy.
-- It runs under the search_path it was created under (SET ... FROM CURRENT): a call that names its
-- schema (a tenant's, docs/several-issuers.md "Where the data lives") writes that schema's tables
-- whatever the search_path of the connection it comes on. Its statements run on generic plans
-- from the first call (plan_cache_mode): the plans PostgreSQL settles on after five custom ones
-- anyway (equality lookups by parameter), without planning those five again in every backend for
-- every schema, which a process serving many tenants' schemas otherwise does all the time.
CREATE OR REPLACE FUNCTION record_issuances(
  p_records JSONB, p_mark_ids TEXT[], p_mark_paths TEXT[], p_mark_ats TIMESTAMPTZ[],
  -- Per mark: its event's id, and its data before and after the value of `attempts`.
  p_mark_event_ids TEXT[], p_mark_event_heads TEXT[], p_mark_event_tails TEXT[]
) RETURNS TABLE (o INTEGER, outcome TEXT, existing TEXT, error_code TEXT, error_message TEXT)
LANGUAGE plpgsql SET search_path FROM CURRENT SET plan_cache_mode = force_generic_plan AS $$
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
        FROM unnest(p_mark_ids, p_mark_paths, p_mark_ats, p_mark_event_ids, p_mark_event_heads, p_mark_event_tails)
          AS u(id, path, at, event_id, head, tail)
        -- By the marks' ids as well, so that the plan probes the primary key: a plan cached while
        -- the table was small joins with a scan of the whole table.
        WHERE i.credential_id = u.id AND i.credential_id = ANY (p_mark_ids)
        RETURNING i.upload_attempts, u.at, u.event_id, u.head, u.tail),
      -- Delivered: the envelope goes (the issuance keeps its digest). By the marks' ids, probing
      -- the primary key (a join with `done` may be planned as a scan of the table).
      delivered AS (DELETE FROM issuance_envelopes WHERE credential_id = ANY (p_mark_ids))
      INSERT INTO webhook_events (id, type, data, created_at)
        SELECT d.event_id, 'credential.delivered', d.head || d.upload_attempts::text || d.tail, d.at
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
