import { AUDIT_ACTIONS } from '../../model.js';
import { json, table } from '../output.js';
import type { RegisterCommand } from './command.js';

export const auditCommand: RegisterCommand = (program, act) => {
  program
    .command('audit')
    .description('who did what, newest first (GET /admin/audit)')
    .option('--action <action>', `only this action: ${AUDIT_ACTIONS.join(', ')}`)
    .option('--actor <name>', 'only this admin key name (ADMIN_API_KEY is "admin")')
    .option('--page <n>', 'page number', '1')
    .option('--limit <n>', 'records per page (1-100)', '25')
    .action(
      act(async (run, opts: { action?: string; actor?: string; page: string; limit: string }) => {
        const { body } = await run.client.call<{
          data: Array<{ at: string; actor: string; action: string; target: string; reason?: string }>;
          pagination: { page: number; limit: number; total: number };
        }>('GET', '/admin/audit', {
          query: { action: opts.action, actor: opts.actor, page: opts.page, limit: opts.limit },
        });
        if (run.json) run.io.out(json(body));
        else {
          run.io.out(table(body.data, ['at', 'actor', 'action', 'target', 'reason']));
          const { page, limit, total } = body.pagination;
          run.io.out(`page ${page} (${limit} per page) of ${total} entries`);
        }
        return 0;
      }),
    );
};
