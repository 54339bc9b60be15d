import type { IncomingMessage, ServerResponse } from 'node:http';
import { createApp } from '../app.js';
import { reloadAndLog } from '../catalog/schema-catalog.js';
import type { Config, Secrets } from '../config/config.js';
import { type AppContext, type ContextOverrides, createContext } from '../context.js';
import { AppError, notFound } from '../errors.js';
import type { DoctorItem } from '../http/routes/console/console.js';
import type { Listener } from '../http/routes/route.js';
import { SharedKeyBackends } from '../keys/open-key-backend.js';
import type { Logger } from '../model.js';
import { SharedHttpPools } from '../outbound/http-json.js';
import { startBackground } from '../server.js';
import { MAIN_NAMESPACE, type Namespaces, openNamespaces } from './namespaces.js';
import { retire } from './retire.js';
import { type AddTenant, type ChangeTenant, hostOfOrigin, type TenantRecord } from './tenant.js';
import { conflict, recordOf, refuseInProduction } from './tenant-admission.js';
import { applyChange, changeRules, followEnabled, identityOf } from './tenant-changes.js';
import { lookAfterBackgroundWrites, tenantConfig, tenantContextOverrides } from './tenant-config.js';
import { TenantConflict } from './tenant-registry.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** One tenant as this process serves it: its context and apps, or why it has none. */
export interface ServedTenant {
  record: TenantRecord;
  ctx: AppContext | undefined;
  apps: Partial<Record<Listener | 'all', Handler>>;
  /** Why the context could not be built (its keys, its schemas, its database namespace). */
  problem: string | undefined;
  /** With a problem: failed builds in a row, and when the next is tried (ms since the epoch). */
  failures?: number;
  retryAt?: number;
}

export interface DeploymentOptions {
  config: Config;
  secrets: Secrets;
  log: Logger;
  /** Which listeners serve (`all`: one; ADMIN_PORT: `public` and `admin`). */
  listeners: ReadonlyArray<Listener | 'all'>;
  /** Overrides of each tenant's context (tests: silent logs, short backoffs). */
  context?: ((tenant: TenantRecord) => ContextOverrides) | undefined;
  /** How often the registry is read for changes made through another instance (default 2000 ms). */
  pollMs?: number | undefined;
  /** Retry the pending uploads at once (not for a later worker of a running cluster). */
  recoverUploads?: boolean | undefined;
  doctor?: (() => Promise<DoctorItem[]>) | undefined;
  /** A tenant's admins reloaded its schemas here (`WORKERS=N`: the other workers are told). */
  schemasReloaded?: ((tenant: string) => void) | undefined;
}

/** A tenant that fails to start is tried again after 2 s, doubling up to 5 minutes. */
const RETRY_BASE_MS = 2000;
const RETRY_MAX_MS = 300_000;

/** Tenants whose context is rebuilt at once: more only lengthen start-up's peak of memory. */
const BUILD_CONCURRENCY = 4;

/**
 * The tenants of a `TENANCY=multi` process (docs/several-issuers.md): the registry, one context per
 * tenant built by `createContext` from the deployment's configuration overlaid with the tenant's,
 * and the routing of a request by its host. A change through this process applies before its
 * answer; one through another instance, within a poll of the registry.
 */
export class Deployment {
  readonly #byId = new Map<string, ServedTenant>();
  readonly #byHost = new Map<string, ServedTenant>();
  #syncing: Promise<void> = Promise.resolve();
  #version = -1;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  /** The tenants' outbound connections, by origin: one warm set, not one per tenant. */
  readonly #http = new SharedHttpPools();
  /** The tenants' key backends: with KEY_BACKEND=pkcs11, one login and session pool per token. */
  readonly #keys = new SharedKeyBackends();
  /** Contexts taken out of service, finishing their requests in flight before they close. */
  readonly #retiring = new Map<ServedTenant, Promise<void>>();
  /** A shutdown began: the deployment's readiness answers 503 (docs/operations.md "Shutdown"). */
  draining = false;

  private constructor(
    readonly namespaces: Namespaces,
    readonly options: DeploymentOptions,
  ) {}

