-- Signing keys declared compromised (docs/operations.md "A signing key is compromised"): never
-- published again, whatever holds the key itself.
CREATE TABLE compromised_keys (
  kid     TEXT PRIMARY KEY,
  at      TEXT NOT NULL,
  actor   TEXT NOT NULL,
  reason  TEXT NOT NULL
);
