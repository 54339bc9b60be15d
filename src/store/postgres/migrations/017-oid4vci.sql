-- The OpenID4VCI door (docs/interface.md "OpenID4VCI: the wallet door"), as
-- sqlite/migrations/011-oid4vci.sql.
--
-- Its credentials are recorded like any other, with channel 'oid4vci'. They go to the wallet in
-- the credential response, so nothing is uploaded: their upload_state is 'none' (never pending,
-- never in the outbox). record_issuance is 016-status-jobs.sql's but for that state.
ALTER TABLE issuances DROP CONSTRAINT issuances_channel_check;
ALTER TABLE issuances ADD CONSTRAINT issuances_channel_check
  CHECK (channel IN ('hosted', 'direct', 'oid4vci'));
ALTER TABLE issuances DROP CONSTRAINT issuances_upload_state_check;
ALTER TABLE issuances ADD CONSTRAINT issuances_upload_state_check
  CHECK (upload_state IN ('pending', 'uploaded', 'failed', 'none'));

CREATE OR REPLACE FUNCTION record_issuance(
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
      p_partition, p_index, p_subject_hash, p_kid, p_created_at, p_expires_at, p_envelope,
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

-- One row per credential offer: the offer, its pre-authorized code, its transaction code, the
-- access token the code was exchanged for, and the credential it gave. Nothing secret is kept in
-- the clear: `offer_hash`, `code_hash`, `tx_code_hash` and `token_hash` are SHA-256 digests
-- (src/issuance/oid4vci-door.ts). Times are epoch ms, as in SQLite.
-- state: 'offered' (code not yet used) → 'token' (exchanged for an access token) → 'issued'
-- (the credential was signed); 'locked' after too many wrong transaction codes. Every change of
-- state is one conditional UPDATE, so two instances never both take the same code or token.
CREATE TABLE oid4vci_offers (
  offer_hash        TEXT PRIMARY KEY,
  code_hash         TEXT NOT NULL UNIQUE,
  schema_id         TEXT NOT NULL,
  configuration_id  TEXT NOT NULL,
  user_id           TEXT NOT NULL,
  email_hash        TEXT,
  claims            TEXT,
  tx_code_hash      TEXT,
  tx_code_attempts  INTEGER NOT NULL DEFAULT 0,
  state             TEXT NOT NULL CHECK (state IN ('offered', 'token', 'issued', 'locked')),
  expires_at        BIGINT NOT NULL,
  token_hash        TEXT UNIQUE,
  token_expires_at  BIGINT,
  dpop_jkt          TEXT,
  credential_id     TEXT,
  created_by        TEXT NOT NULL,
  created_at        BIGINT NOT NULL
);
CREATE INDEX oid4vci_offers_expiry ON oid4vci_offers (expires_at);

-- c_nonce values (OpenID4VCI 1.0 §7): each taken once, by the first proof that carries it.
CREATE TABLE oid4vci_nonces (
  nonce       TEXT PRIMARY KEY,
  expires_at  BIGINT NOT NULL
);
CREATE INDEX oid4vci_nonces_expiry ON oid4vci_nonces (expires_at);