  static async open(options: DeploymentOptions): Promise<Deployment> {
    const namespaces = await openNamespaces(options.config, options.secrets, options.log);
    const deployment = new Deployment(namespaces, options);
    try {
      await deployment.sync();
    } catch (err) {
      await deployment.close();
      throw err;
    }
    return deployment;
  }

  get config(): Config {
    return this.options.config;
  }

  /** The tenant a request's host names (`Host`, or the forwarded host behind TRUST_PROXY). */
  byHost(host: string | undefined): ServedTenant | undefined {
    if (host === undefined) return undefined;
    const name = host.toLowerCase();
    const exact = this.#byHost.get(name);
    if (exact) return exact;
    // RFC 9110 §4.2.1/§4.2.2: a Host may spell out its scheme's default port, which an origin's host
    // leaves out (https://h:443 is https://h).
    const spelled = /^(.+):(443|80)$/.exec(name);
    const tenant = spelled && this.#byHost.get(spelled[1]!);
    if (!tenant) return undefined;
    return tenant.record.origin.startsWith(spelled[2] === '443' ? 'https:' : 'http:') ? tenant : undefined;
  }

  byId(id: string): ServedTenant | undefined {
    return this.#byId.get(id);
  }

  served(): ServedTenant[] {
    return [...this.#byId.values()];
  }

  /** Reads the registry again when it changed every `pollMs`, until closed. */
  watch(): void {
    const pollMs = this.options.pollMs ?? 2000;
    const tick = () => {
      this.#timer = setTimeout(() => {
        this.namespaces.registry
          .version()
          .then((v) => (v !== this.#version || this.#retryDue() ? this.sync() : undefined))
          .catch((err: unknown) =>
            this.options.log.warn(
              { event: 'tenants_sync_failed', error: (err as Error).message },
              'tenants: the registry could not be read; serving the tenants as they were',
            ),
          )
          .finally(() => {
            if (!this.#closed) tick();
          });
      }, pollMs);
      this.#timer.unref();
    };
    tick();
  }

  #retryDue(): boolean {
    const now = Date.now();
    for (const t of this.#byId.values()) if (t.problem !== undefined && (t.retryAt ?? 0) <= now) return true;
    return false;
  }

  /** Serves the registry as it is now: new tenants built, removed ones closed, flags followed. */
  sync(generateKeysFor?: string): Promise<void> {
    const next = this.#syncing.then(() => this.#sync(generateKeysFor));
    this.#syncing = next.catch(() => undefined);
    return next;
  }

  async #sync(generateKeysFor: string | undefined): Promise<void> {
    if (this.#closed) return;
    const version = await this.namespaces.registry.version();
    const records = await this.namespaces.registry.list();
    const wanted = new Map(records.map((r) => [r.id, r]));
    for (const [id, served] of this.#byId) if (!wanted.has(id)) void this.#drop(served);
    const toBuild: TenantRecord[] = [];
    for (const record of records) {
      const found = this.#byId.get(record.id);
      // Changed (docs/several-issuers.md "Changing a tenant"): built again, the old context serving until then.
      const served = found && identityOf(found.record) === identityOf(record) ? found : undefined;
      if (found && !served) toBuild.push(record);
      else if (served && served.problem === undefined) {
        served.record = record;
        await followEnabled(served);
      } else if (served && record.id !== generateKeysFor && (served.retryAt ?? 0) > Date.now())
        // A tenant that failed to start is tried again after its back-off, not at every poll: a
        // build costs the process what many requests do (docs/several-issuers.md "Routing").
        served.record = record;
      else toBuild.push(record);
    }
    for (let i = 0; i < toBuild.length; i += BUILD_CONCURRENCY)
      await Promise.all(
        toBuild.slice(i, i + BUILD_CONCURRENCY).map((r) => this.#build(r, r.id === generateKeysFor)),
      );
    this.#version = version;
  }

  async #build(record: TenantRecord, generateKeys: boolean): Promise<void> {
    const { log } = this.options;
    const previous = this.#byId.get(record.id);
    const failures = previous?.problem === undefined ? 0 : (previous.failures ?? 0);
    const served: ServedTenant = { record, ctx: undefined, apps: {}, problem: undefined };
    // A tenant that serves goes on serving while its new context is built; then it is swapped.
    const swap = () => {
      if (previous) void this.#drop(previous);
      this.#byId.set(record.id, served);
      this.#byHost.set(record.host, served);
    };
    if (!previous?.ctx) swap();
    try {
      const { config, secrets } = tenantConfig(this.options, record);
      const overrides = this.options.context?.(record) ?? {};
      const ctx = await createContext(config, secrets, {
        log: log.child({ tenant: record.id }),
        ...tenantContextOverrides(overrides),
        generateKeys,
        sharedHttp: this.#http,
        sharedKeys: this.#keys,
        store: () => this.namespaces.open(record.namespace),
      });
      if (this.#closed || this.#byId.get(record.id) !== (previous?.ctx ? previous : served)) {
        await ctx.close();
        return;
      }
      lookAfterBackgroundWrites(ctx);
      const { schemasReloaded } = this.options;
      if (schemasReloaded) ctx.schemaCatalog.propagate = () => schemasReloaded(record.id);
      for (const listener of this.options.listeners)
        served.apps[listener] = createApp(ctx, listener, { doctor: this.options.doctor });
      await startBackground(ctx, this.options.recoverUploads ?? true);
      served.ctx = ctx;
      await followEnabled(served);
      if (this.#byId.get(record.id) !== served) swap();
    } catch (err) {
      if (this.#byId.get(record.id) !== served) swap();
      served.problem = (err as Error).message;
      served.failures = failures + 1;
      served.retryAt = Date.now() + Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** failures);
      log.error(
        { event: 'tenant_start_failed', tenant: record.id, error: served.problem },
        `tenant ${record.id} cannot be served: ${served.problem}`,
      );
    }
  }

  /**
   * Takes a tenant out of service at once (its host routes nowhere from now on), then lets its
   * requests in flight finish, up to SHUTDOWN_GRACE_MS, before its context closes (its workers,
   * store and key backend); docs/several-issuers.md "Removing a tenant". Not awaited by a sync:
   * the other tenants' changes do not wait for this one's requests.
   */
  #drop(served: ServedTenant): Promise<void> {
    this.#byId.delete(served.record.id);
    if (this.#byHost.get(served.record.host) === served) this.#byHost.delete(served.record.host);
    served.apps = {};
    const ctx = served.ctx;
    served.ctx = undefined;
    if (!ctx) return Promise.resolve();
    const { log, config } = this.options;
    const retired = retire(served.record.id, ctx, config.shutdownGraceMs, log).finally(() =>
      this.#retiring.delete(served),
    );
    this.#retiring.set(served, retired);
    return retired;
  }

  /**
   * SIGHUP (docs/several-issuers.md "Idle tenants"): each serving tenant reads its SCHEMAS_DIR
   * again as a single deployment does (a set with a bad file refused, logged with the tenant, its
   * current set kept), one tenant after another; a tenant that failed to start is tried again now.
   */
  async reloadSchemas(trigger: string, only?: string): Promise<void> {
    const failed = (tenant: string) => (err: unknown) =>
      this.options.log.error(
        { event: 'schemas_reload_failed', trigger, tenant, error: (err as Error).message },
        `schemas: reload failed (${trigger}): ${(err as Error).message}`,
      );
    // A tenant being built now reads its folder as it was: it is reloaded too, once built.
    await this.#syncing;
    // Another worker's admin reload of one tenant: that tenant alone.
    if (only !== undefined) {
      const ctx = this.byId(only)?.ctx;
      if (ctx) await reloadAndLog(ctx.schemaCatalog, ctx.log, trigger).catch(failed(only));
      return;
    }
    for (const t of this.served()) {
      if (t.ctx) await reloadAndLog(t.ctx.schemaCatalog, t.ctx.log, trigger).catch(failed(t.record.id));
      else t.retryAt = 0;
    }
    await this.sync().catch((err: unknown) =>
      this.options.log.warn(
        { event: 'tenants_sync_failed', error: (err as Error).message },
        'tenants: the registry could not be read; serving the tenants as they were',
      ),
    );
    const served = this.served();
    const failing = served.filter((t) => t.problem !== undefined).length;
    this.options.log.info(
      { event: 'tenants_reloaded', trigger, tenants: served.length, failing },
      `tenants: ${served.length} served after the reload (${trigger}), ${failing} failing`,
    );
  }

  /** `POST /operator/tenants`: registers and serves a tenant (docs/several-issuers.md "Adding a tenant"). */
  async add(input: AddTenant, actor: string): Promise<ServedTenant> {
    const namespace = this.namespaces.nameFor(input.id);
    await this.#refuseTaken(input);
    if (await this.namespaces.exists(namespace))
      throw conflict(
        'id',
        `id: the data namespace ${namespace} exists already (a removed tenant's?); choose another id`,
      );
    return this.register(recordOf(input, namespace, changeRules(this.options)), actor, 'tenant.added');
  }

  /**
   * `POST /operator/tenants/adopt`: registers the deployment's own namespace, where a single
   * deployment kept its rows, as tenant `input.id` (docs/several-issuers.md
   * "Adopting a single deployment"). Its keys are KEYS_DIR's and KEY_ENCRYPTION_KEY's, never created.
   */
  async adopt(input: AddTenant, actor: string): Promise<ServedTenant> {
    await this.#refuseTaken(input);
    if ((await this.namespaces.registry.list()).some((t) => t.namespace === MAIN_NAMESPACE))
      throw conflict('namespace', "namespace: the deployment's own data is already a tenant's");
    return this.register(recordOf(input, MAIN_NAMESPACE, changeRules(this.options)), actor, 'tenant.adopted');
  }

  async #refuseTaken(input: AddTenant): Promise<void> {
    if (this.config.production) refuseInProduction(input, this.config.insecureUpstream);
    const { registry } = this.namespaces;
    if (await registry.get(input.id)) throw conflict('id', `id: ${input.id} is already a tenant`);
    const host = hostOfOrigin(input.origin);
    if ((await registry.list()).some((t) => t.host === host))
      throw conflict('origin', `origin: ${host} is already a tenant's host`);
  }

  /** Writes `record` to the registry and serves it before answering. */
  async register(
    record: TenantRecord,
    actor: string,
    action: 'tenant.added' | 'tenant.adopted',
  ): Promise<ServedTenant> {
    try {
      await this.namespaces.registry.add(record, actor, action);
    } catch (err) {
      if (err instanceof TenantConflict) throw conflict(err.field, err.message);
      throw err;
    }
    // A new namespace's first start creates its keys; the adopted one has its own already.
    await this.sync(record.namespace === MAIN_NAMESPACE ? undefined : record.id);
    return this.#byId.get(record.id) ?? { record, ctx: undefined, apps: {}, problem: 'removed meanwhile' };
  }

  /**
   * `PATCH /operator/tenants/:id` (docs/several-issuers.md "Changing a tenant"): the change and its
   * audit row in one transaction, then its context built again before the answer.
   */
  async change(id: string, input: ChangeTenant, actor: string): Promise<ServedTenant> {
    const rules = changeRules(this.options);
    const record = await this.namespaces.registry.change(id, (r) => applyChange(r, input, rules), actor);
    if (!record) throw notFound(`no tenant ${id}`);
    await this.sync();
    return this.#byId.get(id) ?? { record, ctx: undefined, apps: {}, problem: 'removed meanwhile' };
  }

  async setEnabled(id: string, enabled: boolean, actor: string): Promise<TenantRecord> {
    const record = await this.namespaces.registry.setEnabled(id, enabled, actor);
    if (!record) throw notFound(`no tenant ${id}`);
    await this.sync();
    return record;
  }

  /**
   * `DELETE /operator/tenants/:id`: once the registration is gone, the tenant's host routes nowhere;
   * resolves once its requests in flight have finished (up to SHUTDOWN_GRACE_MS) and it is closed.
   */
  async remove(id: string, actor: string): Promise<void> {
    const outcome = await this.namespaces.registry.remove(id, actor);
    if (outcome === 'absent') throw notFound(`no tenant ${id}`);
    if (outcome === 'enabled')
      throw new AppError('CONFLICT', `enabled: tenant ${id} is enabled; disable it first`, {
        field: 'enabled',
      });
    const served = this.#byId.get(id);
    await this.sync();
    if (served) await this.#retiring.get(served);
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    await this.#syncing;
    await Promise.all([...this.#byId.values()].map((served) => this.#drop(served)));
    await Promise.all(this.#retiring.values());
    await this.#keys.close();
    await this.#http.close();
    await this.namespaces.close();
  }
}
