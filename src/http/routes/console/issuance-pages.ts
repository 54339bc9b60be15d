import type { Request, Response } from 'express';
import type { AppContext } from '../../../context.js';
import { AppError } from '../../../errors.js';
import { CHANNELS, STATUS_NAMES } from '../../../model.js';
import { shortDid } from '../../../short-did.js';
import { derivedStatus } from '../../../status/derived-status.js';
import type { HistoryQuery, IssuanceSummary } from '../../../store/store.js';
import { parseInput } from '../../middleware/validate.js';
import { HistoryQuerySchema } from '../admin/history.js';
import { historyCursor, readHistoryCursor } from '../admin/paging.js';
import { neutraliseFormula } from './csv-cell.js';
import { type Html, html, queryString, when } from './html.js';
import { page, problem, resultsOrProblem } from './layout.js';
import { auditTable, type ConsolePages, filterOf, PAGE_ROWS } from './pages.js';

// The console's pages of issued credentials: Issuances, its CSV export, and one credential's page.

const HISTORY_FILTERS = [
  'email',
  'holderDid',
  'schemaId',
  'status',
  'channel',
  'createdFrom',
  'createdTo',
] as const;

const statusOf = (r: IssuanceSummary, now: Date) => derivedStatus(r, now);
const credentialHref = (id: string) => `/console/credentials/${encodeURIComponent(id)}`;

/** The history query of the Issuances filter (the same schema as `GET /admin/issuance-history`). */
async function historyQuery(
  ctx: AppContext,
  req: Request,
  limit: number,
): Promise<{ filter: Record<string, string>; query: HistoryQuery }> {
  const filter = filterOf(req, HISTORY_FILTERS);
  const { email, ...q } = parseInput(HistoryQuerySchema, { ...filter, limit: String(limit) }, 'query');
  const cursor = typeof req.query.cursor === 'string' ? req.query.cursor : undefined;
  const after = cursor === undefined ? undefined : readHistoryCursor(cursor, 'createdAt_desc');
  if (cursor !== undefined && !after)
    throw new AppError('INVALID_PARAMETER', 'cursor: not a cursor of this page', { field: 'cursor' });
  const emailHash = email === undefined ? undefined : await ctx.hashEmail(email);
  return { filter, query: { ...q, order: 'createdAt_desc', after, emailHash, now: new Date() } };
}

