-- Credential-signing and partner-JWT keys shared by every instance
-- (docs/several-instances.md "Running several instances"): the private JWK sealed with AES-256-GCM under KEY_ENCRYPTION_KEY (never stored in
-- clear), imported from KEYS_DIR on the first start. Every change bumps key_ring_version, which
-- each instance polls to reload its ring.
CREATE TABLE issuer_keys (
  kid         TEXT PRIMARY KEY,
  purpose     TEXT NOT NULL CHECK (purpose IN ('credential-signing', 'partner-jwt')),
  created_at  TIMESTAMPTZ NOT NULL,
  retired_at  TIMESTAMPTZ,
  sealed      TEXT NOT NULL
);
-- Exactly one active key per purpose, whichever instance rotates.
CREATE UNIQUE INDEX issuer_keys_one_active ON issuer_keys (purpose) WHERE retired_at IS NULL;

CREATE TABLE key_ring_version (
  id       INTEGER PRIMARY KEY CHECK (id = 1),
  version  BIGINT NOT NULL
);
INSERT INTO key_ring_version (id, version) VALUES (1, 0);
