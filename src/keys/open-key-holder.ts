import type { Config, Secrets } from '../config/config.js';
import type { Logger } from '../model.js';
import type { KeyMaterialStore } from '../store/store.js';
import type { KeyBackend } from './key-backend.js';
import { databaseKeyHolder, fileKeyHolder, type KeyHolder } from './key-holder.js';
import type { KeyRing } from './key-ring.js';
import { assertSignsInBackend } from './token-migration.js';

export interface OpenKeyHolderOptions {
  config: Pick<Config, 'keysDir' | 'production'>;
  secrets: Pick<Secrets, 'keyEncryption'>;
  /** The store's key part: present where the engine keeps keys in the database. */
  keys: KeyMaterialStore | undefined;
  backend: KeyBackend;
  /** What else a ring must pass (the SD-JWT identification mode's needs). */
  check: (ring: KeyRing) => void;
  /** How often an instance looks for a rotation made through another. */
  pollMs: number;
  /**
   * Create missing keys (default: outside production only). A tenant's first start creates its
   * own in production too (docs/several-issuers.md "Adding a tenant").
   */
  generateIfMissing?: boolean | undefined;
  log: Logger;
}

/**
 * The ES256 key ring. One machine keeps its keys as files; several instances share them through
 * the database, sealed (docs/security.md "Keys shared by several instances"): the engine says
 * which by having `keys` or not. Config refuses production on such an engine without
 * KEY_ENCRYPTION_KEY. KEY_BACKEND: where the private keys live and sign; the file or row keeps
 * each key's state either way (docs/security.md "Keys in a hardware security module").
 */
export function openKeyHolder(options: OpenKeyHolderOptions): Promise<KeyHolder> {
  const { config, backend, log } = options;
  const check = (ring: KeyRing) => {
    options.check(ring);
    assertSignsInBackend(ring, backend);
  };
  const environment = config.production ? 'production' : 'development';
  const generate = options.generateIfMissing ?? !config.production;
  if (!options.keys)
    return fileKeyHolder(
      config.keysDir,
      generate,
      check,
      environment,
      {
        // WORKERS=N: a rotation through one worker reaches its siblings within a poll.
        pollMs: options.pollMs,
        onReload: (ring) =>
          log.info(
            { event: 'keys_reloaded', signingKid: ring.signing.kid },
            'keys: KEYS_DIR changed; reloaded',
          ),
        onError: (err) =>
          log.warn(
            { event: 'key_reload_failed', error: (err as Error).message },
            'keys: KEYS_DIR changed but does not load; keeping the current keys',
          ),
      },
      backend,
    );
  return databaseKeyHolder(options.keys, {
    check,
    keysDir: config.keysDir,
    generateIfMissing: generate,
    kek: options.secrets.keyEncryption.current,
    pollMs: options.pollMs,
    environment,
    log,
    backend,
  });
}
