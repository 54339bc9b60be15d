import { onDuplicateOption, positiveInt, type RegisterCommand } from './command.js';

export const batchIssueCommand: RegisterCommand = (program, act) => {
  program
    .command('batch-issue')
    .description('issue one credential per CSV row; validates every row first; resumable')
    .argument(
      '<file.csv>',
      "columns email, credentialSubject.<claim> (JSON cells) or user (the claims provider's user id), optional expiration, schemaId, vct",
    )
    .option('--schema <schemaId>', 'schema for rows without a schemaId cell')
    .option('--vct <vct>', 'vct for rows without a vct cell')
    .option(
      '--expiration <iso8601>',
      "expiration for rows without an expiration cell (default: now + the schema's expiresInSeconds)",
    )
    .addOption(onDuplicateOption())
    .option('--concurrency <n>', 'requests in flight (1-64)', positiveInt(64), 8)
    .option('--out <file>', 'result CSV (default: <file.csv>.results.csv); rerun with it to resume')
    .action(
      act(async (run, file: string, opts: Record<string, unknown>) => {
        // Loaded when run: its CSV, progress bar and zod schemas would slow every command's start.
        const { runBatchIssue } = await import('../batch-issue.js');
        return runBatchIssue(
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
        );
      }),
    );
};
