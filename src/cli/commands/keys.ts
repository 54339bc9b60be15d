import { Option } from 'commander';
import { json, table } from '../output.js';
import type { CliSettings } from '../settings.js';
import { callAndPrint, type RegisterCommand, UsageError } from './command.js';
import { addKeysCompromisedCommand } from './keys-compromised.js';

/**
 * Runs a key command with the key backend the environment names (KEY_BACKEND, PKCS11_*: a
 * PKCS#11 token's keys are made and used there), closing it after; a configuration problem is a
 * usage error with the same lines a start would print.
 */
async function withKeyBackend<T>(
  settings: CliSettings,
  fn: (backend: import('../../keys/key-backend.js').KeyBackend) => Promise<T>,
): Promise<T> {
  // Loaded here: only the key commands need a backend (and pkcs11 a native addon).
  const { keyBackendFromEnv } = await import('../../keys/open-key-backend.js');
  const { ConfigError } = await import('../../config/env.js');
  const { KeyError } = await import('../../keys/key-error.js');
  let backend: import('../../keys/key-backend.js').KeyBackend;
  try {
    backend = await keyBackendFromEnv(settings.env, settings.cwd);
  } catch (err) {
    if (err instanceof ConfigError || err instanceof KeyError) throw new UsageError(err.message);
    throw err;
  }
  try {
    return await fn(backend);
  } finally {
    await backend.close();
  }
}

type ResealedStore = import('../../keys/reseal.js').ResealedStore;
type ResealedTenant = import('../../tenancy/reseal-tenants.js').ResealedTenant;

/** The lines of one store's reseal: its rows, its count of keys, its recipient emails. */
function describeResealed(out: ResealedStore & { database: string }, keysIn?: string): string[] {
  const lines = out.rows.map(
    (r) => `${r.purpose} ${r.kid}: ${r.resealed ? 'resealed' : 'already sealed under KEY_ENCRYPTION_KEY'}`,
  );
  if (out.keysInDatabase)
    lines.push(
      `${out.rows.filter((r) => r.resealed).length} of ${out.rows.length} key(s) resealed in ${out.database} (one transaction).`,
    );
  else
    lines.push(`${out.database}: the keys are files in ${keysIn ?? 'KEYS_DIR'}, not sealed in the database.`);
  const { resealed, already, unopenable, reopened } = out.recipients;
  lines.push(
    `${resealed} recipient email(s) kept for renewal resealed, ${already} already under KEY_ENCRYPTION_KEY${unopenable > 0 ? `, ${unopenable} opening with neither key (left as they are: their credentials are not renewable)` : ''}.`,
  );
  if (reopened > 0)
    lines.push(
      `${reopened} credential(s) recorded not_renewable because their email did not open are renewable again: the next renewal sweep takes them.`,
    );
  return lines;
}

/**
 * TENANCY=multi: one tenant's lines, indented under its name; "KEY_ENCRYPTION_KEY" stands for the
 * key derived from it for the tenant.
 */
function describeTenant(t: ResealedTenant): string[] {
  const head = `tenant ${t.id} (${t.enabled ? 'enabled' : 'disabled'}, namespace ${t.namespace}):`;
  const body =
    t.namespace === 'main'
      ? ["its rows are the deployment's own namespace's, above (under KEY_ENCRYPTION_KEY itself)"]
      : describeResealed({ ...t, database: `namespace ${t.namespace}` }, `KEYS_DIR/tenants/${t.id}`);
  const secrets = t.secrets.map(
    (s) =>
      `secrets.${s.name}: ${s.resealed ? 'resealed in the registry' : 'already sealed under KEY_ENCRYPTION_KEY'}`,
  );
  return [head, ...[...body, ...secrets].map((l) => `  ${l}`)];
}

