import { createHash, createPublicKey, type JsonWebKey, timingSafeEqual } from 'node:crypto';
import { statSync } from 'node:fs';
import { calculateJwkThumbprint, type JWK } from 'jose';
import type * as Pkcs11Js from 'pkcs11js';
import { type KeyBackendConfig, readPinFile } from '../config/key-backend-config.js';
import { AppError } from '../errors.js';
import type { HeldKey, KeyBackend, KeyCustody } from './key-backend.js';
import type { KeyData, KeyPurpose } from './key-data.js';
import { KeyError } from './key-error.js';

/**
 * KEY_BACKEND=pkcs11 (docs/security.md "Keys in a hardware security module"): ES256 keys generated
 * inside a PKCS#11 token (an HSM; SoftHSM2 in tests) as token objects that are sensitive and not
 * extractable, and every signature made by the token. The stored key keeps only its public JWK
 * and `token: { backend: 'pkcs11', label, id }`, `id` being the objects' CKA_ID (the kid's bytes).
 *
 * PKCS#11 v2.40 §5.6: a session runs one operation at a time, and a login is shared by every
 * session of the application with that token. Signing therefore takes a session from a pool (a
 * new one when all are busy, up to `MAX_SESSIONS`), so concurrent signatures do not queue behind
 * one session; C_Sign runs off the event loop. A token or session error is retried once on a
 * fresh connection (the library finalized and initialized again, the slot found again, a new
 * login); when that fails too, the caller gets 503 `UNAVAILABLE` naming the backend, and the next
 * signature or `/readyz` probe tries again, so the kit recovers without a restart.
 *
 * A login outlives a PIN changed on the token (C_SetPIN by another application ends no login in
 * PKCS#11 v2.40, and SoftHSM2 keeps it), so a PIN change bites at the next login: after the token
 * was away, or at a restart. Each login reads PKCS11_PIN_FILE again, so writing the token's new PIN there
 * is how an operator follows a PIN change without a restart; a PIN the token refused is not
 * presented again until the file is written again, since tokens lock a PIN after a few wrong tries.
 */

type Pkcs11 = Pkcs11Js.PKCS11;
type Handle = Buffer;
type Pkcs11Module = typeof Pkcs11Js;

const MAX_SESSIONS = 32;

// PKCS#11 v2.40 CK_STATE values of a logged-in user's session (pkcs11js exports no CKS_* names).
const CKS_RO_USER_FUNCTIONS = 1;
const CKS_RW_USER_FUNCTIONS = 3;

// X9.62 namedCurve prime256v1 (1.2.840.10045.3.1.7), DER: the CKA_EC_PARAMS of a P-256 key.
const P256_PARAMS = Buffer.from('06082a8648ce3d030107', 'hex');

/** One loaded library per path and process: C_Initialize is process-wide (PKCS#11 v2.40 §5.4). */
interface LoadedModule {
  lib: Pkcs11;
  /** Bumped by every finalize/initialize: sessions and handles of an older generation are gone. */
  generation: number;
  /**
   * Signatures in flight, with the buffers the thread pool reads and writes until each settles
   * (held here so that nothing collects them): a re-initialization waits for them.
   */
  inFlight: Map<Promise<unknown>, Buffer[]>;
  /** A re-initialization under way, shared by whoever asks meanwhile. */
  reinit: Promise<void> | undefined;
}
const loaded = new Map<string, LoadedModule>();

let binding: Pkcs11Module | undefined;
async function pkcs11js(): Promise<Pkcs11Module> {
  if (!binding) binding = ((await import('pkcs11js')) as unknown as { default: Pkcs11Module }).default;
  return binding;
}

export interface Pkcs11Options {
  module: string;
  token: { label: string } | { slot: number };
  /** The PIN read at start (PKCS11_PIN, or PKCS11_PIN_FILE's first line then). */
  pin: string;
  /** PKCS11_PIN_FILE: read again at every login. */
  pinFile?: string | undefined;
}

/** A PIN the token refused, as its SHA-256, and the version of PKCS11_PIN_FILE it came from. */
interface RefusedPin {
  digest: Buffer;
  source: string;
  reason: string;
}

/** Opens the token named by the configuration: the library loads, the token is found, the PIN logs in. */
export async function openPkcs11Backend(
  config: Extract<KeyBackendConfig, { kind: 'pkcs11' }>,
  pin: string,
): Promise<Pkcs11Backend> {
  const backend = new Pkcs11Backend(
    { module: config.module, token: config.token, pin, pinFile: config.pinFile },
    await pkcs11js(),
  );
  await backend.connect();
  return backend;
}

