import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../model.js';
import type { KeyMaterialStore, StoredKey } from '../store/store.js';
import { attachChain } from './certificates.js';
import type { KeyBackend } from './key-backend.js';
import {
  assembleRing,
  type KeyData,
  type KeyEnvironment,
  type KeyPurpose,
  type KeyRing,
  loadKeyRing,
  type ManagedKey,
  newKeyData,
  parseKeyData,
  readKeys,
  rotateKey,
} from './key-ring.js';
import type { X5cRotation } from './rotation-certificate.js';
import { openSealedKey, sealKey } from './sealed-key.js';
import { softwareBackend } from './software-backend.js';

/** The key ring the server signs with, and how a rotation reaches it. */
export interface KeyHolder {
  current(): KeyRing;
  reload(): Promise<KeyRing>;
  /**
   * Retires the active key of `purpose` and makes another one active (the ring reloads): the
   * standby key when there is one, else a new key. `x5c` (SD_JWT_ISSUER=x5c, credential-signing)
   * says whether a standby key may sign and how a new key gets its chain; a refusal changes nothing.
   */
  rotate(
    purpose: KeyPurpose,
    now: Date,
    x5c?: X5cRotation,
  ): Promise<{
    retired: ManagedKey[];
    created: ManagedKey;
    /**
     * True where the keys are database rows: the rotation's `key.rotated` event was written in its
     * transaction. Otherwise (key files) the caller writes it once the rotation is in place.
     */
    eventRecorded?: boolean;
  }>;
  /** Where the private keys live and sign (KEY_BACKEND). */
  readonly backend: KeyBackend;
  /** Resolves when the active signing key signs now (`/readyz`); rejects `UNAVAILABLE` otherwise. */
  probe(): Promise<void>;
  close(): void;
}

/** How a file key holder notices a rotation another process (a sibling worker) made. */
export interface FileKeyWatch {
  /** How often KEYS_DIR's files are looked at (names, sizes, times: no read unless they changed). */
  pollMs: number;
  /** After a reload the poll caused (tests await it). */
  onReload?: (ring: KeyRing) => void;
  /** A changed directory that does not load (e.g. read mid-rotation): the old ring stays. */
  onError?: (err: unknown) => void;
}

/** What the key files look like without reading them: a reload is due when it changes. */
function keysDirStamp(dir: string): string {
  try {
    return readdirSync(dir)
      .filter((f) => f.endsWith('.json'))
      .sort()
      .map((f) => {
        const st = statSync(join(dir, f));
        return `${f}:${st.size}:${st.mtimeMs}`;
      })
      .join('|');
  } catch {
    return '';
  }
}

/**
 * Keys as files in KEYS_DIR (one machine: SQLite). With `watch`, a rotation written by another
 * process sharing the folder (WORKERS=N) is picked up within one poll.
 */
export async function fileKeyHolder(
  dir: string,
  generateIfMissing: boolean,
  check: (ring: KeyRing) => void = () => {},
  environment: KeyEnvironment = 'production',
  watch?: FileKeyWatch,
  backend: KeyBackend = softwareBackend,
): Promise<KeyHolder> {
  let ring = await loadKeyRing(dir, { generateIfMissing, backend });
  check(ring);
  let stamp = keysDirStamp(dir);
  const reload = async () => {
    const seen = keysDirStamp(dir);
    const next = await loadKeyRing(dir, { generateIfMissing: false, backend });
    check(next);
    ring = next;
    stamp = seen;
    return ring;
  };
  let polling = false;
  const timer = watch
    ? setInterval(() => {
        if (polling || keysDirStamp(dir) === stamp) return;
        polling = true;
        reload().then(
          (next) => {
            polling = false;
            watch.onReload?.(next);
          },
          (err: unknown) => {
            polling = false;
            watch.onError?.(err);
          },
        );
      }, watch.pollMs)
    : undefined;
  timer?.unref();
  return {
    current: () => ring,
    reload,
    backend,
    probe: () => backend.probe(ring.signing),
    async rotate(purpose, now, x5c) {
      let certify: ((created: ManagedKey) => Promise<unknown>) | undefined;
      if (x5c) {
        const standby = (await readKeys(dir, backend)).find(
          (k) => k.purpose === purpose && k.standby && !k.retiredAt,
        );
        if (standby) {
          const problems = x5c.standbyProblems(standby);
          if (problems.length > 0) throw x5c.refused(`standby key ${standby.kid}: ${problems.join('; ')}`);
        } else {
          const chainFor = await x5c.certifierForNew();
          certify = async (created) => attachChain(created.file, await chainFor(created.publicKey));
        }
      }
      const rotated = await rotateKey(dir, purpose, now, certify, environment, backend);
      await reload();
      return rotated;
    },
    close() {
      if (timer) clearInterval(timer);
    },
  };
}

export interface DatabaseKeyOptions {
  /** Imported on the first start, when the database holds no key yet. */
  keysDir: string;
  generateIfMissing: boolean;
  /** AES-256-GCM key sealing the private keys (KEY_ENCRYPTION_KEY). */
  kek: Buffer;
  /** How often the ring version is read (a rotation elsewhere shows within this). */
  pollMs: number;
  log: Logger;
  /** Marked on keys this holder creates (production refuses development keys). */
  environment: KeyEnvironment;
  /** Refuses a ring the configuration cannot sign with (SD_JWT_ISSUER). */
  check?: (ring: KeyRing) => void;
  /** Where the private keys live and sign (KEY_BACKEND); software by default. */
  backend?: KeyBackend;
}

