-- Records one issuance (docs/architecture.md "Repeatable SQL functions": the one live definition;
-- migration 023 wrote it last as a migration). Called by record_issuances for each record of a
-- group; writes the issuance, its envelope, its status list allocation and its audit row.
-- It runs under the search_path it was created under (SET ... FROM CURRENT): a call that names its
-- schema (a tenant's, docs/several-issuers.md "Where the data lives") writes that schema's tables
-- whatever the search_path of the connection it comes on. Its statements run on generic plans
-- from the first call (plan_cache_mode): the plans PostgreSQL settles on after five custom ones
-- anyway (equality lookups by parameter), without planning those five again in every backend for
-- every schema, which a process serving many tenants' schemas otherwise does all the time.
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
) LANGUAGE plpgsql SET search_path FROM CURRENT SET plan_cache_mode = force_generic_plan AS $$
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
