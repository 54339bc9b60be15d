import { randomBytes, randomUUID } from 'node:crypto';
import { join, resolve } from 'node:path';
import { loadConfig } from '../../src/config/config.js';
import type { AppContext, ContextOverrides } from '../../src/context.js';
import { type EmulatorServer, startEmulatorServer } from '../../src/development/emulator/index.js';
import { seedExampleClaims } from '../../src/development/example-claims.js';
import { silentLogger } from '../../src/observability/logger.js';
import { bind } from '../../src/server.js';
import { type ServingTenants, serveTenants } from '../../src/tenancy/serve-tenants.js';
import { databaseUrlFor } from './issuer.js';
import { tempDir } from './tmp.js';

export const TEST_OPERATOR_KEY = 'test-operator-key-0123456789abcdef0123456';

/** One tenant of a test deployment: its host, its keys, its own hosting-service emulator. */
export interface TestTenant {
  id: string;
  /** Its ISSUER_ORIGIN (not listened on: requests reach it by their forwarded host). */
  origin: string;
  host: string;
  partnerId: string;
  apiKey: string;
  adminKey: string;
  emulator: EmulatorServer;
}

export interface TestTenants {
  /** The listener every tenant shares. */
  url: string;
  dir: string;
  running: ServingTenants;
  tenants: TestTenant[];
  /** fetch on the listener as if for `host` (X-Forwarded-Host, TRUST_PROXY=loopback). */
  fetch(host: string, path: string, init?: RequestInit): Promise<Response>;
  /** A fetch that reaches URLs under `t`'s origin (for verifiers reading its metadata and lists). */
  fetchFor(t: TestTenant): (url: string | URL) => Promise<Response>;
  holder(t: TestTenant, path: string, body: unknown, apiKey?: string): Promise<Response>;
  admin(t: TestTenant, path: string, body?: unknown, adminKey?: string): Promise<Response>;
  operator(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', path: string, body?: unknown): Promise<Response>;
  /**
   * Adds a tenant through the operator route, with its emulator and the example claims; `settings`
   * beside its partner id and service URL (its own `schemasDir`, …).
   */
  add(id: string, settings?: Record<string, unknown>): Promise<TestTenant>;
  close(): Promise<void>;
}

/**
 * A `TENANCY=multi` deployment of the real app on an ephemeral port with `count` tenants
 * (`t1`, `t2`, …) added through the operator route, each with its own emulator and the example
 * claims, on TEST_STORE's engine. `dir` (reuse it for a second instance on the same database).
 */
export async function startTenants(
  count: number,
  options: {
    dir?: string;
    /** More environment, or a function of the listener's URL that answers it. */
    env?: Record<string, string> | ((url: string) => Record<string, string>);
    pollMs?: number;
    context?: ContextOverrides;
  } = {},
): Promise<TestTenants> {
  const dir = options.dir ?? tempDir();
  const bound = await bind(0, '127.0.0.1');
  const { config, secrets } = loadConfig(
    {
      NODE_ENV: 'test',
      TENANCY: 'multi',
      TRUST_PROXY: 'loopback',
      OPERATOR_API_KEY: TEST_OPERATOR_KEY,
      DATABASE_URL: await databaseUrlFor(dir),
      KEYS_DIR: join(dir, 'keys'),
      ...(typeof options.env === 'function' ? options.env(bound.url) : options.env),
    },
    process.cwd(),
  );
  const emulators = new Map<string, EmulatorServer>();
  const contexts = new Map<string, AppContext>();
  let running: ServingTenants | undefined;
  try {
    running = await serveTenants(config, secrets, silentLogger(), bound, undefined, {
      pollMs: options.pollMs ?? 100,
      context: () => ({
        log: silentLogger(),
        outbox: { baseBackoffMs: 5, maxBackoffMs: 50 },
        ...options.context,
      }),
    });
  } catch (err) {
    await new Promise((done) => bound.server.close(done));
    throw err;
  }
  const serving = running;
  const request = (host: string, path: string, init: RequestInit = {}) =>
    fetch(`${bound.url}${path}`, {
      ...init,
      headers: { 'x-forwarded-host': host, ...(init.headers as Record<string, string> | undefined) },
    });
  const json = (method: string, body: unknown, headers: Record<string, string>): RequestInit => ({
    method,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const tenants: TestTenant[] = [];
  const env: TestTenants = {
    url: bound.url,
    dir,
    running: serving,
    tenants,
    fetch: request,
    fetchFor: (t) => (url) => {
      const at = new URL(url);
      return request(t.host, `${at.pathname}${at.search}`);
    },
    holder: (t, path, body, apiKey = t.apiKey) =>
      request(t.host, path, json('POST', body, { 'x-api-key': apiKey })),
    admin: (t, path, body, adminKey = t.adminKey) =>
      request(t.host, path, json(body === undefined ? 'GET' : 'POST', body, { 'x-admin-api-key': adminKey })),
    operator: (method, path, body) =>
      fetch(`${bound.url}${path}`, json(method, body, { 'x-operator-api-key': TEST_OPERATOR_KEY })),
    async add(id, settings = {}) {
      const partnerId = randomUUID();
      const emulator = await startEmulatorServer({
        partnerId,
        // The tenant's keys as it serves them, or as it last served them (a removed tenant's
        // requests in flight still upload).
        jwks: async () => ({
          keys:
            (serving.deployment.byId(id)?.ctx ?? contexts.get(id))?.keys
              .current()
              .partnerKeys.map((k) => k.publicJwk) ?? [],
        }),
      });
      emulators.set(id, emulator);
      const t: TestTenant = {
        id,
        origin: `https://${id}.issuers.test`,
        host: `${id}.issuers.test`,
        partnerId,
        apiKey: `api-${id}-${randomBytes(16).toString('hex')}`,
        adminKey: `admin-${id}-${randomBytes(16).toString('hex')}`,
        emulator,
      };
      const res = await env.operator('POST', '/operator/tenants', {
        id,
        origin: t.origin,
        settings: { partnerId, serviceBaseUrl: emulator.url, ...settings },
        apiKey: t.apiKey,
        adminApiKeys: { admin: t.adminKey },
      });
      if (res.status !== 201) throw new Error(`adding tenant ${id}: ${res.status} ${await res.text()}`);
      const ctx = serving.deployment.byId(id)?.ctx;
      if (!ctx) throw new Error(`tenant ${id} is not serving: ${serving.deployment.byId(id)?.problem}`);
      contexts.set(id, ctx);
      await seedExampleClaims(ctx.store.claims, resolve('examples/claims.json'));
      tenants.push(t);
      return t;
    },
    async close() {
      await serving.close();
      await Promise.all([...emulators.values()].map((e) => e.close()));
    },
  };
  try {
    for (let i = 1; i <= count; i++) await env.add(`t${i}`);
  } catch (err) {
    await env.close();
    throw err;
  }
  return env;
}
