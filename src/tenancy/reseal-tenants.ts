import type { Config } from '../config/config.js';
import { KeyError } from '../keys/key-error.js';
import { type ResealedStore, resealKeyPair, resealKeys, resealStore } from '../keys/reseal.js';
import { silentLogger } from '../observability/logger.js';
import { DEFAULT_DATABASE_TIMEOUTS } from '../store/engine.js';
import { describeTarget, inspectStore, keepsKeysInDatabase, parseDatabaseUrl } from '../store/engines.js';
import { MAIN_NAMESPACE, type Namespaces, openNamespaces } from './namespaces.js';
import type { TenantRecord, TenantSecretName } from './tenant.js';
import { tenantKeyEncryption } from './tenant-config.js';
import { resealSecret } from './tenant-secrets.js';

/** The actor of the `tenant.changed` audit rows a reseal of a tenant's secrets writes. */
export const RESEAL_ACTOR = 'keys reseal';

/** What `keys reseal` did for one tenant of a TENANCY=multi deployment. */
export interface ResealedTenant extends ResealedStore {
  id: string;
  enabled: boolean;
  namespace: string;
  /** Its own secrets in the registry, by name (never a value). */
  secrets: Array<{ name: TenantSecretName; resealed: boolean }>;
}

type KeyPair = { previous: Buffer; next: Buffer };

/**
 * The tenant's pair: each key derived for it as its context derives its sealing key
 * (tenantKeyEncryption); the adopted main namespace keeps the deployment's keys.
 */
function pairOf(base: KeyPair, tenant: TenantRecord): KeyPair {
  const derived = tenantKeyEncryption({ current: base.next, given: true, previous: base.previous }, tenant);
  return { previous: derived.previous as Buffer, next: derived.current };
}

/** Every sealed secret of `tenant` resealed; one that opens with neither key throws, naming it. */
function resealedSecrets(base: KeyPair, tenant: TenantRecord) {
  const keys = pairOf(base, tenant);
  const sealed: Partial<Record<TenantSecretName, string>> = {};
  const report: ResealedTenant['secrets'] = [];
  for (const [name, value] of Object.entries(tenant.sealedSecrets ?? {}) as [TenantSecretName, string][]) {
    const out = resealSecret(keys, tenant.id, name, value);
    if (!out)
      throw new KeyError(
        `tenant ${tenant.id}: secrets.${name}: opens with neither KEY_ENCRYPTION_KEY_PREVIOUS nor KEY_ENCRYPTION_KEY; nothing was resealed`,
      );
    sealed[name] = out.sealed;
    report.push({ name, resealed: out.resealed });
  }
  return { sealed, report };
}

/** Runs `fn` on the store of `namespace`, closed after. */
async function inNamespace<T>(
  namespaces: Namespaces,
  namespace: string,
  fn: (store: Awaited<ReturnType<Namespaces['open']>>) => Promise<T>,
): Promise<T> {
  const store = await namespaces.open(namespace);
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}

/**
 * `npm run admin -- keys reseal` with TENANCY=multi
 * (docs/several-issuers.md "Replacing KEY_ENCRYPTION_KEY"): the deployment's own namespace as with
 * one issuer (when a single deployment kept rows there), then every tenant of
 * the registry, enabled or disabled, under its derived pair: the sealed keys and recipient emails
 * of its namespace, and its sealed secrets in the registry. Everything is checked before anything
 * changes: a secret or a key row that opens with neither key stops the command, naming the tenant
 * and the secret or row. Re-runnable: what is already under the new key stays as it is.
 */
export async function resealTenants(
  env: Record<string, string | undefined>,
  databaseUrl: string,
  cwd: string,
): Promise<{ database: string } & ResealedStore & { tenants: ResealedTenant[] }> {
  const target = parseDatabaseUrl(databaseUrl, cwd);
  if (typeof target === 'string') throw new KeyError(`DATABASE_URL: ${target}`);
  if (target.kind === 'sqlite' && target.path === ':memory:')
    throw new KeyError('DATABASE_URL: TENANCY=multi needs a file, not :memory:');
  const base = resealKeyPair(env);
  const database: Config['database'] =
    target.kind === 'sqlite'
      ? { kind: 'sqlite', path: target.path }
      : { kind: 'postgres', url: describeTarget(target), poolMax: 2, timeouts: DEFAULT_DATABASE_TIMEOUTS };
  // The deployment's own namespace holds rows only when a single deployment ran on it (adopted or
  // not yet): otherwise it is left as it is, not given the tables of one.
  const inspection = await inspectStore(target);
  let ownRows: boolean;
  try {
    ownRows = inspection.migrations.some((m) => m.state !== 'pending');
  } finally {
    await inspection.close();
  }
  const namespaces = await openNamespaces({ database }, { database: target }, silentLogger());
  try {
    const tenants = await namespaces.registry.list();
    // The checks, changing nothing: every tenant's secrets, then every sealed key row.
    for (const tenant of tenants) resealedSecrets(base, tenant);
    const check = async (namespace: string, keys: KeyPair, who: string) =>
      inNamespace(namespaces, namespace, async (store) => {
        if (!store.keys) return;
        try {
          await resealKeys(store.keys, keys.previous, keys.next, { checkOnly: true });
        } catch (err) {
          if (err instanceof KeyError) throw new KeyError(`${who}: ${err.message}`);
          throw err;
        }
      });
    if (ownRows) await check(MAIN_NAMESPACE, base, `namespace ${MAIN_NAMESPACE}`);
    for (const t of tenants)
      if (t.namespace !== MAIN_NAMESPACE)
        await check(t.namespace, pairOf(base, t), `tenant ${t.id} (namespace ${t.namespace})`);

    // The deployment's own namespace (an adopted tenant's rows, under the keys themselves).
    const own: ResealedStore = ownRows
      ? await inNamespace(namespaces, MAIN_NAMESPACE, (store) => resealStore(store, base.previous, base.next))
      : {
          keysInDatabase: keepsKeysInDatabase(target),
          rows: [],
          recipients: { resealed: 0, already: 0, unopenable: 0, reopened: 0 },
        };
    const out: ResealedTenant[] = [];
    for (const t of tenants) {
      const stored =
        t.namespace === MAIN_NAMESPACE
          ? own
          : await inNamespace(namespaces, t.namespace, (store) => {
              const keys = pairOf(base, t);
              return resealStore(store, keys.previous, keys.next);
            });
      // The registry last, each tenant's row in one transaction with its audit row.
      let secrets = resealedSecrets(base, t).report;
      if (secrets.some((s) => s.resealed))
        await namespaces.registry.change(
          t.id,
          (before) => {
            const again = resealedSecrets(base, before);
            secrets = again.report;
            return {
              record: { ...before, sealedSecrets: again.sealed, updatedAt: new Date().toISOString() },
              changed: again.report.filter((s) => s.resealed).map((s) => `secrets.${s.name}`),
            };
          },
          RESEAL_ACTOR,
        );
      out.push({ id: t.id, enabled: t.enabled, namespace: t.namespace, ...stored, secrets });
    }
    return { database: describeTarget(target), ...own, tenants: out };
  } finally {
    await namespaces.close();
  }
}