/** Whether a thrown value came from the PKCS#11 library (a CKR_* code). */
function isPkcs11Error(err: unknown): boolean {
  return /CKR_|Pkcs11/i.test(`${(err as Error)?.name ?? ''} ${(err as Error)?.message ?? ''}`);
}

/** The CKR_* name of a PKCS#11 error, never anything else it may carry. */
export function pkcs11Reason(err: unknown): string {
  const m = /CKR_[A-Z_]+/.exec((err as Error)?.message ?? '');
  return m ? m[0] : ((err as Error)?.message ?? String(err)).split('\n')[0]!;
}

export class Pkcs11Backend implements KeyBackend {
  readonly name = 'pkcs11' as const;
  private mod: LoadedModule | undefined;
  private generation = -1;
  private slot: Handle | undefined;
  private idle: Handle[] = [];
  private sessions = 0;
  private waiting: (() => void)[] = [];
  private handles = new Map<string, Handle>();
  private closed = false;
  /** The PIN last read that was not refused (PKCS11_PIN_FILE may be unreadable while it is replaced). */
  private pin: string;
  private refused: RefusedPin | undefined;

  constructor(
    private readonly options: Pkcs11Options,
    private readonly pk: Pkcs11Module,
  ) {
    this.pin = options.pin;
  }

  /**
   * Sessions open on the token now, idle or signing: the pool opens one only when every other is
   * busy, so this is the most signatures that were in flight at once (the bench reads it).
   */
  get sessionsOpen(): number {
    return this.sessions;
  }

  /** What to call the token in messages (never the PIN). */
  get where(): string {
    const t = this.options.token;
    return 'label' in t ? `token "${t.label}"` : `slot ${t.slot}`;
  }

  /** Loads and initializes the library once per process, finds the token and logs in. */
  async connect(): Promise<void> {
    let mod = loaded.get(this.options.module);
    if (!mod) {
      const lib = new this.pk.PKCS11();
      try {
        lib.load(this.options.module);
        lib.C_Initialize(this.initArgs());
      } catch (err) {
        throw new KeyError(`PKCS11_MODULE: ${this.options.module} does not load (${pkcs11Reason(err)})`);
      }
      mod = { lib, generation: 0, inFlight: new Map(), reinit: undefined };
      loaded.set(this.options.module, mod);
    }
    this.mod = mod;
    this.attach();
  }

  /**
   * PKCS#11 v2.40 §5.4: C_Initialize without arguments promises the library that no two threads
   * call it at once; C_SignAsync signs on libuv's thread pool while this thread opens sessions
   * and starts other operations, so the library is told to lock with the OS's primitives.
   */
  private initArgs(): Pkcs11Js.InitializationOptions {
    return { flags: this.pk.CKF_OS_LOCKING_OK };
  }

  /** Finds the slot and logs in on a first session (the current library generation). */
  private attach(): void {
    const { lib } = this.mod!;
    this.generation = this.mod!.generation;
    this.idle = [];
    this.sessions = 0;
    this.handles.clear();
    // Whoever waited for a session of the old generation asks again.
    for (const wake of this.waiting.splice(0)) wake();
    this.slot = this.findSlot(lib);
    const session = this.newSession();
    this.idle.push(session);
  }

  private findSlot(lib: Pkcs11): Handle {
    const token = this.options.token;
    let slots: Handle[];
    try {
      slots = lib.C_GetSlotList(true);
    } catch (err) {
      throw new KeyError(`PKCS11_MODULE: cannot list the slots (${pkcs11Reason(err)})`);
    }
    if ('slot' in token) {
      const slot = slots.find((s) => s.readUIntLE(0, Math.min(6, s.length)) === token.slot);
      if (!slot) throw new KeyError(`PKCS11_SLOT: no token in slot ${token.slot}`);
      return slot;
    }
    const slot = slots.find((s) => lib.C_GetTokenInfo(s).label.trim() === token.label);
    if (!slot) throw new KeyError(`PKCS11_TOKEN_LABEL: no token labelled "${token.label}"`);
    return slot;
  }

  /** A new session on the token, logged in (a login is shared by the application's sessions). */
  private newSession(): Handle {
    const { lib } = this.mod!;
    const session = lib.C_OpenSession(this.slot!, this.pk.CKF_SERIAL_SESSION | this.pk.CKF_RW_SESSION);
    this.sessions++;
    try {
      const { state } = lib.C_GetSessionInfo(session);
      if (state !== CKS_RO_USER_FUNCTIONS && state !== CKS_RW_USER_FUNCTIONS) this.login(session);
    } catch (err) {
      this.discard(session);
      throw err;
    }
    return session;
  }

