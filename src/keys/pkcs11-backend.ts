import { createHash, createPublicKey, type JsonWebKey } from 'node:crypto';
import { calculateJwkThumbprint, type JWK } from 'jose';
import type * as Pkcs11Js from 'pkcs11js';
import type { KeyBackendConfig } from '../config/key-backend-config.js';
import type { HeldKey, KeyBackend, KeyCustody } from './key-backend.js';
import type { KeyData, KeyPurpose } from './key-data.js';
import { KeyError } from './key-error.js';
import { type Pkcs11Module, type Pkcs11Options, pkcs11js, TokenSessions } from './pkcs11/token-sessions.js';

/**
 * KEY_BACKEND=pkcs11 (docs/security.md "Keys in a hardware security module"): ES256 keys generated
 * inside a PKCS#11 token (an HSM; SoftHSM2 in tests) as token objects that are sensitive and not
 * extractable, and every signature made by the token. The stored key keeps only its public JWK
 * and `token: { backend: 'pkcs11', label, id }`, `id` being the objects' CKA_ID (the kid's bytes).
 *
 * The key operations are here; the connection they run on (the library, the login and its PIN,
 * the session pool, the one retry on a fresh connection) is src/keys/pkcs11/.
 */

type Handle = Buffer;

// X9.62 namedCurve prime256v1 (1.2.840.10045.3.1.7), DER: the CKA_EC_PARAMS of a P-256 key.
const P256_PARAMS = Buffer.from('06082a8648ce3d030107', 'hex');

/** Opens the token named by the configuration: the library loads, the token is found, the PIN logs in. */
export async function openPkcs11Backend(
  config: Extract<KeyBackendConfig, { kind: 'pkcs11' }>,
  pin: string,
): Promise<Pkcs11Backend> {
  const backend = new Pkcs11Backend(
    {
      module: config.module,
      token: config.token,
      pin,
      pinFile: config.pinFile,
      maxSessions: config.maxSessions,
    },
    await pkcs11js(),
    config.labelPrefix,
  );
  await backend.connect();
  return backend;
}

export class Pkcs11Backend implements KeyBackend {
  readonly name = 'pkcs11' as const;
  private readonly token: TokenSessions;
  /** A tenant's share of its deployment's connection (`share`): closing it leaves the connection open. */
  private readonly shared: boolean;
  private closed = false;

  constructor(
    options: Pkcs11Options | TokenSessions,
    pk: Pkcs11Module,
    private readonly labelPrefix = '',
  ) {
    this.shared = options instanceof TokenSessions;
    this.token = options instanceof TokenSessions ? options : new TokenSessions(options, pk);
  }

  /**
   * The same connection (library, login, session pool) under another label prefix: what each
   * tenant of a TENANCY=multi deployment signs with (docs/several-issuers.md "Where the data lives").
   * It holds no session of its own, so the sessions open on the token are this pool's, however
   * many tenants share it; it signs only with the keys its tenant opens (each by its CKA_ID).
   */
  share(labelPrefix: string): Pkcs11Backend {
    return new Pkcs11Backend(this.token, this.token.pk, labelPrefix);
  }

  /**
   * Sessions open on the token now, idle or signing: the pool opens one only when every other is
   * busy, so this is the most signatures that were in flight at once (the bench reads it).
   */
  get sessionsOpen(): number {
    return this.token.sessionsOpen;
  }

  /** What to call the token in messages (never the PIN). */
  get where(): string {
    return this.token.where;
  }

  /** Loads and initializes the library once per process, finds the token and logs in. */
  connect(): Promise<void> {
    return this.token.connect();
  }

  /** ES256 over `data`: SHA-256 here, CKM_ECDSA in the token; its r||s is the JWS form (RFC 7518 §3.4). */
  sign(id: Buffer, label: string, data: Uint8Array): Promise<Buffer> {
    if (this.closed) return Promise.reject(this.token.unavailable(new Error('closed')));
    return this.token.signDigest(id, label, createHash('sha256').update(data).digest());
  }

  async generate(purpose: KeyPurpose): Promise<{ kid: string; custody: KeyCustody }> {
    return this.token.withSession((session) => this.generateIn(session, purpose));
  }

