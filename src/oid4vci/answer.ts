/** A wallet endpoint's answer: its JSON body and the headers it carries (RFC 9449 §8: `DPoP-Nonce`). */
export interface ProtocolAnswer {
  /**
   * 200 unless given: 201 a pushed authorization request (RFC 9126 §2.2), 202 a deferred credential
   * (OpenID4VCI 1.0 §8.3, §9.2), 204 a notification (§11.2).
   */
  status?: 200 | 201 | 202 | 204;
  body: Record<string, unknown>;
  headers: Record<string, string>;
  /** The body encrypted to the wallet (OpenID4VCI 1.0 §10): sent instead, as `application/jwt`. */
  jwt?: string | undefined;
}
