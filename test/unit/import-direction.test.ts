import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

// The rooms of src/ (its folders and top-level files) from the top floor down, and the one rule
// between them: a room imports only rooms on lower lines. Rooms on one line do not import each
// other. docs/architecture.md "Direction of imports" explains the order; a new folder or top-level
// file of src/ gets its line here.
/**
 * An issuer's identification mode and public URLs (`IssuerUrls`): the keys, the config and the
 * schema loader read them, below the identity that holds them with its keys and status-list space.
 */
const ISSUER_URLS_ROOM = 'issuer-urls.ts';
/** What a claims source is (`ClaimsProvider`), which the identity's schema catalogue holds one of per schema. */
const CLAIMS_PROVIDER_ROOM = 'claims/claims-provider.ts';
/** Files that are rooms of their own, below the rest of their folder. */
const FILE_ROOMS = new Set([CLAIMS_PROVIDER_ROOM]);

const ROOM_ORDER: readonly (readonly string[])[] = [
  ['main.ts'], // process entry: config, development start-up, context, listeners, signals
  ['cluster.ts', 'cli/'], // the WORKERS=N primary; the admin CLI
  ['tenancy/'], // TENANCY=multi: the registry, the namespaces, a context per tenant, routing by host
  ['server.ts', 'shutdown.ts'], // the listeners; the signals that drain them and end the process
  ['app.ts'], // middleware, the route table, the error handler
  ['http/'], // routes and middleware
  ['context.ts'], // builds the parts once
  ['app-context.ts'], // what the context holds and what a test may override (types)
  ['development/'], // the development start, its files, the production guard, the emulator
  ['webhooks/', 'oid4vci/'], // endpoints, signing and the delivery worker; the OpenID4VCI channel
  ['catalog/', 'issuance/'], // the schema set served (reloadable); the issuance flows and outbox
  ['claims/', 'formats/'], // claims providers; the credential formats (issuer, verifier, status, start-up)
  ['verify/', 'status/', 'service-client/', 'observability/'], // verify/: a relying party's shared checks
  ['identity/'], // who the issuer is: origin, identification, keys, status-list space, partner
  ['keys/'],
  ['config/'], // the one reader of process.env; DATABASE_URL through the store's engine list
  ['schemas/', 'store/', 'rate-limit/', 'envelope/', 'workers/', 'outbound/'], // workers/: the loop background workers share; outbound/: outbound HTTP (pools, postJson)
  ['events/'], // the webhook event catalogue and its builders: stores write the events they are given
  [ISSUER_URLS_ROOM, CLAIMS_PROVIDER_ROOM], // an issuer's mode and public URLs; what a claims source is
  ['model.ts', 'errors.ts', 'random-pool.ts', 'request-context.ts', 'short-did.ts'], // the bottom floor
  ['audit-actions.ts'], // names only, below the model (the admin CLI lists them without loading zod)
];

/**
 * Rooms allowed to import Express: the app and its routes, the emulator's own server, and the
 * dispatch of a multi-tenant deployment with its operator routes.
 */
const EXPRESS_ROOMS = new Set(['app.ts', 'http/', 'development/', 'tenancy/']);

/** What the production path (the context and the app) must never load: the development start and the emulator. */
const DEVELOPMENT_ONLY = ['development/start.ts', 'development/emulator/'];

const SRC = 'src';
const files = (readdirSync(SRC, { recursive: true }) as string[])
  .filter((f) => /\.(ts|mjs)$/.test(f))
  .map((f) => f.split('\\').join('/'))
  .sort();

const roomOf = (file: string): string =>
  FILE_ROOMS.has(file) ? file : file.includes('/') ? `${file.split('/')[0]}/` : file;
const levelOf = new Map(ROOM_ORDER.flatMap((line, level) => line.map((room) => [room, level] as const)));

/** Every relative module a file names: `from '…'`, `import '…'` and `import('…')`, as paths under src/. */
function importsOf(file: string): { specifier: string; target: string; dynamic: boolean }[] {
  const text = readFileSync(join(SRC, file), 'utf8');
  const found: { specifier: string; target: string; dynamic: boolean }[] = [];
  for (const m of text.matchAll(/\b(from|import)\s*(\()?\s*['"](\.{1,2}\/[^'"]+)['"]/g)) {
    const specifier = m[3] ?? '';
    const target = normalize(join(dirname(file), specifier))
      .split('\\')
      .join('/')
      .replace(/\.js$/, '.ts');
    found.push({ specifier, target, dynamic: m[2] === '(' });
  }
  return found;
}

const graph = new Map(files.map((f) => [f, importsOf(f)]));

describe('import direction between the rooms of src/', () => {
  it('the order names every room of src/ once, and only rooms that exist', () => {
    const declared = ROOM_ORDER.flat();
    const present = [...new Set(files.map(roomOf))].sort();
    expect(declared.length).toBe(new Set(declared).size);
    expect(present.filter((r) => !levelOf.has(r))).toEqual([]);
    expect(declared.filter((r) => !present.includes(r))).toEqual([]);
  });

  it('finds the imports it checks (the parser still reads this code)', () => {
    const crossing = [...graph].flatMap(([file, imports]) =>
      imports.filter((i) => roomOf(i.target) !== roomOf(file)),
    );
    expect(crossing.length).toBeGreaterThan(200);
    expect(graph.get('context.ts')?.some((i) => i.target === 'store/engines.ts')).toBe(true);
  });

  it('no room imports a room on its own line or above', () => {
    const upward: string[] = [];
    for (const [file, imports] of graph) {
      const from = roomOf(file);
      for (const { specifier, target } of imports) {
        const to = roomOf(target);
        if (to === from || relative(SRC, join(SRC, target)).startsWith('..')) continue;
        const a = levelOf.get(from);
        const b = levelOf.get(to);
        if (a === undefined || b === undefined || b <= a)
          upward.push(`src/${file} imports '${specifier}': ${from} may not import ${to}`);
      }
    }
    expect(upward).toEqual([]);
  });

  it('the context and the app never load the development start or the emulator', () => {
    const reached = new Set<string>();
    const visit = (file: string) => {
      if (reached.has(file)) return;
      reached.add(file);
      for (const i of graph.get(file) ?? []) if (!i.dynamic) visit(i.target);
    };
    visit('context.ts');
    visit('app.ts');
    expect(reached.has('development/production-guard.ts')).toBe(true);
    expect([...reached].filter((f) => DEVELOPMENT_ONLY.some((d) => f.startsWith(d)))).toEqual([]);
  });

  it('only the app, its routes and the emulator import Express', () => {
    const outside = files.filter(
      (f) =>
        !EXPRESS_ROOMS.has(roomOf(f)) && /from\s+['"]express['"]/.test(readFileSync(join(SRC, f), 'utf8')),
    );
    expect(outside).toEqual([]);
  });

  it('no import cycle among the files of src/ (type imports included)', () => {
    const state = new Map<string, 'open' | 'done'>();
    const cycles: string[] = [];
    const visit = (file: string, path: string[]) => {
      state.set(file, 'open');
      for (const { target } of graph.get(file) ?? []) {
        if (!graph.has(target)) continue;
        if (state.get(target) === 'open')
          cycles.push([...path, file, target].slice(path.indexOf(target)).join(' → '));
        else if (!state.has(target)) visit(target, [...path, file]);
      }
      state.set(file, 'done');
    };
    for (const file of files) if (!state.has(file)) visit(file, []);
    expect(cycles).toEqual([]);
  });
});