export const keysCommand: RegisterCommand = (program, act) => {
  const keys = program.command('keys').description('credential-signing and partner-JWT keys');
  keys
    .command('generate')
    .description('create the missing keys in KEYS_DIR (files; existing keys are kept)')
    .action(
      act(async (run) => {
        // Loaded here: the key code (jose) is only needed by this command.
        const { describeGenerated, generateMissingKeys } = await import('../keys.js');
        const out = await withKeyBackend(run.settings, (backend) =>
          generateMissingKeys(run.settings.keysDir, { production: run.settings.production, backend }),
        );
        if (run.json) {
          // stdout stays the array of keys; the other development files moved aside are a note.
          run.io.out(json(out.keys));
          for (const file of out.movedAside) run.io.err(`development: moved ${file} aside`);
        } else for (const line of describeGenerated(out)) run.io.out(line);
        return 0;
      }),
    );
  keys
    .command('prepare')
    .description(
      'create a standby credential-signing key, taken by the next rotation (KEYS_DIR files; the shared rows with DATABASE_URL on PostgreSQL)',
    )
    .option('--csr <file>', 'also write a PKCS#10 request for it (SD_JWT_ISSUER=x5c)')
    .option('--origin <origin>', 'the ISSUER_ORIGIN the request names (default: the server URL)')
    .action(
      act(async (run, opts: { csr?: string; origin?: string }) => {
        // Loaded here: the certificate code (@peculiar/x509) is only needed by these commands.
        const { prepareDatabaseKey, prepareKey, withDatabaseKeys } = await import('../key-certificates.js');
        const { env, databaseUrl, cwd, keysDir } = run.settings;
        const origin = opts.origin ?? run.settings.url;
        const out = await withKeyBackend(
          run.settings,
          async (backend) =>
            (await withDatabaseKeys(env, databaseUrl, cwd, (db) =>
              prepareDatabaseKey({ ...db, backend }, origin, opts.csr),
            )) ?? (await prepareKey(keysDir, origin, opts.csr, backend)),
        );
        if (run.json) run.io.out(json(out));
        else run.io.out(`standby ${out.kid} (${out.file})${out.csr ? `; request in ${out.csr}` : ''}`);
        return 0;
      }),
    );
  keys
    .command('certificate <kid> <chain.pem>')
    .description(
      'attach an X.509 chain (PEM, leaf first) to a credential-signing key, its file or its PostgreSQL row (SD_JWT_ISSUER=x5c)',
    )
    .option('--origin <origin>', 'the ISSUER_ORIGIN whose host the leaf must name (default: the server URL)')
    .action(
      act(async (run, kid: string, pemFile: string, opts: { origin?: string }) => {
        const { attachCertificate, attachDatabaseCertificate, withDatabaseKeys } = await import(
          '../key-certificates.js'
        );
        const { env, databaseUrl, cwd, keysDir } = run.settings;
        const origin = opts.origin ?? run.settings.url;
        const { inDatabase, out } = await withKeyBackend(run.settings, async (backend) => {
          const inDatabase = await withDatabaseKeys(env, databaseUrl, cwd, (db) =>
            attachDatabaseCertificate({ ...db, backend }, kid, pemFile, origin),
          );
          return {
            inDatabase,
            out: inDatabase ?? (await attachCertificate(keysDir, kid, pemFile, origin, new Date(), backend)),
          };
        });
        if (run.json) run.io.out(json(out));
        else
          run.io.out(
            `${kid}: ${out.certificates} certificate(s) attached (${out.file}); ${inDatabase ? 'every instance uses it within its key poll' : 'restart to sign with it'}`,
          );
        return 0;
      }),
    );
  keys
    .command('migrate-to-token <mode>')
    .description(
      'move the ES256 keys into the PKCS#11 token of KEY_BACKEND=pkcs11, instances stopped: `import` (same kids; software copies moved to KEYS_DIR/software-keys-aside) or `rotate` (new token keys; the old ones retired, still published)',
    )
    .action(
      act(async (run, mode: string) => {
        if (mode !== 'import' && mode !== 'rotate')
          throw new UsageError('keys migrate-to-token: <mode> must be import or rotate');
        const { env, databaseUrl, cwd, keysDir, production } = run.settings;
        if (env.KEY_BACKEND !== 'pkcs11')
          throw new UsageError(
            'keys migrate-to-token: set KEY_BACKEND=pkcs11 and its PKCS11_* variables first',
          );
        const migration = await import('../../keys/token-migration.js');
        const { withDatabaseKeys } = await import('../key-certificates.js');
        const { databaseKeyHolder, fileKeyHolder } = await import('../../keys/key-holder.js');
        const { silentLogger } = await import('../../observability/logger.js');
        const environment = production ? 'production' : 'development';
        const lines = await withKeyBackend(run.settings, async (backend) => {
          if (mode === 'import') {
            const importing = backend as import('../../keys/token-migration.js').ImportingBackend;
            const out =
              (await withDatabaseKeys(env, databaseUrl, cwd, (db) =>
                migration.importDatabaseKeys(db.keys, db.kek, keysDir, importing),
              )) ?? (await migration.importFileKeys(keysDir, importing));
            return out.map(
              (k) =>
                `${k.purpose} ${k.kid}: ${k.outcome}${k.movedTo ? `; software copy moved to ${k.movedTo}` : ''}`,
            );
          }
          const rotate = async (holder: import('../../keys/key-holder.js').KeyHolder) => {
            try {
              return await migration.rotateIntoToken(holder);
            } finally {
              holder.close();
            }
          };
          const out =
            (await withDatabaseKeys(env, databaseUrl, cwd, async (db) =>
              rotate(
                await databaseKeyHolder(db.keys, {
                  keysDir,
                  generateIfMissing: false,
                  kek: db.kek,
                  pollMs: 3_600_000,
                  log: silentLogger(),
                  environment,
                  backend,
                }),
              ),
            )) ??
            (await rotate(await fileKeyHolder(keysDir, false, undefined, environment, undefined, backend)));
          return out.length === 0
            ? ['every active key already signs in the token']
            : out.map(
                (r) =>
                  `${r.purpose}: new token key ${r.created} signs from now on; retired ${r.retired.join(', ')} (still published)`,
              );
        });
        if (run.json) run.io.out(json(lines));
        else for (const line of lines) run.io.out(line);
        return 0;
      }),
    );
  keys
    .command('reseal')
    .description(
      "seal again under a new KEY_ENCRYPTION_KEY (the old one in KEY_ENCRYPTION_KEY_PREVIOUS) every key kept in PostgreSQL (one transaction) and every recipient email renewal keeps (in batches); with TENANCY=multi, every tenant's too, and its secrets in the registry",
    )
    .action(
      act(async (run) => {
        const { env, databaseUrl, cwd } = run.settings;
        if (env.TENANCY !== undefined && env.TENANCY !== 'single' && env.TENANCY !== 'multi')
          throw new UsageError('keys reseal: TENANCY must be single or multi');
        // Loaded here: only this command needs the database drivers.
        const { resealDatabaseKeys } = await import('../../keys/reseal.js');
        const { KeyError } = await import('../../keys/key-ring.js');
        let out: Awaited<ReturnType<typeof resealDatabaseKeys>> & { tenants?: ResealedTenant[] };
        try {
          out =
            env.TENANCY === 'multi'
              ? await (await import('../../tenancy/reseal-tenants.js')).resealTenants(env, databaseUrl, cwd)
              : await resealDatabaseKeys(env, databaseUrl, cwd);
        } catch (err) {
          if (err instanceof KeyError) throw new UsageError(`keys reseal: ${err.message}`);
          throw err;
        }
        if (run.json) run.io.out(json(out));
        else {
          for (const line of describeResealed(out)) run.io.out(line);
          for (const t of out.tenants ?? []) for (const line of describeTenant(t)) run.io.out(line);
          run.io.out(
            'Restart every instance with the new KEY_ENCRYPTION_KEY; an instance still on the old one cannot open these rows and seals new ones under it, so run this again once every instance runs on the new key.',
          );
        }
        return 0;
      }),
    );
  keys
    .command('rotate')
    .description('retire the active key and sign with a new one from now on (POST /admin/keys/rotate)')
    .addOption(
      new Option('--purpose <purpose>', 'which key')
        .choices(['credential-signing', 'partner-jwt'])
        .default('credential-signing'),
    )
    .option('--reason <text>', 'why (kept in the audit log)')
    .action(
      act(async (run, opts: { purpose: string; reason?: string }) => {
        const { body } = await run.client.call<{
          created: { kid: string };
          retired: Array<{ kid: string }>;
          statusListsRepublished: number;
        }>('POST', '/admin/keys/rotate', {
          body: { purpose: opts.purpose, ...(opts.reason ? { reason: opts.reason } : {}) },
        });
        if (run.json) run.io.out(json(body));
        else {
          const partner = opts.purpose === 'partner-jwt';
          run.io.out(
            `${opts.purpose}: new key ${body.created.kid} signs ${partner ? 'partner JWTs to the hosting service' : 'credentials'} from now on`,
          );
          for (const r of body.retired)
            run.io.out(
              `  retired ${r.kid} (${partner ? 'stays in /.well-known/jwks.json' : 'published until its credentials expire'})`,
            );
          if (opts.purpose === 'credential-signing')
            run.io.out(`  ${body.statusListsRepublished} status list partition(s) re-signed`);
        }
        return 0;
      }),
    );
  keys
    .command('list')
    .description('every key, with its dates and whether it is still published (GET /admin/keys)')
    .action(
      act(async (run) => {
        await callAndPrint<{ keys: Array<Record<string, unknown>> }>(run, 'GET', '/admin/keys', (body) =>
          table(
            body.keys.map((k) => ({
              ...k,
              state: k.active ? 'active' : k.standby ? 'standby' : 'retired',
              lastExpiry: k.lastCredentialExpiresAt,
            })),
            ['purpose', 'kid', 'state', 'published', 'createdAt', 'retiredAt', 'lastExpiry'],
          ),
        );
        return 0;
      }),
    );
  addKeysCompromisedCommand(keys, act);
};
