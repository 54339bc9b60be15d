import { AsyncLocalStorage } from 'node:async_hooks';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { ClaimsProvider } from '../claims/claims-provider.js';
import type { IssuerCatalog } from '../identity/issuer-identity.js';
import type { Logger } from '../model.js';
import {
  type LoadedSchema,
  SchemaFileError,
  type SchemaFileProblem,
  SchemaRegistry,
} from '../schemas/schema-registry.js';
import type { ServedTypeMetadata, TypeMetadataRegistry } from '../schemas/type-metadata.js';

/** Everything built from the schema files; built whole and swapped whole by a reload. */
export interface SchemaSet {
  readonly registry: SchemaRegistry;
  readonly typeMetadata: TypeMetadataRegistry;
  readonly claimsProviders: ReadonlyMap<string, ClaimsProvider>;
}

/** A reload's outcome: the set now served (the new one, or the old one kept) and why not. */
export type ReloadOutcome =
  | { ok: true; schemas: LoadedSchema[] }
  | { ok: false; schemas: LoadedSchema[]; problems: SchemaFileProblem[] };

/**
 * The sets pinned by the request being served, by catalog: one store for every catalog of the
 * process, since Node's AsyncLocalStorage copies each enabled store into every promise the process
 * makes; one store per catalog (per tenant, with TENANCY=multi) made every promise of every tenant
 * cost a step per tenant.
 */
const pinnedSets = new AsyncLocalStorage<ReadonlyMap<SchemaCatalog, SchemaSet>>();

/**
 * The schema set a process serves (docs/schemas-and-claims.md "Reloading schemas"). `schemas`,
 * `typeMetadata` and `claimsProviders` are views that read the current set; a request run
 * through `pin` reads the set that was current when it started until it ends, so a reload never
 * mixes two sets inside one request. `reload` builds a new set from the files and swaps it in only
 * when it builds without a problem; otherwise the old set stays and the outcome names every problem.
 */
export class SchemaCatalog implements IssuerCatalog {
  #current: SchemaSet;
  #queue: Promise<unknown> = Promise.resolve();
  #lastReload: { at: Date; problems: SchemaFileProblem[] } | undefined;
  #catchUp: (() => Promise<unknown>) | undefined;
  readonly schemas: SchemaRegistry;
  readonly typeMetadata: TypeMetadataRegistry;
  readonly claimsProviders: ReadonlyMap<string, ClaimsProvider>;
  /**
   * Set in a WORKERS=N worker: asks the primary to reload the sibling workers too, after a reload
   * this worker took through the admin route (SIGHUP reaches every worker through the primary).
   */
  propagate: (() => void) | undefined;

  constructor(
    initial: SchemaSet,
    private readonly build: () => Promise<SchemaSet>,
  ) {
    this.#current = initial;
    this.schemas = new SchemaRegistry(() => this.current().registry.entries());
    this.typeMetadata = new MapView<string, ServedTypeMetadata>(() => this.current().typeMetadata);
    this.claimsProviders = new MapView<string, ClaimsProvider>(() => this.current().claimsProviders);
  }

  /** The set of the request being served, else the latest. */
  current(): SchemaSet {
    return pinnedSets.getStore()?.get(this) ?? this.#current;
  }

