import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { type Command, Option } from 'commander';
import { parseNamedKeys } from '../../config/named-keys.js';
import { AdminApiError, type CallOptions } from '../admin-client.js';
import { json } from '../output.js';
import { callAndPrint, type RegisterCommand, type Run, UsageError } from './command.js';

export interface TenantView {
  id: string;
  origin: string;
  enabled: boolean;
  serving?: boolean;
  problem?: string;
  adminActors: string[];
  namespace: string;
}

/** The operator routes take OPERATOR_API_KEY, never an admin key. */
export function operator(run: Run, options: CallOptions = {}): CallOptions {
  const key = run.settings.operatorApiKey;
  if (!key)
    throw new AdminApiError(0, 'NO_OPERATOR_KEY', 'OPERATOR_API_KEY is not set (environment or .env)');
  return { ...options, admin: false, headers: { 'x-operator-api-key': key } };
}

export const line = (t: TenantView) =>
  `${t.id}\t${t.origin}\t${t.enabled ? 'enabled' : 'disabled'}${t.serving === false ? `\tnot serving${t.problem ? `: ${t.problem}` : ''}` : ''}`;

/** A new random key, as `openssl rand -base64 32` would print (43 characters, no padding). */
export const newKey = () => randomBytes(32).toString('base64url');

/** The value of the environment variable a `--…-env <name>` flag names; none without the flag. */
export function valueFromEnv(run: Run, name: string | undefined, flag: string): string | undefined {
  if (name === undefined) return undefined;
  const value = run.settings.env[name];
  if (!value) throw new UsageError(`${flag}: ${name} is not set`);
  return value;
}

/** The flags of a tenant's own OpenID4VCI login provider and secrets (`tenants add` and `set`). */
export interface Oid4vciFlags {
  loginIssuer?: string;
  loginClientId?: string;
  loginUserClaim?: string;
  loginClientSecretEnv?: string;
  loginClientKeyFile?: string;
  requestEncryptionKeyFile?: string;
}

export const oid4vciOptions = (command: Command): Command =>
  command
    .option('--login-issuer <url>', "the tenant's own OID4VCI_LOGIN_ISSUER (with --login-client-id)")
    .option('--login-client-id <id>', "the tenant's client id at its login provider")
    .option('--login-user-claim <claim>', 'the ID token claim that is the user id (default sub)')
    .option(
      '--login-client-secret-env <name>',
      'read its client secret at the login provider from this variable',
    )
    .option(
      '--login-client-key-file <pem>',
      'a P-256 private key (PKCS#8 PEM) for private_key_jwt, read here',
    )
    .option(
      '--request-encryption-key-file <pem>',
      "the tenant's own credential request encryption key (P-256, PKCS#8 PEM), read here",
    );

/** The body's `settings.oid4vciLogin` and `secrets` the flags give (the files read here, sent once). */
export function oid4vciBody(
  run: Run,
  opts: Oid4vciFlags,
): { oid4vciLogin?: Record<string, string>; secrets: Record<string, string> } {
  if ((opts.loginIssuer === undefined) !== (opts.loginClientId === undefined))
    throw new UsageError('--login-issuer and --login-client-id: give both');
  const fromFile = (file: string | undefined, flag: string) => {
    if (file === undefined) return undefined;
    if (!existsSync(file)) throw new UsageError(`${flag}: no file ${file}`);
    return readFileSync(file, 'utf8');
  };
  const secrets: Record<string, string> = {};
  const clientSecret = valueFromEnv(run, opts.loginClientSecretEnv || undefined, '--login-client-secret-env');
  if (clientSecret) secrets.oid4vciLoginClientSecret = clientSecret;
  const clientKey = fromFile(opts.loginClientKeyFile, '--login-client-key-file');
  if (clientKey) secrets.oid4vciLoginClientKey = clientKey;
  const requestKey = fromFile(opts.requestEncryptionKeyFile, '--request-encryption-key-file');
  if (requestKey) secrets.oid4vciRequestEncryptionKey = requestKey;
  return {
    ...(opts.loginIssuer && opts.loginClientId
      ? {
          oid4vciLogin: {
            issuer: opts.loginIssuer,
            clientId: opts.loginClientId,
            ...(opts.loginUserClaim ? { userClaim: opts.loginUserClaim } : {}),
          },
        }
      : {}),
    secrets,
  };
}

