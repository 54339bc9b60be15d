import { resolve } from 'node:path';
import type { Store } from 'express-rate-limit';
import type { Config, Secrets } from './config/config.js';
import { createEmulator, type Emulator } from './emulator/index.js';
import type { RouteGroup } from './http/rate-limit.js';
import { DirectIssuanceService } from './issuance/direct-issuance.js';
import { IssuanceService } from './issuance/issuance-service.js';
import { UploadOutbox } from './issuance/outbox.js';
import { Iden3BjjIssuer } from './issuers/iden3/index.js';
import type { Issuer } from './issuers/issuer.js';
import { SdJwtVcIssuer } from './issuers/sd-jwt/sd-jwt-vc-issuer.js';
import { loadOrCreateDevSecrets } from './keys/dev-secrets.js';
import { type KeyRing, loadKeyRing } from './keys/key-ring.js';
import { seedExampleClaims } from './schemas/claims/example-claims.js';
import { createClaimsProviders } from './schemas/claims/index.js';
import type { ProofType } from './schemas/schema-file.js';
import { loadSchemas, type SchemaRegistry } from './schemas/schema-registry.js';
import { PartnerJwtSigner } from './service-client/partner-jwt.js';
import { ServiceClient } from './service-client/service-client.js';
import { StatusService } from './status/status-service.js';
import { openSqliteStore, type SqliteStore } from './store/sqlite/index.js';

export type Logger = (line: string) => void;

/** Reloadable key ring: `keys rotate` writes files; the server re-reads them on reload(). */
export interface KeyHolder {
  current(): KeyRing;
  reload(): Promise<KeyRing>;
}

/**
 * Everything the app needs, built once (atproto's AppContext). Tests build it with overrides.
 */
export interface AppContext {
  config: Config;
  secrets: { apiKey: string; adminApiKey: string };
  partnerId: string;
  keys: KeyHolder;
  store: SqliteStore;
  schemas: SchemaRegistry;
  issuers: Map<ProofType, Issuer>;
  issuance: IssuanceService;
  /** spec 4.6 admin issue-vc: direct issuance by email. */
  direct: DirectIssuanceService;
  status: StatusService;
  outbox: UploadOutbox;
  serviceClient: ServiceClient;
  /** The bundled emulator, mounted at /emulator/v1 when SERVICE_V1_BASE_URL is unset (dev). */
  emulator: Emulator | undefined;
  /** The Iden3 back-end, when a schema lists BJJ_SIG_2021. */
  iden3: Iden3BjjIssuer | undefined;
  /** The Iden3 issuer DID once that back-end is on. */
  iden3Did(): string | undefined;
  rateLimitStore: ((group: RouteGroup) => Store) | undefined;
  /** Where this process listens, once it does (used for the mounted emulator's URL). */
  setListenUrl(url: string): void;
  log: Logger;
  close(): Promise<void>;
}

export interface ContextOptions {
  log?: Logger;
  /** Outbox timing (tests use short backoffs). */
  /** Development seed for the sqlite claims table (default examples/claims.json; '' for none). */
  exampleClaimsFile?: string;
  /**
   * A shared express-rate-limit Store per route group (e.g. Redis) when several instances run;
   * default: the library's in-memory store.
   */
  rateLimitStore?: (group: RouteGroup) => Store;
  outbox?: { baseBackoffMs?: number; maxBackoffMs?: number; leaseMs?: number };
  /** initialize-user retries of direct issuance (tests use short backoffs). */
  direct?: { attempts?: number; baseDelayMs?: number };
}

