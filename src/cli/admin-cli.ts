import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command, CommanderError } from 'commander';
import { AdminApiError, AdminClient } from './admin-client.js';
import { auditCommand } from './commands/audit.js';
import { backupCommand } from './commands/backup.js';
import { batchIssueCommand } from './commands/batch-issue.js';
import { claimsCommand } from './commands/claims.js';
import type { Act, RegisterCommand, Run } from './commands/command.js';
import { completionCommand } from './commands/completion.js';
import { consoleCommand } from './commands/console.js';
import { dbCommand } from './commands/db.js';
import { didCommand } from './commands/did.js';
import { doctorCommand } from './commands/doctor.js';
import { historyCommand } from './commands/history.js';
import { issueCommand } from './commands/issue.js';
import { keysCommand } from './commands/keys.js';
import { offerCommand } from './commands/offer.js';
import { publishStatusListsCommand } from './commands/publish-status-lists.js';
import { renewCommand } from './commands/renew.js';
import { schemasCommand } from './commands/schemas.js';
import { statusCommand } from './commands/status.js';
import { statusChangeCommands } from './commands/status-change.js';
import { tenantsCommand } from './commands/tenants.js';
import { tenantsSetCommand } from './commands/tenants-set.js';
import { uploadsCommand } from './commands/uploads.js';
import { verifyCommand } from './commands/verify.js';
import { webhooksCommand } from './commands/webhooks.js';
import { InputFileError } from './input-file-error.js';
import { type CliIo, json, processIo } from './output.js';
import { loadCliSettings } from './settings.js';

/** The commands, in the order `--help` lists them; one file of `commands/` each. */
const COMMANDS: RegisterCommand[] = [
  issueCommand,
  batchIssueCommand,
  offerCommand,
  statusChangeCommands,
  statusCommand,
  renewCommand,
  historyCommand,
  uploadsCommand,
  webhooksCommand,
  publishStatusListsCommand,
  claimsCommand,
  schemasCommand,
  keysCommand,
  didCommand,
  auditCommand,
  consoleCommand,
  backupCommand,
  dbCommand,
  doctorCommand,
  verifyCommand,
  tenantsCommand,
  tenantsSetCommand,
  completionCommand,
];

/** The version in package.json (two folders up from src/cli). */
function packageVersion(): string {
  const file = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'package.json');
  return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
}

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
    .option(
      '--url <url>',
      'issuer server URL (default: ISSUER_URL, else the ADMIN_PORT listener, else http://localhost:$PORT or 3000; never ISSUER_ORIGIN)',
    )
    .version(packageVersion(), '-V, --version', 'print the issuer-kit version')
    .option('--json', 'machine-readable JSON on stdout')
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out(s), writeErr: (s) => io.err(s) })
    .showHelpAfterError();

  // Every action: settings from the environment, then the command; failures become exit code 1.
  const act: Act =
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

  for (const register of COMMANDS) register(program, act);

  try {
    await program.parseAsync(argv, { from: 'node' });
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode;
    throw err;
  }
  return exitCode;
}
