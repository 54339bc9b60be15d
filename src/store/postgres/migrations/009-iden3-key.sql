-- The Iden3 BabyJubJub issuer key, shared by every instance like the signing keys of 003
-- (docs/security.md "Keys shared by several instances"): its content sealed with AES-256-GCM under KEY_ENCRYPTION_KEY
-- (additional data `iden3-bjj:<public_key>`), imported from KEYS_DIR/iden3-bjj.json (or generated
-- in development) by the first start. One row: instances starting together insert with
-- ON CONFLICT DO NOTHING and all read back the one that won. Never rotated (it names the DID).
CREATE TABLE iden3_key (
  id          INTEGER PRIMARY KEY CHECK (id = 1),
  public_key  TEXT NOT NULL,
  created_at  TIMESTAMPTZ NOT NULL,
  sealed      TEXT NOT NULL
);