/** Issuances: the history filtered and paged by keyset, newest first. */
export async function issuances(p: ConsolePages, req: Request, res: Response): Promise<void> {
  const { ctx } = p;
  let form = filterOf(req, HISTORY_FILTERS);
  const { results, status } = await resultsOrProblem(async () => {
    const { filter, query } = await historyQuery(ctx, req, PAGE_ROWS);
    form = filter;
    const found = await ctx.store.history.list(query);
    return html`${
      found.records.length === 0
        ? html`<p>No issuance on this page matches.</p>`
        : // At a phone's width the table scrolls inside its own region, focusable for the keyboard
          // (WCAG 2.1.1), and the holder DID is shortened as the CLI's history shows it.
          html`<div class="table-scroll" role="region" aria-labelledby="issuances-caption" tabindex="0"><table><caption id="issuances-caption">Issuances, newest first</caption><thead><tr><th scope="col">Created</th><th scope="col">Credential</th><th scope="col">Holder DID</th><th scope="col">Schema</th><th scope="col">Proof type</th><th scope="col">Status</th><th scope="col">Upload</th></tr></thead><tbody>${found.records.map(
            (r) =>
              html`<tr><td>${when(r.createdAt)}</td><td><a href="${credentialHref(r.credentialId)}">${r.credentialId}</a></td><td class="did" title="${r.holderDid}">${shortDid(r.holderDid)}</td><td>${r.schemaId}</td><td>${r.proofType}</td><td>${statusOf(r, query.now)}</td><td>${r.uploadState}</td></tr>`,
          )}</tbody></table></div>`
    }
<p class="pager">${
      found.next
        ? html`<a rel="next" href="/console/issuances${queryString({ ...filter, cursor: historyCursor(found.next, 'createdAt_desc') })}">Next page</a>`
        : 'End of the results.'
    } <a href="/console/issuances.csv${queryString(filter)}" download>Export these results as CSV</a></p>`;
  });
  const schemas = ctx.identity.catalog.schemas.all().map((s) => s.schemaId);
  const option = (name: string, value: string, label = value) =>
    html`<option value="${value}"${form[name] === value ? html` selected` : ''}>${label}</option>`;
  page(res, {
    title: 'Issuances',
    current: 'issuances',
    pages: p.pages,
    status,
    body: html`<form method="get" action="/console/issuances" class="filters" role="search" aria-label="Filter issuances">
<div><label for="f-email">Recipient email</label><input id="f-email" name="email" type="email" autocomplete="off" value="${form.email ?? ''}"></div>
<div><label for="f-holder">Holder DID</label><input id="f-holder" name="holderDid" value="${form.holderDid ?? ''}"></div>
<div><label for="f-schema">Schema</label><select id="f-schema" name="schemaId"><option value="">Any</option>${schemas.map((s) => option('schemaId', s))}</select></div>
<div><label for="f-status">Status</label><select id="f-status" name="status"><option value="">Any</option>${['valid', 'revoked', 'suspended', 'expired', 'upload_pending', 'upload_failed'].map((s) => option('status', s, s.replace('_', ' ')))}</select></div>
<div><label for="f-channel">Channel</label><select id="f-channel" name="channel"><option value="">Any</option>${CHANNELS.map((c) => option('channel', c))}</select></div>
<div><label for="f-from">Created from (UTC)</label><input id="f-from" name="createdFrom" type="date" value="${form.createdFrom ?? ''}"></div>
<div><label for="f-to">Created before (UTC)</label><input id="f-to" name="createdTo" type="date" value="${form.createdTo ?? ''}"></div>
<div class="go"><button type="submit">Search</button></div>
</form>
<p class="hint">The email is matched through its keyed hash (direct issuances only); it is never stored.</p>
${results}`,
  });
}

/** Most rows one CSV export writes; past it the file ends with a line that says so. */
export const CSV_MAX_ROWS = 100_000;

/** The current Issuances filter as CSV (csv-stringify), read page by page through the keyset. */
export async function issuancesCsv(p: ConsolePages, req: Request, res: Response): Promise<void> {
  const { ctx } = p;
  const { query } = await historyQuery(ctx, req, 100);
  const { stringify } = await import('csv-stringify');
  const csv = stringify({
    cast: { string: neutraliseFormula },
    header: true,
    columns: [
      'credentialId',
      'createdAt',
      'holderDid',
      'schemaId',
      'proofType',
      'status',
      'revocationNonce',
      'statusListUri',
      'statusListIndex',
      'uploadState',
      'expiresAt',
    ],
  });
  res.set('Cache-Control', 'no-store');
  res.type('text/csv; charset=utf-8');
  res.attachment('issuances.csv');
  csv.pipe(res);
  let q = query;
  let written = 0;
  for (;;) {
    const found = await ctx.store.history.list(q);
    for (const r of found.records) {
      if (written >= CSV_MAX_ROWS) break;
      const ok = csv.write({
        credentialId: r.credentialId,
        createdAt: r.createdAt.toISOString(),
        holderDid: r.holderDid,
        schemaId: r.schemaId,
        proofType: r.proofType,
        status: statusOf(r, q.now),
        revocationNonce: String(r.revocationNonce),
        statusListUri: r.statusSlot ? ctx.status.uri(r.statusSlot.partition) : '',
        statusListIndex: r.statusSlot ? String(r.statusSlot.index) : '',
        uploadState: r.uploadState,
        expiresAt: r.expiresAt.toISOString(),
      });
      written++;
      if (!ok) await new Promise((resolve) => csv.once('drain', resolve));
    }
    if (!found.next || written >= CSV_MAX_ROWS) break;
    q = { ...q, after: found.next };
  }
  csv.end();
}