/**
 * Keys kept in the database, shared by every instance (docs/security.md "Keys shared by several instances"). Each
 * instance reads the ring version every `pollMs` (one indexed row) and reloads on a change, so a
 * rotation through any instance is used and published by all within one poll.
 */
export async function databaseKeyHolder(
  store: KeyMaterialStore,
  options: DatabaseKeyOptions,
): Promise<KeyHolder> {
  const { kek } = options;
  const backend = options.backend ?? softwareBackend;
  if ((await store.list()).length === 0) {
    const files = await loadKeyRing(options.keysDir, {
      generateIfMissing: options.generateIfMissing,
      backend,
    });
    const imported = await store.importIfEmpty(
      [...files.signingKeys, ...files.partnerKeys].map((k) =>
        storedKey(kek, k.kid, keyDataOf(k), { retiredAt: k.retiredAt, standby: k.standby, x5c: k.x5c }),
      ),
    );
    if (imported)
      options.log.info(
        { event: 'keys_imported', keysDir: options.keysDir },
        `keys: imported the keys of ${options.keysDir} into the database`,
      );
  }

  let version = -1;
  let ring: KeyRing | undefined;
  const load = async (): Promise<KeyRing> => {
    const seen = await store.version();
    const keys = await Promise.all((await store.list()).map((row) => keyOfRow(kek, row, backend)));
    const next = assembleRing(keys, 'database keys');
    options.check?.(next);
    ring = next;
    version = seen;
    return ring;
  };
  await load();

  let polling: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    polling = polling.then(async () => {
      try {
        if ((await store.version()) !== version) await load();
      } catch (err) {
        // The previous ring keeps signing; the next poll tries again.
        options.log.warn(
          { event: 'key_reload_failed', error: (err as Error).message },
          `keys: reload from the database failed: ${(err as Error).message}`,
        );
      }
    });
  }, options.pollMs);
  timer.unref();

  return {
    current: () => ring!,
    reload: load,
    backend,
    probe: () => backend.probe(ring!.signing),
    async rotate(purpose, now, x5c) {
      const before = ring!;
      // A standby key is chosen under the key store's lock, so an x5c chain is checked on the
      // row that is promoted, whichever instance prepared it.
      let rotated = await store.promoteStandby(purpose, now, async (standby) => {
        if (!x5c) return standby[0]!.kid;
        const problems: string[] = [];
        for (const row of standby) {
          const found = x5c.standbyProblems(await keyOfRow(kek, row, backend));
          if (found.length === 0) return row.kid;
          problems.push(`standby key ${row.kid}: ${found.join('; ')}`);
        }
        throw x5c.refused(problems.join('; '));
      });
      if (!rotated) {
        const chainFor = x5c ? await x5c.certifierForNew() : undefined;
        const { kid, data } = await newKeyData(purpose, now, options.environment, backend);
        const x5cChain = chainFor
          ? await chainFor((await parseKeyData(data, `database:${kid}`, backend)).publicKey)
          : undefined;
        const { retired } = await store.rotate(storedKey(kek, kid, data, { x5c: x5cChain }), now);
        rotated = { promoted: kid, retired };
      }
      const after = await load();
      const { promoted, retired } = rotated;
      return {
        created: [...after.signingKeys, ...after.partnerKeys].find((k) => k.kid === promoted)!,
        retired: [...before.signingKeys, ...before.partnerKeys].filter((k) => retired.includes(k.kid)),
        eventRecorded: true,
      };
    },
    close: () => clearInterval(timer),
  };
}

/** A key file's content as a row keeps it (the row holds the state: retired, standby, chain). */
function keyDataOf(k: ManagedKey): KeyData {
  const {
    retiredAt: _retired,
    standby: _standby,
    ...data
  } = JSON.parse(readFileSync(k.file, 'utf8')) as KeyData;
  const jwk = data.privateJwk ?? data.publicJwk;
  return {
    ...data,
    ...(jwk ? { [data.privateJwk ? 'privateJwk' : 'publicJwk']: { ...jwk, kid: k.kid, alg: k.alg } } : {}),
  };
}

/** A database row as a key: its sealed content opened, its state and chain from the row. */
export async function keyOfRow(kek: Buffer, row: StoredKey, backend?: KeyBackend): Promise<ManagedKey> {
  const key = await parseKeyData(
    openSealedKey(kek, row.kid, row.purpose, row.sealed),
    `database:${row.kid}`,
    backend,
  );
  const x5c = row.x5c ?? key.x5c;
  return {
    ...key,
    retiredAt: row.retiredAt ?? undefined,
    standby: row.standby,
    x5c,
    publicJwk: { ...key.publicJwk, ...(x5c ? { x5c } : {}) },
  };
}

export function storedKey(
  kek: Buffer,
  kid: string,
  data: KeyData,
  row: { retiredAt?: Date | undefined; standby?: boolean; x5c?: string[] | undefined } = {},
): StoredKey {
  return {
    kid,
    purpose: data.purpose,
    createdAt: new Date(data.createdAt),
    retiredAt: row.retiredAt ?? null,
    sealed: sealKey(kek, kid, data),
    standby: row.standby ?? false,
    x5c: row.x5c ?? null,
  };
}