// docs/several-issuers.md "The operator": the deployment's tenants, over the operator routes.
export const tenantsCommand: RegisterCommand = (program, act) => {
  const tenants = program
    .command('tenants')
    .description('the issuers of a TENANCY=multi deployment (OPERATOR_API_KEY; /operator/tenants)');
  tenants
    .command('list')
    .description('every tenant: id, origin, enabled or disabled, serving or why not')
    .action(
      act(async (run) => {
        await callAndPrint<{ tenants: TenantView[] }>(
          run,
          'GET',
          '/operator/tenants',
          ({ tenants: all }) => (all.length === 0 ? 'no tenants' : all.map(line)),
          operator(run),
        );
        return 0;
      }),
    );
  const add = tenants
    .command('add')
    .description(
      'register and serve a new issuer; prints its x-api-key and admin key once when they are generated',
    )
    .argument('<id>', 'a DNS label: a-z, 0-9 and -')
    .requiredOption('--origin <origin>', "the tenant's public origin (its ISSUER_ORIGIN)")
    .requiredOption('--partner-id <uuid>', "the tenant's PARTNER_ID at the hosting service")
    .option('--service-url <url>', "the tenant's SERVICE_V1_BASE_URL (default: the deployment's)")
    .addOption(
      new Option('--sd-jwt-issuer <mode>', "the tenant's SD_JWT_ISSUER (default: the deployment's)").choices([
        'url',
        'did:web',
        'x5c',
      ]),
    )
    .option('--schemas-dir <dir>', "the tenant's SCHEMAS_DIR, on the server (default: the deployment's)")
    .option('--api-key-env <name>', 'read the x-api-key from this environment variable (default: generated)')
    .option(
      '--admin-key-env <name>',
      'read the admin key (actor `admin`) from this environment variable (default: generated)',
    );
  oid4vciOptions(add).action(
    act(
      async (
        run,
        id: string,
        opts: Oid4vciFlags & {
          origin: string;
          partnerId: string;
          serviceUrl?: string;
          sdJwtIssuer?: string;
          schemasDir?: string;
          apiKeyEnv?: string;
          adminKeyEnv?: string;
        },
      ) => {
        const own = oid4vciBody(run, opts);
        const apiKey = valueFromEnv(run, opts.apiKeyEnv, '--api-key-env') ?? newKey();
        const adminKey = valueFromEnv(run, opts.adminKeyEnv, '--admin-key-env') ?? newKey();
        // The generated keys exist nowhere else (the registry keeps their digests): --json shows them too.
        const generated = {
          ...(opts.apiKeyEnv ? {} : { apiKey }),
          ...(opts.adminKeyEnv ? {} : { adminApiKeys: { admin: adminKey } }),
        };
        const { body } = await run.client.call<{ tenant: TenantView }>(
          'POST',
          '/operator/tenants',
          operator(run, {
            body: {
              id,
              origin: opts.origin,
              settings: {
                partnerId: opts.partnerId,
                ...(opts.serviceUrl ? { serviceBaseUrl: opts.serviceUrl } : {}),
                ...(opts.sdJwtIssuer ? { sdJwtIssuer: opts.sdJwtIssuer } : {}),
                ...(opts.schemasDir ? { schemasDir: opts.schemasDir } : {}),
                ...(own.oid4vciLogin ? { oid4vciLogin: own.oid4vciLogin } : {}),
              },
              apiKey,
              adminApiKeys: { admin: adminKey },
              ...(Object.keys(own.secrets).length > 0 ? { secrets: own.secrets } : {}),
            },
          }),
        );
        const { tenant } = body;
        if (run.json) run.io.out(json({ ...body, ...generated }));
        else
          for (const line of [
            `${tenant.id}: added, ${tenant.serving ? 'serving' : `not serving: ${tenant.problem ?? 'unknown'}`} at ${tenant.origin}`,
            ...(opts.apiKeyEnv ? [] : [`x-api-key (for the hosting service; shown once): ${apiKey}`]),
            ...(opts.adminKeyEnv ? [] : [`admin key, actor admin (shown once): ${adminKey}`]),
          ])
            run.io.out(line);
        return tenant.serving ? 0 : 1;
      },
    ),
  );
  tenants
    .command('adopt')
    .description(
      "make this single deployment's own data tenant <id>, keeping its origin, keys, status lists and history (read from its environment: ISSUER_ORIGIN, PARTNER_ID, API_KEY, ADMIN_API_KEY(S), …)",
    )
    .argument('<id>', 'a DNS label: a-z, 0-9 and -')
    .action(
      act(async (run, id: string) => {
        const env = run.settings.env;
        const need = (name: string) => {
          const value = env[name];
          if (!value)
            throw new UsageError(`tenants adopt: ${name} is not set (the single deployment's environment)`);
          return value;
        };
        const problems: string[] = [];
        const adminApiKeys = Object.fromEntries([
          ...(env.ADMIN_API_KEY ? [['admin', env.ADMIN_API_KEY] as const] : []),
          ...parseNamedKeys(env.ADMIN_API_KEYS, problems).map((k) => [k.name, k.key] as const),
        ]);
        if (problems.length > 0) throw new UsageError(problems.join('; '));
        const body = await callAndPrint<{ tenant: TenantView }>(
          run,
          'POST',
          '/operator/tenants/adopt',
          ({ tenant }) =>
            `${tenant.id}: adopted the deployment's own data, ${tenant.serving ? 'serving' : `not serving: ${tenant.problem ?? 'unknown'}`} at ${tenant.origin}`,
          operator(run, {
            body: {
              id,
              origin: need('ISSUER_ORIGIN'),
              settings: {
                partnerId: need('PARTNER_ID'),
                ...(env.SERVICE_V1_BASE_URL ? { serviceBaseUrl: env.SERVICE_V1_BASE_URL } : {}),
                ...(env.SD_JWT_ISSUER ? { sdJwtIssuer: env.SD_JWT_ISSUER } : {}),
                ...(env.SCHEMAS_DIR ? { schemasDir: env.SCHEMAS_DIR } : {}),
              },
              apiKey: need('API_KEY'),
              adminApiKeys,
            },
          }),
        );
        return body.tenant.serving ? 0 : 1;
      }),
    );
  tenants
    .command('show')
    .description('one tenant: its settings, health, volume and failing uploads (never a claim or credential)')
    .argument('<id>')
    .action(
      act(async (run, id: string) => {
        await callAndPrint<{ tenant: TenantView; health: Record<string, unknown> }>(
          run,
          'GET',
          `/operator/tenants/${encodeURIComponent(id)}`,
          ({ tenant, health }) => [
            line(tenant),
            ...Object.entries(health).map(([k, v]) => `  ${k}: ${JSON.stringify(v)}`),
          ],
          operator(run),
        );
        return 0;
      }),
    );
  for (const action of ['disable', 'enable'] as const)
    tenants
      .command(action)
      .description(
        action === 'disable'
          ? 'stop its issuance and admin changes at once (503 TENANT_DISABLED); its public routes keep serving'
          : 'serve its issuance and admin changes again',
      )
      .argument('<id>')
      .action(
        act(async (run, id: string) => {
          await callAndPrint<{ tenant: TenantView }>(
            run,
            'POST',
            `/operator/tenants/${encodeURIComponent(id)}/${action}`,
            ({ tenant }) => line(tenant),
            operator(run),
          );
          return 0;
        }),
      );
  tenants
    .command('remove')
    .description("remove a disabled tenant's registration (its data namespace is kept); leaves an audit row")
    .argument('<id>')
    .action(
      act(async (run, id: string) => {
        await callAndPrint<{ removed: string }>(
          run,
          'DELETE',
          `/operator/tenants/${encodeURIComponent(id)}`,
          ({ removed }) => `${removed}: removed`,
          operator(run),
        );
        return 0;
      }),
    );
};
