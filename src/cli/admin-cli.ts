import { existsSync, readFileSync } from 'node:fs';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { AdminApiError, AdminClient } from './admin-client.js';
import { runBatchIssue } from './batch-issue.js';
import { runClaimsImport } from './claims-import.js';
import { InputFileError } from './csv-input.js';
import { type CliIo, json, processIo, table } from './output.js';
import { type CliSettings, loadCliSettings } from './settings.js';

interface Run {
  json: boolean;
  settings: CliSettings;
  client: AdminClient;
  io: CliIo;
}

class UsageError extends Error {
  override name = 'UsageError';
}

/** `--subject '{"a":1}'` or `--subject @subject.json`. */
function jsonOption(value: string, name: string): Record<string, unknown> {
  let text = value;
  if (value.startsWith('@')) {
    const file = value.slice(1);
    if (!existsSync(file)) throw new UsageError(`${name}: no file ${file}`);
    text = readFileSync(file, 'utf8');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${name}: not valid JSON (${(err as Error).message})`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new UsageError(`${name}: must be a JSON object`);
  return parsed as Record<string, unknown>;
}

const positiveInt = (max: number) => (value: string) => {
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > max)
    throw new InvalidArgumentError(`a whole number from 1 to ${max}`);
  return Number(value);
};

const NONCE = /^\d{1,16}$/;
const onDuplicateOption = () =>
  new Option('--on-duplicate <mode>', 'when the holder already has a valid credential of the schema')
    .choices(['allow', 'ignore', 'revoke'])
    .default('allow');

function reportError(err: unknown, asJson: boolean, io: CliIo): number {
  if (err instanceof AdminApiError) {
    if (asJson)
      io.out(
        json({ error: { status: err.status, code: err.code, message: err.message, details: err.details } }),
      );
    else {
      io.err(`error: ${err.status === 0 ? '' : `${err.status} `}${err.code}: ${err.message}`);
      const issues = (err.details as { issues?: Array<{ field: string; message: string }> } | undefined)
        ?.issues;
      if (issues && issues.length > 1) for (const i of issues) io.err(`  ${i.field}: ${i.message}`);
    }
    return 1;
  }
  if (err instanceof InputFileError) {
    if (asJson) io.out(json({ ok: false, problems: err.problems }));
    else for (const p of err.problems) io.err(`line ${p.line}: ${p.field}: ${p.message}`);
    return 1;
  }
  const message = (err as Error)?.message ?? String(err);
  if (asJson) io.out(json({ error: { code: 'CLI', message } }));
  else io.err(`error: ${message}`);
  return 1;
}

/**
 * `npm run admin -- <command>`: everything an issuer operates, over the running server's admin
 * routes (ADMIN_API_KEY; ISSUER_URL or --url). Returns the process exit code.
 */
export async function runAdminCli(
  argv: string[],
  io: CliIo = processIo,
  env: NodeJS.ProcessEnv = process.env,
  cwd: string = process.cwd(),
): Promise<number> {
  let exitCode = 0;
  const program = new Command('admin')
    .description('issuer-kit admin: direct and batch issuance, status, history, claims, keys')
    .option('--url <url>', 'issuer server URL (default: ISSUER_URL, else http://localhost:$PORT or 3000)')
    .option('--json', 'machine-readable JSON on stdout')
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s) })
    .showHelpAfterError();

  // Every action: settings from the environment, then the command; failures become exit code 1.
  const act =
    <A extends unknown[]>(fn: (run: Run, ...args: A) => Promise<number | undefined>) =>
    async (...args: unknown[]) => {
      const cmd = args[args.length - 1] as Command;
      const globals = cmd.optsWithGlobals() as { url?: string; json?: boolean };
      const settings = loadCliSettings({ url: globals.url }, env, cwd);
      const run: Run = {
        json: globals.json === true,
        settings,
        client: new AdminClient(settings.url, settings.adminApiKey),
        io,
      };
      try {
        exitCode = (await fn(run, ...(args.slice(0, -1) as A))) ?? 0;
      } catch (err) {
        exitCode = reportError(err, run.json, io);
      }
    };

  program
    .command('issue')
    .description('issue one credential to a holder by email (POST /admin/issue-vc)')
    .requiredOption('--email <email>', "the holder's own email")
    .requiredOption('--schema <schemaId>', 'schema to issue')
    .requiredOption('--vct <vct>', 'SD-JWT vct')
    .requiredOption('--expiration <iso8601>', 'expiry, ISO 8601 with an offset, in the future')
    .requiredOption('--subject <json|@file>', 'credentialSubject claims')
    .option(
      '--disclosure-frame <json|@file>',
      'selectively disclosable claims (default: every top-level claim)',
    )
    .addOption(onDuplicateOption())
    .option('--idempotency-key <key>', 'replay-safe retries: the same key and body answer the first result')
    .action(
      act(async (run, opts: Record<string, string | undefined>) => {
        const body = {
          userId: opts.email,
          schemaId: opts.schema,
          vct: opts.vct,
          expiration: opts.expiration,
          credentialSubject: jsonOption(opts.subject!, '--subject'),
          ...(opts.disclosureFrame
            ? { disclosureFrame: jsonOption(opts.disclosureFrame, '--disclosure-frame') }
            : {}),
          onDuplicate: opts.onDuplicate,
        };
        const { status, body: answer } = await run.client.call<Record<string, unknown>>(
          'POST',
          '/admin/issue-vc',
          {
            body,
            headers: opts.idempotencyKey ? { 'idempotency-key': opts.idempotencyKey } : {},
          },
        );
        const outcome = status === 200 ? 'existing' : status === 202 ? 'pending' : 'issued';
        if (run.json) run.io.out(json({ outcome, ...answer }));
        else {
          run.io.out(`${outcome}: credential ${String(answer.credentialId)}`);
          for (const k of ['revocationNonce', 'holderDid', 'schemaId', 'uploadState', 'storagePath'])
            run.io.out(`  ${k.padEnd(16)}${String(answer[k] ?? '-')}`);
        }
        return 0;
      }),
    );

  program
    .command('batch-issue')
    .description('issue one credential per CSV row; validates every row first; resumable')
    .argument(
      '<file.csv>',
      'columns email, expiration, credentialSubject.<claim> (JSON cells), optional schemaId, vct',
    )
    .option('--schema <schemaId>', 'schema for rows without a schemaId cell')
    .option('--vct <vct>', 'vct for rows without a vct cell')
    .option('--expiration <iso8601>', 'expiration for rows without an expiration cell')
    .addOption(onDuplicateOption())
    .option('--concurrency <n>', 'requests in flight (1-64)', positiveInt(64), 8)
    .option('--out <file>', 'result CSV (default: <file.csv>.results.csv); rerun with it to resume')
    .action(
      act(async (run, file: string, opts: Record<string, unknown>) =>
        runBatchIssue(
          run.client,
          {
            file,
            schema: opts.schema as string | undefined,
            vct: opts.vct as string | undefined,
            expiration: opts.expiration as string | undefined,
            onDuplicate: opts.onDuplicate as 'allow' | 'ignore' | 'revoke',
            concurrency: opts.concurrency as number,
            out: opts.out as string | undefined,
            json: run.json,
          },
          run.io,
        ),
      ),
    );

  for (const [name, route, verb] of [
    ['revoke', '/admin/revoke', 'revoke (final)'],
    ['suspend', '/admin/suspend', 'suspend (needs STATUS_LIST_BITS=2)'],
    ['unsuspend', '/admin/unsuspend', 'lift the suspension of'],
  ] as const) {
    program
      .command(name)
      .description(`${verb} credentials by revocation nonce (POST ${route})`)
      .argument('<nonce...>', 'revocation nonces (decimal)')
      .action(
        act(async (run, nonces: string[]) => {
          const results: Array<Record<string, unknown>> = [];
          for (const nonce of nonces) {
            if (!NONCE.test(nonce)) {
              results.push({ revocationNonce: nonce, ok: false, error: 'not a decimal revocation nonce' });
              continue;
            }
            try {
              const { body } = await run.client.call<Record<string, unknown>>('POST', route, {
                body: { revocationNonce: nonce },
              });
              results.push({ ok: true, ...body });
            } catch (err) {
              if (!(err instanceof AdminApiError) || err.status === 0 || err.status === 403) throw err;
              results.push({
                revocationNonce: nonce,
                ok: false,
                error: `${err.status} ${err.code}: ${err.message}`,
              });
            }
          }
          if (run.json) run.io.out(json(results));
          else
            for (const r of results)
              run.io.out(
                r.ok
                  ? `${String(r.revocationNonce)}: ${String(r.status)}`
                  : `${String(r.revocationNonce)}: failed: ${String(r.error)}`,
              );
          return results.every((r) => r.ok) ? 0 : 1;
        }),
      );
  }

  program
    .command('status')
    .description('public revocation status of a credential (GET /revocation-status/:nonce)')
    .argument('<nonce>', 'revocation nonce (decimal)')
    .action(
      act(async (run, nonce: string) => {
        if (!NONCE.test(nonce)) throw new UsageError('nonce: not a decimal revocation nonce');
        const { body } = await run.client.call<{ isRevoked: boolean; status?: string }>(
          'GET',
          `/revocation-status/${nonce}`,
          { admin: false },
        );
        if (run.json) run.io.out(json({ revocationNonce: nonce, ...body }));
        else run.io.out(`${nonce}: ${body.status ?? (body.isRevoked ? 'revoked' : 'not revoked')}`);
        return 0;
      }),
    );

  program
    .command('history')
    .description('issuance history, newest first (GET /admin/issuance-history); never claim values')
    .option('--holder-did <did>', 'only this holder')
    .option('--schema <schemaId>', 'only this schema')
    .option('--schema-id <schemaId>', 'the same as --schema')
    .option('--nonce <revocationNonce>', 'only this revocation nonce')
    .option('--revocation-nonce <revocationNonce>', 'the same as --nonce')
    .option('--proof-type <type>', 'SD_JWT_VC or BJJ_SIG_2021')
    .option('--status <status>', 'valid, revoked, suspended, expired or upload_pending')
    .option('--order <order>', 'createdAt_desc (default) or createdAt_asc')
    .option('--page <n>', 'page number', '1')
    .option('--limit <n>', 'records per page (1-100)', '25')
    .option('--all', 'every page')
    .action(
      act(async (run, opts: Record<string, string | boolean | undefined>) => {
        type Page = {
          data: Array<Record<string, unknown>>;
          pagination: { page: number; limit: number; total: number };
        };
        const query = {
          holderDid: opts.holderDid as string | undefined,
          schemaId: (opts.schema ?? opts.schemaId) as string | undefined,
          revocationNonce: (opts.nonce ?? opts.revocationNonce) as string | undefined,
          proofType: opts.proofType as string | undefined,
          status: opts.status as string | undefined,
          order: opts.order as string | undefined,
          limit: opts.all ? '100' : (opts.limit as string),
        };
        let page = Number(opts.all ? 1 : opts.page);
        let answer = (
          await run.client.call<Page>('GET', '/admin/issuance-history', { query: { ...query, page } })
        ).body;
        const data = [...answer.data];
        while (opts.all && page * answer.pagination.limit < answer.pagination.total) {
          page++;
          answer = (
            await run.client.call<Page>('GET', '/admin/issuance-history', { query: { ...query, page } })
          ).body;
          data.push(...answer.data);
        }
        const result = opts.all
          ? { data, pagination: { page: 1, limit: data.length, total: answer.pagination.total } }
          : answer;
        if (run.json) {
          run.io.out(json(result));
          return 0;
        }
        const rows = result.data.map((r) => ({
          ...r,
          upload: r.uploadState,
          created: r.createdAt,
          expires: r.expiresAt,
          nonce: r.revocationNonce,
        }));
        run.io.out(
          table(rows, [
            'created',
            'nonce',
            'status',
            'upload',
            'schemaId',
            'proofType',
            'expires',
            'holderDid',
            'credentialId',
          ]),
        );
        const { page: p, limit, total } = result.pagination;
        run.io.out(
          opts.all
            ? `${total} records`
            : `page ${p} of ${Math.max(1, Math.ceil(total / limit))} (${total} records)`,
        );
        return 0;
      }),
    );

  program
    .command('publish-status-lists')
    .description(
      'rebuild and re-sign every token status list partition (POST /admin/publish-token-status-list)',
    )
    .action(
      act(async (run) => {
        const { body } = await run.client.call<{ partitions: Array<Record<string, unknown>> }>(
          'POST',
          '/admin/publish-token-status-list',
          { body: {} },
        );
        if (run.json) run.io.out(json(body));
        else run.io.out(table(body.partitions, ['partition', 'size', 'iat', 'uri']));
        return 0;
      }),
    );

  const claims = program.command('claims').description('the built-in sqlite claims source');
  claims
    .command('import')
    .description('upsert claims records (POST /admin/claims): JSON like examples/claims.json, or CSV')
    .argument(
      '<file>',
      '.json, or .csv with columns userId, expiresAt?, schemaId?, credentialSubject.<claim>',
    )
    .option('--schema <schemaId>', 'schema for records that do not name one')
    .action(
      act(async (run, file: string, opts: { schema?: string }) =>
        runClaimsImport(run.client, { file, schema: opts.schema, json: run.json }, run.io),
      ),
    );

  const keys = program.command('keys').description('credential-signing and partner-JWT keys');
  keys
    .command('generate')
    .description('create the missing keys in KEYS_DIR (files; existing keys are kept)')
    .action(
      act(async (run) => {
        // Loaded here: the key code (jose) is only needed by this command.
        const { generateMissingKeys } = await import('./keys.js');
        const out = await generateMissingKeys(run.settings.keysDir);
        if (run.json) run.io.out(json(out));
        else
          for (const k of out)
            run.io.out(`${k.purpose}: ${k.created ? 'created' : 'keeping'} ${k.kid} (${k.file})`);
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
    .action(
      act(async (run, opts: { purpose: string }) => {
        const { body } = await run.client.call<{
          created: { kid: string };
          retired: Array<{ kid: string }>;
          statusListsRepublished: number;
        }>('POST', '/admin/keys/rotate', { body: { purpose: opts.purpose } });
        if (run.json) run.io.out(json(body));
        else {
          run.io.out(`${opts.purpose}: new key ${body.created.kid} signs from now on`);
          for (const r of body.retired)
            run.io.out(`  retired ${r.kid} (published until its credentials expire)`);
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
        const { body } = await run.client.call<{ keys: Array<Record<string, unknown>> }>(
          'GET',
          '/admin/keys',
        );
        if (run.json) run.io.out(json(body));
        else
          run.io.out(
            table(
              body.keys.map((k) => ({
                ...k,
                state: k.active ? 'active' : 'retired',
                lastExpiry: k.lastCredentialExpiresAt,
              })),
              ['purpose', 'kid', 'state', 'published', 'createdAt', 'retiredAt', 'lastExpiry'],
            ),
          );
        return 0;
      }),
    );

  program
    .command('did')
    .description('the issuer DIDs: did:web, and the Iden3 DID when that back-end is on')
    .action(
      act(async (run) => {
        const { body } = await run.client.call<{ id: string; alsoKnownAs?: string[] }>(
          'GET',
          '/.well-known/did.json',
          { admin: false },
        );
        const iden3 = body.alsoKnownAs?.find(
          (d) => d.startsWith('did:iden3:') || d.startsWith('did:polygonid:'),
        );
        const out = {
          didWeb: body.id,
          iden3: iden3 ?? body.alsoKnownAs?.[0] ?? null,
          alsoKnownAs: body.alsoKnownAs ?? [],
        };
        if (run.json) run.io.out(json(out));
        else {
          run.io.out(`did:web  ${out.didWeb}`);
          run.io.out(`iden3    ${out.iden3 ?? '-'}`);
        }
        return 0;
      }),
    );

  try {
    await program.parseAsync(argv, { from: 'node' });
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode;
    throw err;
  }
  return exitCode;
}
