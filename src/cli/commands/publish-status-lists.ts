import { json, table } from '../output.js';
import type { RegisterCommand } from './command.js';

export const publishStatusListsCommand: RegisterCommand = (program, act) => {
  program
    .command('publish-status-lists')
    .description(
      'rebuild and re-sign every token status list partition (POST /admin/publish-token-status-list)',
    )
    .option('--reason <text>', 'why (kept in the audit log)')
    .action(
      act(async (run, opts: { reason?: string }) => {
        const { body } = await run.client.call<{ partitions: Array<Record<string, unknown>> }>(
          'POST',
          '/admin/publish-token-status-list',
          { body: opts.reason ? { reason: opts.reason } : {} },
        );
        if (run.json) run.io.out(json(body));
        else run.io.out(table(body.partitions, ['partition', 'size', 'iat', 'uri']));
        return 0;
      }),
    );
};
