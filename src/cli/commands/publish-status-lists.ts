import { table } from '../output.js';
import { callAndPrint, type RegisterCommand } from './command.js';

export const publishStatusListsCommand: RegisterCommand = (program, act) => {
  program
    .command('publish-status-lists')
    .description(
      'rebuild and re-sign every token status list partition (POST /admin/publish-token-status-list)',
    )
    .option('--reason <text>', 'why (kept in the audit log)')
    .action(
      act(async (run, opts: { reason?: string }) => {
        await callAndPrint<{ partitions: Array<Record<string, unknown>> }>(
          run,
          'POST',
          '/admin/publish-token-status-list',
          (body) =>
            table(
              // iat is in epoch seconds (JWT); people read ISO 8601.
              body.partitions.map((p) => ({
                ...p,
                issuedAt: typeof p.iat === 'number' ? new Date(p.iat * 1000).toISOString() : p.iat,
              })),
              ['partition', 'size', 'issuedAt', 'uri'],
            ),
          { body: opts.reason ? { reason: opts.reason } : {} },
        );
        return 0;
      }),
    );
};
