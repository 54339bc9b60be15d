import { json, table } from '../output.js';
import { type KeysetPage, walkAllPages } from '../paging.js';
import { callAndPrint, type RegisterCommand, UsageError } from './command.js';

interface Endpoint {
  id: string;
  url: string;
  events: string[];
  description: string | null;
  createdAt: string;
}

interface Delivery {
  id: string;
  type: string;
  sequence: number;
  state: string;
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  nextAttemptAt: string | null;
}

/** `npm run admin -- webhooks add|list|remove|rotate-secret|deliveries|retry|retry-failed` (docs/operations.md "Webhooks"). */
export const webhooksCommand: RegisterCommand = (program, act) => {
  const webhooks = program.command('webhooks').description('webhook endpoints and their deliveries');
  webhooks
    .command('add')
    .description('register an endpoint (POST /admin/webhooks); prints its secret once')
    .argument('<url>', 'where events are POSTed (https in production)')
    .option('--events <types>', 'comma-separated event types, or * for all', '*')
    .option('--description <text>', 'what the endpoint is for')
    .action(
      act(async (run, url: string, opts: { events: string; description?: string }) => {
        const events = opts.events
          .split(',')
          .map((e) => e.trim())
          .filter((e) => e !== '');
        if (events.length === 0) throw new UsageError('webhooks add: --events names no event type');
        await callAndPrint<Endpoint & { secret: string }>(
          run,
          'POST',
          '/admin/webhooks',
          (body) => [
            `${body.id}: ${body.url} (${body.events.join(', ')})`,
            `secret (shown once; the receiver verifies with it): ${body.secret}`,
          ],
          { body: { url, events, ...(opts.description ? { description: opts.description } : {}) } },
        );
        return 0;
      }),
    );
  webhooks
    .command('list')
    .description('the registered endpoints (GET /admin/webhooks)')
    .action(
      act(async (run) => {
        await callAndPrint<{ webhooks: Endpoint[] }>(run, 'GET', '/admin/webhooks', (body) =>
          body.webhooks.length === 0
            ? 'no webhook endpoints'
            : table(
                body.webhooks.map((w) => ({
                  ...w,
                  events: w.events.join(','),
                  description: w.description ?? '',
                })),
                ['id', 'url', 'events', 'description', 'createdAt'],
              ),
        );
        return 0;
      }),
    );
  webhooks
    .command('remove')
    .description('remove an endpoint and its pending deliveries (DELETE /admin/webhooks/:id)')
    .argument('<id>', 'the endpoint id (wh_…)')
    .action(
      act(async (run, id: string) => {
        await callAndPrint<{ removed: string }>(
          run,
          'DELETE',
          `/admin/webhooks/${encodeURIComponent(id)}`,
          (body) => `${body.removed}: removed`,
        );
        return 0;
      }),
    );
  webhooks
    .command('rotate-secret')
    .description('a new secret, printed once; the old one keeps signing beside it for 24 h')
    .argument('<id>', 'the endpoint id (wh_…)')
    .action(
      act(async (run, id: string) => {
        await callAndPrint<{ id: string; secret: string; previousValidUntil: string }>(
          run,
          'POST',
          `/admin/webhooks/${encodeURIComponent(id)}/rotate-secret`,
          (body) => [
            `${body.id}: new secret (shown once): ${body.secret}`,
            `the previous secret also signs until ${body.previousValidUntil}`,
          ],
          { body: {} },
        );
        return 0;
      }),
    );
  webhooks
    .command('deliveries')
    .description("an endpoint's deliveries, newest first (GET /admin/webhooks/:id/deliveries)")
    .argument('<id>', 'the endpoint id (wh_…)')
    .option('--status <state>', 'pending, delivered or failed')
    .option('--cursor <cursor>', 'the page after the one that printed this cursor')
    .option('--limit <n>', 'deliveries per page (1-500)', '100')
    .option('--all', 'every page, walked by cursor')
    .action(
      act(
        async (run, id: string, opts: { status?: string; cursor?: string; limit: string; all?: boolean }) => {
          const fetchPage = async (at: { cursor?: string }): Promise<KeysetPage<Delivery>> => {
            const { body } = await run.client.call<{
              deliveries: Delivery[];
              pagination: { limit: number; nextCursor: string | null };
            }>('GET', `/admin/webhooks/${encodeURIComponent(id)}/deliveries`, {
              query: { status: opts.status, limit: opts.all ? '500' : opts.limit, ...at },
            });
            return { data: body.deliveries, pagination: body.pagination };
          };
          const page = opts.all
            ? await walkAllPages(fetchPage)
            : await fetchPage(opts.cursor === undefined ? {} : { cursor: opts.cursor });
          const nextCursor = opts.all ? null : page.pagination.nextCursor;
          if (run.json)
            run.io.out(json({ deliveries: page.data, pagination: { ...page.pagination, nextCursor } }));
          else {
            if (page.data.length === 0) run.io.out('no deliveries');
            else
              run.io.out(
                table(
                  page.data.map((d) => ({
                    ...d,
                    lastStatus: d.lastStatus ?? '',
                    lastError: d.lastError ?? '',
                  })),
                  ['id', 'type', 'sequence', 'state', 'attempts', 'lastStatus', 'lastError'],
                ),
              );
            if (opts.all) run.io.out(`${page.data.length} deliveries`);
            if (nextCursor) run.io.out(`next page: --cursor ${nextCursor}`);
          }
          return 0;
        },
      ),
    );
  webhooks
    .command('retry-failed')
    .description(
      'queue every failed delivery of an endpoint again, same webhook-ids (POST /admin/webhooks/:id/retry-failed)',
    )
    .argument('<id>', 'the endpoint id (wh_…)')
    .action(
      act(async (run, id: string) => {
        await callAndPrint<{ id: string; retried: number }>(
          run,
          'POST',
          `/admin/webhooks/${encodeURIComponent(id)}/retry-failed`,
          (body) => `${body.id}: ${body.retried} failed deliveries queued again`,
          { body: {} },
        );
        return 0;
      }),
    );
  webhooks
    .command('retry')
    .description('queue a failed delivery again, same webhook-id (POST /admin/webhooks/deliveries/:id/retry)')
    .argument('<deliveryId>', 'the delivery id (msg_…), from webhooks deliveries --status failed')
    .action(
      act(async (run, deliveryId: string) => {
        await callAndPrint<{ retried: string }>(
          run,
          'POST',
          `/admin/webhooks/deliveries/${encodeURIComponent(deliveryId)}/retry`,
          (body) => `${body.retried}: queued again`,
          { body: {} },
        );
        return 0;
      }),
    );
};