  /**
   * Logs the application in with the PIN as it is now (PKCS11_PIN_FILE read again). A PIN the
   * token refused is not presented again until the file changes: each wrong try counts towards
   * the token locking its PIN, and `/readyz` probes would spend them in seconds.
   */
  private login(session: Handle): void {
    const { pin, source } = this.currentPin();
    const digest = createHash('sha256').update(pin).digest();
    const refused = this.refused;
    if (refused && refused.source === source && timingSafeEqual(refused.digest, digest))
      throw new KeyError(
        `PKCS11_PIN: the ${this.where} refused this PIN (${refused.reason}); it is not tried again until ${
          this.options.pinFile === undefined ? 'a restart with the right PIN' : 'PKCS11_PIN_FILE is written'
        }`,
      );
    try {
      this.mod!.lib.C_Login(session, this.pk.CKU_USER, pin);
    } catch (err) {
      if (/CKR_USER_ALREADY_LOGGED_IN/.test((err as Error).message)) return;
      if (/CKR_PIN_(INCORRECT|INVALID|LEN_RANGE|LOCKED|EXPIRED)/.test((err as Error).message)) {
        this.refused = { digest, source, reason: pkcs11Reason(err) };
        throw new KeyError(`PKCS11_PIN: the ${this.where} refused the login (${pkcs11Reason(err)})`);
      }
      throw err;
    }
    this.refused = undefined;
    this.pin = pin;
  }

  /**
   * The PIN to log in with: PKCS11_PIN_FILE's first line as the file is now (the last good PIN
   * while it cannot be read, e.g. a secret mount being replaced), and which version of the file
   * that is (inode and modification time: writing the file again, even the same PIN, is a new one).
   */
  private currentPin(): { pin: string; source: string } {
    const file = this.options.pinFile;
    if (file !== undefined) {
      try {
        const { ino, mtimeMs } = statSync(file);
        const pin = readPinFile(file);
        if (pin) return { pin, source: `${ino}:${mtimeMs}` };
      } catch {
        // Unreadable for now: the last good PIN below.
      }
    }
    return { pin: this.pin, source: '' };
  }

  private discard(session: Handle): void {
    this.sessions--;
    this.waiting.shift()?.();
    try {
      this.mod!.lib.C_CloseSession(session);
    } catch {
      // Already gone with the token.
    }
  }

  private async acquire(): Promise<Handle> {
    for (;;) {
      const { reinit } = this.mod!;
      if (reinit) await reinit.catch(() => undefined);
      if (this.mod!.generation !== this.generation) this.attach();
      const idle = this.idle.pop();
      if (idle) return idle;
      if (this.sessions < MAX_SESSIONS) return this.newSession();
      await new Promise<void>((wake) => this.waiting.push(wake));
    }
  }

  private release(session: Handle, generation: number): void {
    if (generation === this.generation) this.idle.push(session);
    this.waiting.shift()?.();
  }

  /** The private (or public) key object with this CKA_ID, found once per library generation. */
  private find(session: Handle, id: Buffer, objectClass: number): Handle | undefined {
    const { lib } = this.mod!;
    lib.C_FindObjectsInit(session, [
      { type: this.pk.CKA_CLASS, value: objectClass },
      { type: this.pk.CKA_ID, value: id },
    ]);
    try {
      return lib.C_FindObjects(session, 1)[0];
    } finally {
      lib.C_FindObjectsFinal(session);
    }
  }

  private privateHandle(session: Handle, id: Buffer, label: string): Handle {
    const key = id.toString('hex');
    let handle = this.handles.get(key);
    if (!handle) {
      handle = this.find(session, id, this.pk.CKO_PRIVATE_KEY);
      if (!handle) throw new KeyError(`${this.where}: no private key "${label}" (CKA_ID ${key})`);
      this.handles.set(key, handle);
    }
    return handle;
  }