/** Credential: everything about one issuance, its audit trail, and the status actions. */
export async function credential(p: ConsolePages, req: Request, res: Response): Promise<void> {
  const { ctx } = p;
  const id = String(req.params.credentialId);
  const record = await ctx.store.issuances.get(id);
  if (!record) {
    page(res, {
      title: 'Credential not found',
      current: 'credential',
      pages: p.pages,
      status: 404,
      body: problem(`No credential ${id}.`),
    });
    return;
  }
  const now = new Date();
  const nonce = String(record.revocationNonce);
  const [trail, deliveries, links, batchId] = await Promise.all([
    ctx.store.audit.trail([id, nonce], 100),
    ctx.store.webhooks.listCredentialDeliveries(id, 50),
    ctx.store.history.renewalLinks([id]),
    ctx.store.history.batchOf(id),
  ]);
  const link = links.get(id);
  const credentialLink = (other: string | null | undefined) =>
    other ? html`<a href="/console/credentials/${encodeURIComponent(other)}"><code>${other}</code></a>` : '—';
  const derived = derivedStatus(record, now);
  const uri = record.statusSlot ? ctx.status.uri(record.statusSlot.partition) : undefined;
  const twoBits = ctx.identity.statusLists.bits === 2;
  // The flash after the page reloads says what was done to which credential, not "Done.".
  const DONE = { revoke: 'Revoked', suspend: 'Suspended', unsuspend: 'Unsuspended' } as const;
  const action = (change: 'revoke' | 'suspend' | 'unsuspend', verb: string, warning: string) =>
    html`<form class="action" data-api="/console/api/admin/${change}" data-confirm="${verb} credential ${id}? ${warning}" data-done="${DONE[change]} credential ${id} (revocation nonce ${nonce}, schema ${record.schemaId}).">
<input type="hidden" name="revocationNonce" value="${nonce}">
<fieldset><legend>${verb}</legend>
<label for="${change}-reason">Reason (required, kept in the audit log)</label>
<textarea id="${change}-reason" name="reason" required maxlength="1000" rows="2"></textarea>
<button type="submit" class="${change === 'revoke' ? 'danger' : ''}">${verb}…</button>
</fieldset></form>`;
  const actions: Html[] = [];
  if (record.status !== 1) actions.push(action('revoke', 'Revoke', 'A revocation cannot be undone.'));
  if (twoBits && record.status === 0)
    actions.push(action('suspend', 'Suspend', 'It can be unsuspended later.'));
  if (twoBits && record.status === 2)
    actions.push(action('unsuspend', 'Unsuspend', 'It becomes valid again.'));
  // docs/operations.md "Renewal": a valid direct credential not renewed yet.
  if (
    record.channel === 'direct' &&
    record.proofType === 'SD_JWT_VC' &&
    record.status === 0 &&
    !link?.renewedBy
  )
    actions.push(html`<form class="action" data-api="/console/api/admin/renew" data-confirm="Renew credential ${id}? A new credential is issued to the same holder with the claims looked up again." data-done="Renewed credential ${id}: a new credential was issued to the same holder (linked below).">
<input type="hidden" name="credentialId" value="${id}">
<fieldset><legend>Renew</legend>
<label for="renew-reason">Reason (required, kept in the audit log)</label>
<textarea id="renew-reason" name="reason" required maxlength="1000" rows="2"></textarea>
<button type="submit">Renew…</button></fieldset></form>`);
  if (record.uploadState === 'failed')
    actions.push(html`<form class="action" data-api="/console/api/admin/uploads/retry" data-confirm="Queue the upload of credential ${id} again?" data-done="Queued the upload of credential ${id} again.">
<input type="hidden" name="credentialId" value="${id}">
<fieldset><legend>Retry the upload</legend>
<label for="retry-reason">Reason (optional)</label>
<textarea id="retry-reason" name="reason" maxlength="1000" rows="2"></textarea>
<button type="submit">Retry upload…</button></fieldset></form>`);
  page(res, {
    title: `Credential ${id}`,
    current: 'credential',
    pages: p.pages,
    body: html`<section aria-labelledby="h-facts"><h2 id="h-facts">Facts</h2><dl class="facts">
<dt>Status</dt><dd><strong class="status ${derived}">${derived}</strong> (status list value: ${STATUS_NAMES[record.status]})</dd>
<dt>Schema</dt><dd>${record.schemaId}</dd>
<dt>Proof type</dt><dd>${record.proofType}</dd>
<dt>Channel</dt><dd>${record.channel}</dd>
<dt>Holder DID</dt><dd class="did">${record.holderDid}</dd>
<dt>Created</dt><dd>${when(record.createdAt)}</dd>
<dt>Expires</dt><dd>${when(record.expiresAt)}</dd>
<dt>Revoked</dt><dd>${when(record.revokedAt)}</dd>
<dt>Suspended</dt><dd>${when(record.suspendedAt)}</dd>
<dt>Revocation nonce</dt><dd><code>${nonce}</code> (<a href="/revocation-status/${nonce}">public revocation status</a>)</dd>
<dt>Status list</dt><dd>${uri ? html`<a href="${uri}">${uri}</a>, index <code>${record.statusSlot!.index}</code>` : 'none (Iden3 revocation tree)'}</dd>
<dt>Signing key</dt><dd><code>${record.kid}</code></dd>
<dt>Renews</dt><dd>${credentialLink(link?.renewedFrom)}</dd>
<dt>Renewed by</dt><dd>${credentialLink(link?.renewedBy)}</dd>
${
  // docs/operations.md "Bulk status changes": a batch-issue run's credentials change together with `status bulk --batch`.
  batchId
    ? html`<dt>Batch</dt><dd><code>${batchId}</code> (the whole run: <code>npm run admin -- status bulk revoke --batch ${batchId} --reason …</code>)</dd>`
    : ''
}
<dt>Upload</dt><dd>${record.uploadState}, ${record.uploadAttempts} attempt(s)${record.uploadedAt ? html`, stored ${when(record.uploadedAt)}` : ''}${record.nextAttemptAt && record.uploadState === 'pending' ? html`, next attempt ${when(record.nextAttemptAt)}` : ''}</dd>
<dt>Last upload error</dt><dd>${record.lastError ?? '—'}</dd>
</dl></section>
<section aria-labelledby="h-actions"><h2 id="h-actions">Actions</h2>${actions.length === 0 ? html`<p>No action applies to this credential.</p>` : actions}</section>
<section aria-labelledby="h-webhooks"><h2 id="h-webhooks">Webhook deliveries</h2>${
      deliveries.length === 0
        ? html`<p>No webhook delivery names this credential.</p>`
        : html`<table><thead><tr><th scope="col">Event</th><th scope="col">Endpoint</th><th scope="col">State</th><th scope="col">Attempts</th><th scope="col">Last answer</th><th scope="col">Delivered</th></tr></thead><tbody>${deliveries.map(
            (d) =>
              html`<tr><td>${d.type}</td><td><code>${d.endpointId}</code></td><td>${d.state}</td><td>${d.attempts}</td><td>${d.lastStatus ?? ''} ${d.lastError ?? ''}</td><td>${when(d.deliveredAt)}</td></tr>`,
          )}</tbody></table>`
    }</section>
<section aria-labelledby="h-audit"><h2 id="h-audit">Audit trail</h2>${auditTable(trail, 'Audit entries of this credential, newest first')}</section>`,
  });
}
