-- DPoP on the OpenID4VCI door (docs/interface.md "OpenID4VCI: the wallet door"; RFC 9449).
-- Times are epoch ms.

-- DPoP proofs already accepted (RFC 9449 §11.1): `proof_hash` is the SHA-256 of the proof key's
-- thumbprint and the proof's `jti`, kept until the proof's `iat` leaves the accepted window, so
-- a captured proof is refused by every instance for as long as it could otherwise be accepted.
CREATE TABLE oid4vci_dpop_proofs (
  proof_hash  TEXT PRIMARY KEY,
  expires_at  INTEGER NOT NULL
);
CREATE INDEX oid4vci_dpop_proofs_expiry ON oid4vci_dpop_proofs (expires_at);

-- Server-provided DPoP nonces (RFC 9449 §8, OID4VCI_DPOP_NONCE=required): any proof may carry one
-- until it expires.
CREATE TABLE oid4vci_dpop_nonces (
  nonce       TEXT PRIMARY KEY,
  expires_at  INTEGER NOT NULL
);
CREATE INDEX oid4vci_dpop_nonces_expiry ON oid4vci_dpop_nonces (expires_at);