  /** One attempt on a pooled session; the session is dropped, not pooled, when it failed. */
  private async signOnce(id: Buffer, label: string, digest: Buffer): Promise<Buffer> {
    const session = await this.acquire();
    const generation = this.generation;
    const mod = this.mod!;
    try {
      const handle = this.privateHandle(session, id, label);
      mod.lib.C_SignInit(session, { mechanism: this.pk.CKM_ECDSA }, handle);
      const out = Buffer.alloc(64);
      const pending = mod.lib.C_SignAsync(session, digest, out);
      mod.inFlight.set(pending, [digest, out]);
      let signature: Buffer;
      try {
        signature = await pending;
      } finally {
        mod.inFlight.delete(pending);
      }
      this.release(session, generation);
      return signature;
    } catch (err) {
      if (generation === this.generation) this.discard(session);
      throw err;
    }
  }

  /**
   * Finalizes and initializes the library again, then finds the token and logs in: what a token
   * that was removed, restarted or whose PIN changed needs. Shared by concurrent callers, and
   * only after the signatures in flight have settled (C_Finalize under them is undefined).
   */
  private async reconnect(): Promise<void> {
    const mod = this.mod!;
    if (mod.generation === this.generation) {
      mod.reinit ??= (async () => {
        while (mod.inFlight.size > 0) await Promise.allSettled([...mod.inFlight.keys()]);
        try {
          mod.lib.C_Finalize();
        } catch {
          // Not initialized any more: initialize below.
        }
        mod.lib.C_Initialize(this.initArgs());
        mod.generation++;
      })().finally(() => {
        mod.reinit = undefined;
      });
      await mod.reinit;
    }
    this.attach();
  }

  private unavailable(err: unknown): AppError {
    return new AppError(
      'UNAVAILABLE',
      `the key backend (pkcs11, ${this.where}) cannot sign or make keys now; retry later`,
      { keyBackend: 'pkcs11' },
      { cause: err },
    );
  }

  /** ES256 over `data`: SHA-256 here, CKM_ECDSA in the token; its r||s is the JWS form (RFC 7518 §3.4). */
  async sign(id: Buffer, label: string, data: Uint8Array): Promise<Buffer> {
    if (this.closed) throw this.unavailable(new Error('closed'));
    const digest = createHash('sha256').update(data).digest();
    try {
      return await this.signOnce(id, label, digest);
    } catch (first) {
      if (!isPkcs11Error(first) && !(first instanceof KeyError)) throw first;
      try {
        await this.reconnect();
        return await this.signOnce(id, label, digest);
      } catch (err) {
        throw this.unavailable(err);
      }
    }
  }

  async generate(purpose: KeyPurpose): Promise<{ kid: string; custody: KeyCustody }> {
    return this.withSession((session) => this.generateIn(session, purpose));
  }

  private async generateIn(
    session: Handle,
    purpose: KeyPurpose,
  ): Promise<{ kid: string; custody: KeyCustody }> {
    const { lib } = this.mod!;
    const pk = this.pk;
    const pending = `issuer-kit ${purpose} (being made)`;
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
    const label = tokenLabel(purpose, kid);
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
    const label = tokenLabel(purpose, kid);
    await this.withSession(async (session) => {
      const { lib } = this.mod!;
      const pk = this.pk;
      if (this.find(session, id, pk.CKO_PRIVATE_KEY)) return;
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
    const inToken = await this.withSession(async (session) => {
      const handle = this.find(session, id, this.pk.CKO_PUBLIC_KEY);
      if (!handle || !this.find(session, id, this.pk.CKO_PRIVATE_KEY)) return undefined;
      const point = this.mod!.lib.C_GetAttributeValue(session, handle, [{ type: this.pk.CKA_EC_POINT }])[0]
        ?.value;
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
    return this.withSession(async (session) => {
      const { lib } = this.mod!;
      const pk = this.pk;
      const handle = this.find(session, Buffer.from(idHex, 'hex'), pk.CKO_PRIVATE_KEY);
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

  /** Runs `fn` on a pooled session, with the same one retry on a fresh connection as signing. */
  private async withSession<T>(fn: (session: Handle) => Promise<T> | T): Promise<T> {
    const once = async () => {
      const session = await this.acquire();
      const generation = this.generation;
      try {
        const result = await fn(session);
        this.release(session, generation);
        return result;
      } catch (err) {
        if (isPkcs11Error(err)) {
          if (generation === this.generation) this.discard(session);
        } else this.release(session, generation);
        throw err;
      }
    };
    try {
      return await once();
    } catch (err) {
      if (!isPkcs11Error(err)) throw err;
      try {
        await this.reconnect();
        return await once();
      } catch (again) {
        if (isPkcs11Error(again) || again instanceof KeyError) throw this.unavailable(again);
        throw again;
      }
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const session of this.idle.splice(0)) this.discard(session);
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
