import { rmSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import type { JWK } from 'jose';
import type { Config, Secrets } from '../config/config.js';
import type { Logger } from '../model.js';
import type { ClaimsStore } from '../store/store.js';
import { loadOrCreateDevSecrets } from './dev-secrets.js';
import { DEV_EMULATOR_FILE, developmentRequestKey } from './development-files.js';
import type { JwksSource } from './emulator/index.js';
import { type EmulatorServer, startEmulatorServer } from './emulator/index.js';
import { seedExampleClaims } from './example-claims.js';

/**
 * Development start-up policy (docs/configuration.md), kept out of `createContext`: API keys and partner id
 * from `KEYS_DIR/dev-secrets.json` when unset, the hosting-service emulator as its own server on
 * a free loopback port when `SERVICE_V1_BASE_URL` is unset, the OpenID4VCI credential request
 * encryption key from `KEYS_DIR/dev-request-encryption.pem` when `OID4VCI_REQUEST_ENCRYPTION_KEY_FILE`
 * is unset, and the example claims. Production never gets here: config validation requires all of
 * these but the last two.
 */
export interface Development {
  config: Config;
  secrets: Secrets;
  /** The emulator this start-up runs, if `SERVICE_V1_BASE_URL` was unset. */
  emulator: EmulatorServer | undefined;
  /** Fills an empty claims table with `examples/claims.json` (what the demo asks for). */
  seedExamples(store: ClaimsStore): Promise<void>;
  close(): Promise<void>;
}

export async function startDevelopment(
  config: Config,
  secrets: Secrets,
  options: {
    log: Logger;
    /** The issuer's partner keys, for the emulator to check the partner JWT with. */
    partnerJwks: JwksSource;
    /** Write the emulator URL to `KEYS_DIR/dev-emulator.json` for `npm run demo`. */
    announceEmulator?: boolean;
    exampleClaimsFile?: string;
  },
): Promise<Development> {
  const { log } = options;
  let { apiKey, adminApiKey } = secrets;
  let partnerId = config.partnerId;
  if (!apiKey || !adminApiKey || !partnerId) {
    const dev = loadOrCreateDevSecrets(config.keysDir);
    if (dev.created) {
      // The keys stay in the file (docs/security.md: no API key in a log line); the partner id is not secret.
      const generated = [!apiKey && 'API_KEY', !adminApiKey && 'ADMIN_API_KEY', !partnerId && 'PARTNER_ID'];
      log.info(
        { file: dev.file, generated: generated.filter(Boolean), partnerId: dev.secrets.partnerId },
        'generated development secrets (read the keys from the file)',
      );
    } else {
      log.info({ file: dev.file }, 'using development secrets');
    }
    apiKey ??= dev.secrets.apiKey;
    adminApiKey ??= dev.secrets.adminApiKey;
    partnerId ??= dev.secrets.partnerId;
  }

  let emulator: EmulatorServer | undefined;
  let serviceBaseUrl = config.serviceBaseUrl;
  const announced = join(config.keysDir, DEV_EMULATOR_FILE);
  if (serviceBaseUrl === undefined) {
    emulator = await startEmulatorServer({ jwks: options.partnerJwks, partnerId });
    serviceBaseUrl = emulator.url;
    if (options.announceEmulator) writeFileSync(announced, `${JSON.stringify({ url: emulator.url })}\n`);
  }

  const oid4vci =
    config.oid4vci.requestEncryption || !config.oid4vci.enabled
      ? config.oid4vci
      : {
          ...config.oid4vci,
          requestEncryption: { keyFile: developmentRequestKey(config.keysDir, log), required: false },
        };

  const exampleClaimsFile = options.exampleClaimsFile ?? resolve('examples/claims.json');
  return {
    config: { ...config, partnerId, serviceBaseUrl, oid4vci },
    secrets: { ...secrets, apiKey, adminApiKey },
    emulator,
    async seedExamples(store) {
      const seeded = await seedExampleClaims(store, exampleClaimsFile);
      if (seeded > 0)
        log.info(
          { seeded, file: relative('.', exampleClaimsFile) },
          'seeded example claims records (development)',
        );
    },
    async close() {
      if (!emulator) return;
      if (options.announceEmulator) rmSync(announced, { force: true });
      await emulator.close();
    },
  };
}

/**
 * The issuer's published JWKS, read over HTTP at most once a second: the emulator of a
 * `WORKERS=N` primary, whose keys live in the workers. No URL yet (no worker listening): no keys.
 */
export function cachedJwks(url: () => string | undefined): JwksSource {
  let cached: { at: number; jwks: Promise<{ keys: JWK[] }> } | undefined;
  return () => {
    const target = url();
    if (!target) return Promise.reject(new Error('the issuer is not listening yet'));
    if (!cached || Date.now() - cached.at > 1000) {
      const jwks = fetch(target, { signal: AbortSignal.timeout(3000) }).then(async (res) => {
        if (!res.ok) throw new Error(`${target} answered ${res.status}`);
        return (await res.json()) as { keys: JWK[] };
      });
      cached = { at: Date.now(), jwks };
      jwks.catch(() => {
        if (cached?.jwks === jwks) cached = undefined;
      });
    }
    return cached.jwks;
  };
}
