import { Option } from 'commander';
import { json } from '../output.js';
import type { RegisterCommand } from './command.js';
import { UsageError } from './command.js';
import {
  newKey,
  type Oid4vciFlags,
  oid4vciBody,
  oid4vciOptions,
  operator,
  type TenantView,
  valueFromEnv,
} from './tenants.js';

/** The settings `--unset` gives back to the deployment's default, and the secrets it removes. */
const UNSETTABLE = {
  serviceBaseUrl: 'settings',
  schemasDir: 'settings',
  sdJwtIssuer: 'settings',
  oid4vciLogin: 'settings',
  oid4vciRequestEncryptionKey: 'secrets',
} as const;

interface SetOptions extends Oid4vciFlags {
  origin?: string;
  partnerId?: string;
  serviceUrl?: string;
  sdJwtIssuer?: string;
  schemasDir?: string;
  rotateApiKey?: boolean;
  apiKeyEnv?: string;
  addAdminKey?: string;
  adminKeyEnv?: string;
  removeAdminKey?: string[];
  unset?: string[];
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

// docs/several-issuers.md "Changing a tenant": PATCH /operator/tenants/:id.
export const tenantsSetCommand: RegisterCommand = (program, act) => {
  const tenants = program.commands.find((c) => c.name() === 'tenants');
  if (!tenants) throw new Error('tenants set: the tenants command is registered first');
  const set = tenants
    .command('set')
    .description(
      'change a tenant without a restart: its settings, its own OpenID4VCI secrets, its x-api-key and admin keys (prints a generated key once); its origin cannot change',
    )
    .argument('<id>')
    .option('--origin <origin>', 'refused: the origin names its did:web and what it issued')
    .option('--partner-id <uuid>', "the tenant's PARTNER_ID at the hosting service")
    .option('--service-url <url>', "the tenant's SERVICE_V1_BASE_URL")
    .addOption(
      new Option('--sd-jwt-issuer <mode>', "the tenant's SD_JWT_ISSUER").choices(['url', 'did:web', 'x5c']),
    )
    .option('--schemas-dir <dir>', "the tenant's SCHEMAS_DIR, on the server");
  oid4vciOptions(set)
    .option('--rotate-api-key', 'a new x-api-key for the hosting service, generated and shown once')
    .option('--api-key-env <name>', 'the new x-api-key, read from this environment variable')
    .option(
      '--add-admin-key <name>',
      'add (or replace) the admin key of actor <name>, generated and shown once',
    )
    .option('--admin-key-env <name>', 'with --add-admin-key: read that key from this environment variable')
    .option('--remove-admin-key <name>', 'remove the admin key of actor <name> (repeatable)', collect)
    .option(
      '--unset <name>',
      `give a setting back to the deployment's, or remove a secret (repeatable): ${Object.keys(UNSETTABLE).join(', ')}`,
      collect,
    )
    .action(
      act(async (run, id: string, opts: SetOptions) => {
        if (opts.adminKeyEnv && !opts.addAdminKey)
          throw new UsageError('--admin-key-env: only with --add-admin-key');
        const settings: Record<string, unknown> = {};
        const secrets: Record<string, unknown> = {};
        for (const name of opts.unset ?? []) {
          const where = UNSETTABLE[name as keyof typeof UNSETTABLE];
          if (!where)
            throw new UsageError(`--unset: ${name} is none of ${Object.keys(UNSETTABLE).join(', ')}`);
          (where === 'settings' ? settings : secrets)[name] = null;
        }
        if (opts.partnerId) settings.partnerId = opts.partnerId;
        if (opts.serviceUrl) settings.serviceBaseUrl = opts.serviceUrl;
        if (opts.sdJwtIssuer) settings.sdJwtIssuer = opts.sdJwtIssuer;
        if (opts.schemasDir) settings.schemasDir = opts.schemasDir;
        const own = oid4vciBody(run, opts);
        if (own.oid4vciLogin) settings.oid4vciLogin = own.oid4vciLogin;
        Object.assign(secrets, own.secrets);
        const apiKey =
          valueFromEnv(run, opts.apiKeyEnv, '--api-key-env') ?? (opts.rotateApiKey ? newKey() : undefined);
        const adminKey = opts.addAdminKey
          ? (valueFromEnv(run, opts.adminKeyEnv, '--admin-key-env') ?? newKey())
          : undefined;
        const adminApiKeys: Record<string, string | null> = {};
        for (const name of opts.removeAdminKey ?? []) adminApiKeys[name] = null;
        if (opts.addAdminKey && adminKey) adminApiKeys[opts.addAdminKey] = adminKey;
        const body = {
          ...(opts.origin === undefined ? {} : { origin: opts.origin }),
          ...(Object.keys(settings).length > 0 ? { settings } : {}),
          ...(Object.keys(secrets).length > 0 ? { secrets } : {}),
          ...(apiKey === undefined ? {} : { apiKey }),
          ...(Object.keys(adminApiKeys).length > 0 ? { adminApiKeys } : {}),
        };
        if (Object.keys(body).length === 0)
          throw new UsageError('tenants set: nothing to change (see --help)');
        const { body: answer } = await run.client.call<{ tenant: TenantView }>(
          'PATCH',
          `/operator/tenants/${encodeURIComponent(id)}`,
          operator(run, { body }),
        );
        // A generated key exists nowhere else (the registry keeps its digest): --json shows it too.
        const apiKeyShown = opts.rotateApiKey && !opts.apiKeyEnv;
        const adminShown = opts.addAdminKey && !opts.adminKeyEnv;
        const generated = {
          ...(apiKeyShown ? { apiKey } : {}),
          ...(adminShown && opts.addAdminKey ? { adminApiKeys: { [opts.addAdminKey]: adminKey } } : {}),
        };
        const { tenant } = answer;
        if (run.json) run.io.out(json({ ...answer, ...generated }));
        else
          for (const text of [
            `${tenant.id}: changed, ${tenant.serving ? 'serving' : `not serving: ${tenant.problem ?? 'unknown'}`} at ${tenant.origin}`,
            ...(apiKeyShown ? [`x-api-key (for the hosting service; shown once): ${apiKey}`] : []),
            ...(adminShown ? [`admin key, actor ${opts.addAdminKey} (shown once): ${adminKey}`] : []),
          ])
            run.io.out(text);
        return tenant.serving ? 0 : 1;
      }),
    );
};
