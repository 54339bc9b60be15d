import type * as Pkcs11Js from 'pkcs11js';
import { AppError } from '../../errors.js';
import { KeyError } from '../key-error.js';
import { isPkcs11Error, pkcs11Reason } from './pkcs11-errors.js';
import { TokenLogin } from './token-login.js';

/**
 * The connection of KEY_BACKEND=pkcs11 to its token: the library loaded once per process, the
 * token's slot, the login, and a pool of sessions (src/keys/pkcs11-backend.ts does the key
 * operations on them).
 *
 * PKCS#11 v2.40 §5.6: a session runs one operation at a time, and a login is shared by every
 * session of the application with that token. Signing therefore takes a session from a pool (a
 * new one when all are busy, up to PKCS11_MAX_SESSIONS), so concurrent signatures do not queue
 * behind one session; C_Sign runs off the event loop. A token or session error is retried once on a
 * fresh connection (the library finalized and initialized again, the slot found again, a new
 * login); when that fails too, the caller gets 503 `UNAVAILABLE` naming the backend, and the next
 * signature or `/readyz` probe tries again, so the kit recovers without a restart.
 */

type Pkcs11 = Pkcs11Js.PKCS11;
type Handle = Buffer;
export type Pkcs11Module = typeof Pkcs11Js;

/** PKCS11_MAX_SESSIONS's default: the most sessions one pool opens on its token. */
export const DEFAULT_MAX_SESSIONS = 32;

// PKCS#11 v2.40 CK_STATE values of a logged-in user's session (pkcs11js exports no CKS_* names).
const CKS_RO_USER_FUNCTIONS = 1;
const CKS_RW_USER_FUNCTIONS = 3;

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
/** The pkcs11js binding, imported on first use (a native addon). */
export async function pkcs11js(): Promise<Pkcs11Module> {
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
  /** PKCS11_MAX_SESSIONS: the most sessions the pool opens on the token (default 32). */
  maxSessions?: number | undefined;
}

export class TokenSessions {
  private mod: LoadedModule | undefined;
  private generation = -1;
  private slot: Handle | undefined;
  private idle: Handle[] = [];
  private sessions = 0;
  private waiting: (() => void)[] = [];
  private handles = new Map<string, Handle>();
  private closed = false;
  private readonly tokenLogin: TokenLogin;

  constructor(
    private readonly options: Pkcs11Options,
    readonly pk: Pkcs11Module,
  ) {
    this.tokenLogin = new TokenLogin(options.pin, options.pinFile, this.where);
  }

  /** The loaded library (of the generation connected now). */
  get lib(): Pkcs11 {
    return this.mod!.lib;
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
      if (state !== CKS_RO_USER_FUNCTIONS && state !== CKS_RW_USER_FUNCTIONS)
        this.tokenLogin.login(lib, this.pk.CKU_USER, session);
    } catch (err) {
      this.discard(session);
      throw err;
    }
    return session;
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
      if (this.sessions < (this.options.maxSessions ?? DEFAULT_MAX_SESSIONS)) return this.newSession();
      await new Promise<void>((wake) => this.waiting.push(wake));
    }
  }

  private release(session: Handle, generation: number): void {
    if (generation !== this.generation) this.waiting.shift()?.();
    else if (this.closed) this.discard(session);
    else {
      this.idle.push(session);
      this.waiting.shift()?.();
    }
  }

  /** The private (or public) key object with this CKA_ID. */
  find(session: Handle, id: Buffer, objectClass: number): Handle | undefined {
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

  /** The private key object with this CKA_ID, found once per library generation. */
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

  /** 503 `UNAVAILABLE` naming the backend, never the PIN. */
  unavailable(err: unknown): AppError {
    return new AppError(
      'UNAVAILABLE',
      `the key backend (pkcs11, ${this.where}) cannot sign or make keys now; retry later`,
      { keyBackend: 'pkcs11' },
      { cause: err },
    );
  }

  /** CKM_ECDSA over a SHA-256 `digest` with the private key of CKA_ID `id`: r||s. */
  async signDigest(id: Buffer, label: string, digest: Buffer): Promise<Buffer> {
    if (this.closed) throw this.unavailable(new Error('closed'));
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

  /** Runs `fn` on a pooled session, with the same one retry on a fresh connection as signing. */
  async withSession<T>(fn: (session: Handle) => Promise<T> | T): Promise<T> {
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