  private async generateIn(
    session: Handle,
    purpose: KeyPurpose,
  ): Promise<{ kid: string; custody: KeyCustody }> {
    const { lib, pk } = this.token;
    const pending = `${this.labelPrefix}issuer-kit ${purpose} (being made)`;
    const pair = lib.C_GenerateKeyPair(
      session,
      { mechanism: pk.CKM_EC_KEY_PAIR_GEN },
      [
        { type: pk.CKA_TOKEN, value: true },
        { type: pk.CKA_PRIVATE, value: false },
        { type: pk.CKA_VERIFY, value: true },
        { type: pk.CKA_EC_PARAMS, value: P256_PARAMS },
        { type: pk.CKA_LABEL, value: pending },
      ],
      [
        { type: pk.CKA_TOKEN, value: true },
        { type: pk.CKA_PRIVATE, value: true },
        { type: pk.CKA_SENSITIVE, value: true },
        { type: pk.CKA_EXTRACTABLE, value: false },
        { type: pk.CKA_SIGN, value: true },
        { type: pk.CKA_LABEL, value: pending },
      ],
    );
    const point = lib.C_GetAttributeValue(session, pair.publicKey, [{ type: pk.CKA_EC_POINT }])[0]?.value;
    const publicJwk = jwkOfPoint(point as Buffer);
    const kid = await calculateJwkThumbprint(publicJwk, 'sha256');
    const label = `${this.labelPrefix}${tokenLabel(purpose, kid)}`;
    // The kid, known only now, names both objects: CKA_ID to find them, CKA_LABEL for a person.
    for (const handle of [pair.publicKey, pair.privateKey])
      lib.C_SetAttributeValue(session, handle, [
        { type: pk.CKA_ID, value: Buffer.from(kid, 'base64url') },
        { type: pk.CKA_LABEL, value: label },
      ]);
    return {
      kid,
      custody: {
        publicJwk: { ...publicJwk, kty: 'EC', kid, alg: 'ES256' },
        token: { backend: 'pkcs11', label, id: Buffer.from(kid, 'base64url').toString('hex') },
      },
    };
  }

  /**
   * Puts an existing software P-256 key into the token as a sensitive, non-extractable token
   * object with the same public key (so the same kid): the migration of docs/security.md
   * "Moving keys into the token". An object already there with this CKA_ID is kept.
   */
  async importKey(purpose: KeyPurpose, privateJwk: JWK): Promise<{ kid: string; custody: KeyCustody }> {
    if (privateJwk.kty !== 'EC' || privateJwk.crv !== 'P-256' || typeof privateJwk.d !== 'string')
      throw new KeyError(`only EC P-256 keys go into the token (this ${purpose} key is ${privateJwk.kty})`);
    const publicJwk: JWK = { kty: 'EC', crv: 'P-256', x: privateJwk.x!, y: privateJwk.y! };
    const kid = await calculateJwkThumbprint(publicJwk, 'sha256');
    const id = Buffer.from(kid, 'base64url');
    const label = `${this.labelPrefix}${tokenLabel(purpose, kid)}`;
    await this.token.withSession(async (session) => {
      const { lib, pk } = this.token;
      if (this.token.find(session, id, pk.CKO_PRIVATE_KEY)) return;
      const common = [
        { type: pk.CKA_TOKEN, value: true },
        { type: pk.CKA_KEY_TYPE, value: pk.CKK_EC },
        { type: pk.CKA_EC_PARAMS, value: P256_PARAMS },
        { type: pk.CKA_ID, value: id },
        { type: pk.CKA_LABEL, value: label },
      ];
      const point = Buffer.concat([
        Buffer.from([0x04]),
        Buffer.from(publicJwk.x!, 'base64url'),
        Buffer.from(publicJwk.y!, 'base64url'),
      ]);
      lib.C_CreateObject(session, [
        { type: pk.CKA_CLASS, value: pk.CKO_PUBLIC_KEY },
        ...common,
        { type: pk.CKA_VERIFY, value: true },
        // PKCS#11 v2.40 §2.3.3: CKA_EC_POINT is the DER OCTET STRING of the X9.62 point.
        { type: pk.CKA_EC_POINT, value: Buffer.concat([Buffer.from([0x04, point.length]), point]) },
      ]);
      lib.C_CreateObject(session, [
        { type: pk.CKA_CLASS, value: pk.CKO_PRIVATE_KEY },
        ...common,
        { type: pk.CKA_PRIVATE, value: true },
        { type: pk.CKA_SENSITIVE, value: true },
        { type: pk.CKA_EXTRACTABLE, value: false },
        { type: pk.CKA_SIGN, value: true },
        { type: pk.CKA_VALUE, value: Buffer.from(privateJwk.d!, 'base64url') },
      ]);
    });
    return {
      kid,
      custody: {
        publicJwk: { ...publicJwk, kty: 'EC', kid, alg: 'ES256' },
        token: { backend: 'pkcs11', label, id: id.toString('hex') },
      },
    };
  }