  /** Runs `fn` (a request) on the set current now, whatever reloads happen before it ends. */
  pin<T>(fn: () => T): T {
    const outer = pinnedSets.getStore();
    return pinnedSets.run(new Map(outer).set(this, this.#current), fn);
  }

  /**
   * SCHEMAS_WATCH (docs/schemas-and-claims.md "Reloading schemas"): looks at `dir` every `pollMs`
   * and reloads (logged with `trigger`) when its files changed since the last look; `catchUp`
   * looks at once. Returns the stop.
   */
  watch(dir: string, log: Logger, pollMs = 1000): () => void {
    let seen = folderState(dir);
    let pending: Promise<unknown> = Promise.resolve();
    const look = (): Promise<unknown> => {
      const now = folderState(dir);
      if (now !== seen) {
        seen = now;
        pending = reloadAndLog(this, log, 'SCHEMAS_DIR changed');
      }
      return pending;
    };
    this.#catchUp = look;
    const timer = setInterval(() => void look(), pollMs);
    timer.unref();
    return () => {
      clearInterval(timer);
      this.#catchUp = undefined;
    };
  }

  /**
   * While watched: reloads first when SCHEMAS_DIR changed since the last look, so that a request
   * right after a file is written is served with it, whatever the poll's timing. Resolves once the
   * set to serve is in place (a refused reload keeps the previous set, as every reload does).
   */
  async catchUp(): Promise<void> {
    await this.#catchUp?.();
  }

  /** This process's latest reload and the files it refused (none once a reload succeeds). */
  lastReload(): { at: Date; problems: SchemaFileProblem[] } | undefined {
    return this.#lastReload;
  }

  /** One reload at a time: a second call waits, then reads the files as they are then. */
  reload(): Promise<ReloadOutcome> {
    const run = this.#queue.then(() => this.#reload());
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #reload(): Promise<ReloadOutcome> {
    try {
      const next = await this.build();
      this.#current = next;
      this.#lastReload = { at: new Date(), problems: [] };
      return { ok: true, schemas: next.registry.all() };
    } catch (err) {
      const problems =
        err instanceof SchemaFileError
          ? err.problems
          : [{ file: '(schemas)', message: (err as Error).message ?? String(err) }];
      this.#lastReload = { at: new Date(), problems };
      return { ok: false, schemas: this.#current.registry.all(), problems };
    }
  }
}

/**
 * What a reload would read, as one string: every file under `dir` (sub-folders hold contexts and
 * claims modules) with its size and modification time; a folder that cannot be read is its error.
 */
function folderState(dir: string): string {
  let names: string[];
  try {
    names = (readdirSync(dir, { recursive: true }) as string[]).sort();
  } catch (err) {
    return `unreadable: ${(err as NodeJS.ErrnoException).code ?? ''}`;
  }
  return names
    .map((name) => {
      try {
        const st = statSync(join(dir, name));
        return st.isFile() ? `${name}:${st.size}:${st.mtimeMs}` : '';
      } catch {
        return '';
      }
    })
    .join('\n');
}

/** A read-only Map that reads through to whichever map `source` returns now. */
class MapView<K, V> implements ReadonlyMap<K, V> {
  constructor(private readonly source: () => ReadonlyMap<K, V>) {}
  get size(): number {
    return this.source().size;
  }
  get(key: K): V | undefined {
    return this.source().get(key);
  }
  has(key: K): boolean {
    return this.source().has(key);
  }
  forEach(callback: (value: V, key: K, map: ReadonlyMap<K, V>) => void, thisArg?: unknown): void {
    this.source().forEach(callback, thisArg);
  }
  entries() {
    return this.source().entries();
  }
  keys() {
    return this.source().keys();
  }
  values() {
    return this.source().values();
  }
  [Symbol.iterator]() {
    return this.source()[Symbol.iterator]();
  }
}

/**
 * Reloads and writes the outcome to the log: `schemas_reloaded`, or `schemas_reload_failed` with
 * each problem; `pid` tells the workers of WORKERS=N apart.
 */
export async function reloadAndLog(
  catalog: SchemaCatalog,
  log: Logger,
  trigger: string,
): Promise<ReloadOutcome> {
  const outcome = await catalog.reload();
  const schemaIds = outcome.schemas.map((s) => s.schemaId);
  if (outcome.ok)
    log.info(
      { event: 'schemas_reloaded', trigger, schemaIds, pid: process.pid },
      `schemas: reloaded ${schemaIds.length} (${trigger})`,
    );
  else
    log.error(
      { event: 'schemas_reload_failed', trigger, problems: outcome.problems, schemaIds, pid: process.pid },
      `schemas: reload failed, keeping the previous ${schemaIds.length} (${trigger}): ${outcome.problems
        .map((p) => `${p.file}: ${p.message}`)
        .join('; ')}`,
    );
  return outcome;
}
