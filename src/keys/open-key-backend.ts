import { type KeyBackendConfig, loadKeyBackendConfig } from '../config/key-backend-config.js';
import type { KeyBackend } from './key-backend.js';
import type { Pkcs11Backend } from './pkcs11-backend.js';
import { softwareBackend } from './software-backend.js';

/** The backend KEY_BACKEND names, opened once per process (the PIN never leaves this call). */
export async function openKeyBackend(config: KeyBackendConfig, pin: string | undefined): Promise<KeyBackend> {
  if (config.kind === 'software') return softwareBackend;
  // Loaded only when chosen: the PKCS#11 binding is a native addon.
  const { openPkcs11Backend } = await import('./pkcs11-backend.js');
  return openPkcs11Backend(config, pin ?? '');
}

/** The backend the environment names (KEY_BACKEND, PKCS11_*), for commands that run without a server. */
export async function keyBackendFromEnv(env: NodeJS.ProcessEnv, cwd = process.cwd()): Promise<KeyBackend> {
  const { backend, pin } = loadKeyBackendConfig(env, cwd);
  return openKeyBackend(backend, pin);
}

/**
 * The key backends of a TENANCY=multi process (docs/several-issuers.md "Where the data lives"):
 * with KEY_BACKEND=pkcs11, one connection per token (the library, one login, one pool of at most
 * PKCS11_MAX_SESSIONS sessions) that every tenant signs through, each under its own label prefix
 * and only with the keys its own file or rows name; so the sessions open on the token are bounded
 * by the pool, not by the number of tenants. A tenant's `close` leaves the connection open;
 * `close` here closes it, once no tenant is served.
 */
export class SharedKeyBackends {
  readonly #tokens = new Map<string, Promise<Pkcs11Backend>>();

  async open(config: KeyBackendConfig, pin: string | undefined): Promise<KeyBackend> {
    if (config.kind === 'software') return softwareBackend;
    const { labelPrefix = '', ...token } = config;
    const key = JSON.stringify([token.module, token.token, token.pinFile, token.maxSessions]);
    let connection = this.#tokens.get(key);
    if (!connection) {
      connection = openKeyBackend(token, pin) as Promise<Pkcs11Backend>;
      this.#tokens.set(key, connection);
      // A token that cannot be opened now (absent, PIN refused) is tried again by the next tenant.
      connection.catch(() => {
        if (this.#tokens.get(key) === connection) this.#tokens.delete(key);
      });
    }
    return (await connection).share(labelPrefix);
  }

  async close(): Promise<void> {
    const connections = [...this.#tokens.values()];
    this.#tokens.clear();
    for (const connection of connections)
      await connection.then(
        (c) => c.close(),
        () => undefined,
      );
  }
}