  async open(data: KeyData, where: string): Promise<HeldKey> {
    const ref = data.token as { backend: string; label: string; id?: unknown };
    if (typeof ref.id !== 'string' || !/^[0-9a-f]+$/.test(ref.id))
      throw new KeyError(`${where}: token.id: the CKA_ID of the key in the token (hex) is missing`);
    const id = Buffer.from(ref.id, 'hex');
    const stored = data.publicJwk as JWK;
    const publicJwk: JWK = { kty: 'EC', crv: 'P-256', x: stored.x!, y: stored.y! };
    // The token's own public key must be the stored one: a token swapped under the same labels
    // would otherwise sign with keys nobody publishes.
    const inToken = await this.token.withSession(async (session) => {
      const { lib, pk } = this.token;
      const handle = this.token.find(session, id, pk.CKO_PUBLIC_KEY);
      if (!handle || !this.token.find(session, id, pk.CKO_PRIVATE_KEY)) return undefined;
      const point = lib.C_GetAttributeValue(session, handle, [{ type: pk.CKA_EC_POINT }])[0]?.value;
      return jwkOfPoint(point as Buffer);
    });
    if (!inToken)
      throw new KeyError(`${where}: token: ${this.where} holds no key "${ref.label}" (CKA_ID ${ref.id})`);
    if (inToken.x !== publicJwk.x || inToken.y !== publicJwk.y)
      throw new KeyError(
        `${where}: token: the key "${ref.label}" in ${this.where} is not this key (public keys differ)`,
      );
    return {
      publicJwk,
      publicKey: createPublicKey({ key: publicJwk as JsonWebKey, format: 'jwk' }),
      privateKey: undefined,
      custody: 'pkcs11',
      sign: (bytes) => this.sign(id, ref.label, bytes),
    };
  }

  async probe(key: HeldKey): Promise<void> {
    await key.sign(Buffer.from('issuer-kit key backend probe'));
  }

  /**
   * What doctor and the tests read about a key's private object: its PKCS#11 protections, and
   * whether asking for its value (CKA_VALUE) is refused, as it must be for a sensitive key.
   */
  async inspect(
    idHex: string,
  ): Promise<
    { extractable: boolean; sensitive: boolean; token: boolean; valueRefused: boolean } | undefined
  > {
    return this.token.withSession(async (session) => {
      const { lib, pk } = this.token;
      const handle = this.token.find(session, Buffer.from(idHex, 'hex'), pk.CKO_PRIVATE_KEY);
      if (!handle) return undefined;
      const [extractable, sensitive, token] = lib.C_GetAttributeValue(session, handle, [
        { type: pk.CKA_EXTRACTABLE },
        { type: pk.CKA_SENSITIVE },
        { type: pk.CKA_TOKEN },
      ]);
      let valueRefused = false;
      try {
        const value = lib.C_GetAttributeValue(session, handle, [{ type: pk.CKA_VALUE }])[0]?.value;
        valueRefused = !value || (value as Buffer).length === 0;
      } catch (err) {
        valueRefused = /CKR_ATTRIBUTE_SENSITIVE/.test((err as Error).message);
      }
      const bool = (a: Pkcs11Js.Attribute | undefined) => (a?.value as Buffer | undefined)?.[0] === 1;
      return { extractable: bool(extractable), sensitive: bool(sensitive), token: bool(token), valueRefused };
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    if (!this.shared) await this.token.close();
  }
}

/** How a key is named on the token for a person browsing it. */
function tokenLabel(purpose: KeyPurpose, kid: string): string {
  return `issuer-kit ${purpose} ${kid}`;
}

/** The P-256 public JWK of a CKA_EC_POINT (a DER OCTET STRING of the X9.62 point, or the bare point). */
function jwkOfPoint(value: Buffer): JWK {
  const point = value.length === 67 && value[0] === 0x04 && value[1] === 0x41 ? value.subarray(2) : value;
  if (point.length !== 65 || point[0] !== 0x04)
    throw new KeyError('the token returned an EC point that is not P-256');
  return {
    kty: 'EC',
    crv: 'P-256',
    x: point.subarray(1, 33).toString('base64url'),
    y: point.subarray(33, 65).toString('base64url'),
  };
}
