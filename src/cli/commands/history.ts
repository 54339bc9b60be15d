import { PROOF_TYPES } from '../../formats/names.js';
import { shortDid } from '../../short-did.js';
import { AdminApiError } from '../admin-client.js';
import { json, table } from '../output.js';
import { type KeysetPage, walkAllPages } from '../paging.js';
import { type RegisterCommand, withFlags } from './command.js';

/** The route's query parameters as this command's flags, so that an error names what to fix. */
const HISTORY_FLAGS: Readonly<Record<string, string>> = {
  holderDid: '--holder-did',
  email: '--email',
  schemaId: '--schema',
  revocationNonce: '--nonce',
  proofType: '--proof-type',
  status: '--status',
  order: '--order',
  page: '--page',
  cursor: '--cursor',
  limit: '--limit',
};
const historyFlag = (field: string) => HISTORY_FLAGS[field] ?? field;

const WIDE_COLUMNS = [
  'created',
  'nonce',
  'status',
  'upload',
  'schemaId',
  'proofType',
  'expires',
  'holderDid',
  'credentialId',
  'statusIdx',
  'statusList',
];
/**
 * What fits a terminal: the holder DID shortened to its end, as people compare them, and the
 * credential's index in its token status list (Iden3 credentials have none: `-`).
 */
const NARROW_COLUMNS = ['created', 'nonce', 'status', 'upload', 'schemaId', 'holder', 'statusIdx'];

export const historyCommand: RegisterCommand = (program, act) => {
  program
    .command('history')
    .description('issuance history, newest first (GET /admin/issuance-history); never claim values')
    .option('--holder-did <did>', 'only this holder')
    .option(
      '--email <address>',
      'only direct issuances (admin issue-vc) and OpenID4VCI offers to this address, any case; hosted ones carry no email',
    )
    .option('--schema <schemaId>', 'only this schema')
    .option('--schema-id <schemaId>', 'the same as --schema')
    .option('--nonce <revocationNonce>', 'only this revocation nonce')
    .option('--revocation-nonce <revocationNonce>', 'the same as --nonce')
    .option('--proof-type <type>', PROOF_TYPES.join(' or '))
    .option('--status <status>', 'valid, revoked, suspended, expired, upload_pending or upload_failed')
    .option('--order <order>', 'createdAt_desc (default) or createdAt_asc')
    .option('--page <n>', 'page number (default 1; slower than --cursor on big tables)')
    .option('--cursor <cursor>', 'the page after the one that printed this cursor')
    .option('--limit <n>', 'records per page (1-100)', '25')
    .option('--all', 'every page, walked by cursor')
    .option(
      '--wide',
      'every column, full width, with the status list URI (default: created, nonce, status, upload, schemaId, a shortened holder DID, the status list index)',
    )
    .action(
      act(async (run, opts: Record<string, string | boolean | undefined>) => {
        type Page = KeysetPage<Record<string, unknown>>;
        const query = {
          holderDid: opts.holderDid as string | undefined,
          email: opts.email as string | undefined,
          schemaId: (opts.schema ?? opts.schemaId) as string | undefined,
          revocationNonce: (opts.nonce ?? opts.revocationNonce) as string | undefined,
          proofType: opts.proofType as string | undefined,
          status: opts.status as string | undefined,
          order: opts.order as string | undefined,
          limit: opts.all ? '100' : (opts.limit as string),
        };
        const fetchPage = async (at: { page?: string; cursor?: string; total?: 'false' }) => {
          try {
            return (
              await run.client.call<Page>('GET', '/admin/issuance-history', { query: { ...query, ...at } })
            ).body;
          } catch (err) {
            throw err instanceof AdminApiError ? withFlags(err, historyFlag) : err;
          }
        };
        let result: Page;
        // The walk counts the rows itself: its first page asks for no total.
        if (opts.all) result = await walkAllPages((at) => fetchPage(at.cursor ? at : { total: 'false' }));
        else if (typeof opts.cursor === 'string') {
          // With --page as well, the route refuses the pair and names `cursor`.
          result = await fetchPage({
            cursor: opts.cursor,
            ...(typeof opts.page === 'string' ? { page: opts.page } : {}),
          });
        } else {
          result = await fetchPage({ page: typeof opts.page === 'string' ? opts.page : '1' });
        }
        if (run.json) {
          run.io.out(json(result));
          return 0;
        }
        const rows = result.data.map((r) => ({
          ...r,
          upload: r.uploadState,
          expires: r.expiresAt,
          nonce: r.revocationNonce,
          created: opts.wide ? r.createdAt : String(r.createdAt).slice(0, 19).replace('T', ' '),
          holder: shortDid(String(r.holderDid)),
          statusIdx: statusListOf(r)?.idx,
          statusList: statusListOf(r)?.uri,
        }));
        run.io.out(table(rows, opts.wide ? WIDE_COLUMNS : NARROW_COLUMNS));
        const { page: p, limit, total, nextCursor } = result.pagination;
        if (opts.all) run.io.out(`${total} records`);
        else if (p !== undefined && total !== undefined) {
          run.io.out(`page ${p} of ${Math.max(1, Math.ceil(total / limit))} (${total} records)`);
        }
        if (!opts.all && nextCursor) run.io.out(`next page: --cursor ${nextCursor}`);
        return 0;
      }),
    );
};

/** The route's `statusList: { idx, uri } | null` (the `status_list` reference of draft-ietf-oauth-status-list). */
const statusListOf = (r: Record<string, unknown>): { idx?: unknown; uri?: unknown } | undefined =>
  r.statusList && typeof r.statusList === 'object'
    ? (r.statusList as { idx?: unknown; uri?: unknown })
    : undefined;
