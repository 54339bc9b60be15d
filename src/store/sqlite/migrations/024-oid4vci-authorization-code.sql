-- The authorization code flow of the OpenID4VCI door
-- (docs/interface.md "OpenID4VCI: the wallet door"; RFC 6749 §4.1, RFC 9126, RFC 7636). Times are epoch ms.

-- Which grant an offer is redeemed by: its pre-authorized code, or an authorization (the wallet
-- carries the offer id as `issuer_state`, and the holder signs in). Existing offers are
-- pre-authorized.
ALTER TABLE oid4vci_offers ADD COLUMN grant_type TEXT NOT NULL DEFAULT 'pre-authorized_code'
  CHECK (grant_type IN ('pre-authorized_code', 'authorization_code'));

-- One row per authorization request: pushed (its request_uri), then the holder's sign-in at the
-- login provider, then the authorization code, then the tokens it gave. Nothing secret is kept in
-- the clear: `request_hash`, `login_hash`, `code_hash` and `refresh_hash` are SHA-256 digests.
-- state: 'pushed' → 'login' → 'code' → 'token'; 'refused' when the sign-in failed. Every change
-- of state is one conditional UPDATE, so a request_uri, a sign-in or a code is used once.
-- `expires_at` is the expiry of the current step (request_uri, sign-in, code, then access token).
CREATE TABLE oid4vci_authorizations (
  request_hash        TEXT PRIMARY KEY,
  client_id           TEXT NOT NULL,
  redirect_uri        TEXT NOT NULL,
  code_challenge      TEXT NOT NULL,
  wallet_state        TEXT,
  configuration_id    TEXT NOT NULL,
  details             TEXT,                     -- JSON: the authorization_details asked for
  offer_hash          TEXT,                     -- the offer of its issuer_state, if any
  dpop_jkt            TEXT,                     -- RFC 9449: the key the code, then the tokens, are bound to
  state               TEXT NOT NULL CHECK (state IN ('pushed', 'login', 'code', 'token', 'refused')),
  expires_at          INTEGER NOT NULL,
  login_hash          TEXT UNIQUE,
  login_verifier      TEXT,                     -- RFC 7636 verifier of the sign-in (sent only to the provider's token endpoint)
  user_id             TEXT,
  code_hash           TEXT UNIQUE,
  refresh_hash        TEXT UNIQUE,
  refresh_expires_at  INTEGER,
  created_at          INTEGER NOT NULL
);
CREATE INDEX oid4vci_authorizations_expiry ON oid4vci_authorizations (expires_at);
