import { AUDIT_ACTIONS } from '../../audit-actions.js';
import { json, table } from '../output.js';
import { type KeysetPage, walkAllPages } from '../paging.js';
import type { RegisterCommand } from './command.js';

type AuditPage = KeysetPage<{ at: string; actor: string; action: string; target: string; reason?: string }>;

export const auditCommand: RegisterCommand = (program, act) => {
  program
    .command('audit')
    .description('who did what, newest first (GET /admin/audit)')
    .option('--action <action>', `only this action: ${AUDIT_ACTIONS.join(', ')}`)
    .option('--actor <name>', 'only this admin key name (ADMIN_API_KEY is "admin")')
    .option('--page <n>', 'page number (default 1; slower than --cursor on big logs)')
    .option('--cursor <cursor>', 'the page after the one that printed this cursor')
    .option('--limit <n>', 'records per page (1-100)', '25')
    .option('--all', 'every page, walked by cursor')
    .action(
      act(
        async (
          run,
          opts: {
            action?: string;
            actor?: string;
            page?: string;
            cursor?: string;
            limit: string;
            all?: boolean;
          },
        ) => {
          const fetchPage = async (at: { page?: string; cursor?: string; total?: 'false' }) =>
            (
              await run.client.call<AuditPage>('GET', '/admin/audit', {
                query: {
                  action: opts.action,
                  actor: opts.actor,
                  limit: opts.all ? '100' : opts.limit,
                  ...at,
                },
              })
            ).body;
          let body: AuditPage;
          // The walk counts the entries itself: its first page asks for no total.
          if (opts.all) body = await walkAllPages((at) => fetchPage(at.cursor ? at : { total: 'false' }));
          else if (opts.cursor !== undefined) {
            body = await fetchPage({
              cursor: opts.cursor,
              ...(opts.page === undefined ? {} : { page: opts.page }),
            });
          } else {
            body = await fetchPage({ page: opts.page ?? '1' });
          }
          if (run.json) run.io.out(json(body));
          else {
            run.io.out(table(body.data, ['at', 'actor', 'action', 'target', 'reason']));
            const { page, limit, total, nextCursor } = body.pagination;
            if (opts.all) run.io.out(`${total} entries`);
            else if (page !== undefined) run.io.out(`page ${page} (${limit} per page) of ${total} entries`);
            if (!opts.all && nextCursor) run.io.out(`next page: --cursor ${nextCursor}`);
          }
          return 0;
        },
      ),
    );
};
