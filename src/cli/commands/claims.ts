import type { RegisterCommand } from './command.js';

export const claimsCommand: RegisterCommand = (program, act) => {
  const claims = program.command('claims').description('the built-in sqlite claims source');
  claims
    .command('import')
    .description('upsert claims records (POST /admin/claims): JSON like examples/claims.json, or CSV')
    .argument(
      '<file>',
      '.json, or .csv with columns userId, expiresAt? (date-time or date), schemaId?, credentialSubject.<claim>',
    )
    .option('--schema <schemaId>', 'schema for records that do not name one')
    .option('--reason <text>', 'why (kept in the audit log)')
    .action(
      act(async (run, file: string, opts: { schema?: string; reason?: string }) => {
        // Loaded when run: its CSV reader and zod schemas would slow every command's start.
        const { runClaimsImport } = await import('../claims-import.js');
        return runClaimsImport(
          run.client,
          { file, schema: opts.schema, reason: opts.reason, json: run.json },
          run.io,
        );
      }),
    );
};