export async function createContext(
  config: Config,
  secrets: Secrets,
  options: ContextOptions = {},
): Promise<AppContext> {
  const log = options.log ?? ((line: string) => console.log(line));
  // Dev defaults (DESIGN §7); production config validation has already refused to get here without them.
  let apiKey = secrets.apiKey;
  let adminApiKey = secrets.adminApiKey;
  let partnerId = config.partnerId;
  if (!apiKey || !adminApiKey || !partnerId) {
    if (config.production)
      throw new Error('API_KEY, ADMIN_API_KEY and PARTNER_ID are required in production');
    const dev = loadOrCreateDevSecrets(config.keysDir);
    if (dev.created) {
      // Printed once, at generation, so the developer can register them; never again.
      log(`generated development secrets in ${dev.file}:`);
      if (!apiKey) log(`  API_KEY=${dev.secrets.apiKey}`);
      if (!adminApiKey) log(`  ADMIN_API_KEY=${dev.secrets.adminApiKey}`);
      if (!partnerId) log(`  PARTNER_ID=${dev.secrets.partnerId}`);
    } else {
      log(`using development secrets from ${dev.file}`);
    }
    apiKey ??= dev.secrets.apiKey;
    adminApiKey ??= dev.secrets.adminApiKey;
    partnerId ??= dev.secrets.partnerId;
  }

  let ring = await loadKeyRing(config.keysDir, { generateIfMissing: !config.production });
  const keys: KeyHolder = {
    current: () => ring,
    reload: async () => {
      ring = await loadKeyRing(config.keysDir, { generateIfMissing: false });
      return ring;
    },
  };

  const schemas = loadSchemas(config.schemasDir);
  const store = openSqliteStore(config.database.path);
  const claimsProviders = await createClaimsProviders(schemas, store.claims, config.schemasDir);
  if (!config.production) {
    const seeded = await seedExampleClaims(
      store.claims,
      options.exampleClaimsFile ?? resolve('examples/claims.json'),
    );
    if (seeded > 0) log(`seeded ${seeded} example claims records from examples/claims.json (development)`);
  }

  let listenUrl: string | undefined;
  const emulator =
    config.serviceBaseUrl === undefined
      ? createEmulator({
          jwks: async () => ({ keys: ring.partnerKeys.map((k) => k.publicJwk) }),
          partnerId,
        })
      : undefined;
  const serviceBaseUrl = () => {
    if (config.serviceBaseUrl) return config.serviceBaseUrl;
    if (!listenUrl) throw new Error('the bundled emulator is not reachable before the server listens');
    return `${listenUrl}/emulator/v1`;
  };
  const jwt = new PartnerJwtSigner({ partnerId, issuerOrigin: config.issuerOrigin, key: () => ring.partner });
  const serviceClient = new ServiceClient(serviceBaseUrl, jwt);
  const outbox = new UploadOutbox(store.issuances, serviceClient, { ...options.outbox, log });

  const issuers = new Map<ProofType, Issuer>();
  issuers.set('SD_JWT_VC', new SdJwtVcIssuer(config.issuerOrigin, () => ring.signing));
  // DESIGN §6: the Iden3 back-end is on when a schema lists BJJ_SIG_2021.
  const bjjSchemas = schemas.all().filter((s) => s.proofTypes.includes('BJJ_SIG_2021'));
  let iden3: Iden3BjjIssuer | undefined;
  if (bjjSchemas.length > 0) {
    iden3 = await Iden3BjjIssuer.open({
      db: store.db,
      keysDir: config.keysDir,
      generateKeyIfMissing: !config.production,
      origin: config.issuerOrigin,
      schemasDir: config.schemasDir,
      didMethod: config.iden3.method,
      blockchain: config.iden3.blockchain,
      network: config.iden3.network,
      didMethodByte: config.iden3.methodByte,
      networkFlag: config.iden3.networkFlag,
      merklizeWorkers: config.iden3.merklizeWorkers,
    });
    for (const schema of bjjSchemas) iden3.prepareSchema(schema);
    issuers.set('BJJ_SIG_2021', iden3);
  }

  const issuance = new IssuanceService({
    issuerOrigin: config.issuerOrigin,
    schemas,
    claimsProviders,
    issuers,
    store: store.issuances,
    outbox,
    statusList: { partitionSize: config.statusList.partitionSize, bits: config.statusList.bits },
    uploadTimeoutMs: config.uploadTimeoutMs,
    log,
  });

  const status = new StatusService({
    issuerOrigin: config.issuerOrigin,
    ttlSeconds: config.statusList.ttlSeconds,
    store: store.status,
    signingKey: () => ring.signing,
    lookup: (nonce) => store.issuances.getByNonce(nonce),
    externalRevokers: iden3
      ? new Map([
          [
            'BJJ_SIG_2021',
            async (record, inSameTransaction) => {
              await iden3.revoke(record.revocationNonce, inSameTransaction);
            },
          ],
        ])
      : undefined,
  });

  const direct = new DirectIssuanceService({
    issuance,
    schemas,
    service: serviceClient,
    history: store.history,
    status,
    retry: options.direct,
  });

  return {
    config,
    secrets: { apiKey, adminApiKey },
    partnerId,
    keys,
    store,
    schemas,
    issuers,
    issuance,
    direct,
    status,
    outbox,
    serviceClient,
    emulator,
    iden3,
    rateLimitStore: options.rateLimitStore,
    iden3Did: () => iden3?.did,
    setListenUrl(url: string) {
      listenUrl = url;
    },
    log,
    async close() {
      await outbox.stop();
      await iden3?.close();
      await store.close();
    },
  };
}
