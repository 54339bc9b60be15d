import type { Request, Response } from 'express';
import type { AppContext } from '../../../context.js';
import { AppError } from '../../../errors.js';
import { AUDIT_ACTIONS, CHANNELS, STATUS_NAMES } from '../../../model.js';
import { shortDid } from '../../../short-did.js';
import { derivedStatus } from '../../../status/derived-status.js';
import type { AuditEntry, HistoryQuery, IssuanceSummary } from '../../../store/store.js';
import { parseInput } from '../../middleware/validate.js';
import { AuditQuerySchema } from '../admin/audit.js';
import { HistoryQuerySchema } from '../admin/history.js';
import { keyInventory } from '../admin/keys.js';
import { auditCursor, historyCursor, readAuditCursor, readHistoryCursor } from '../admin/paging.js';
import { hourlyChart } from './chart.js';
import { neutraliseFormula } from './csv-cell.js';
import { type Html, html, queryString, when } from './html.js';
import { type PageId, page, problem } from './layout.js';

const HOUR_MS = 3_600_000;
/** Rows on one page of the Issuances and Audit pages. */
export const PAGE_ROWS = 50;

/** One line of `admin doctor` (src/cli/doctor/line.ts), as the server that runs it hands it over. */
export interface DoctorItem {
  item: string;
  verdict: 'PASS' | 'WARN' | 'FAIL';
  detail: string;
}

export interface ConsolePages {
  ctx: AppContext;
  /** The pages this console shows (Bulk only where the bulk capability exists). */
  pages: readonly PageId[];
  /** Runs `admin doctor` in this process, when the server was given it. */
  doctor: (() => Promise<DoctorItem[]>) | undefined;
  /** The latest doctor run of this console, kept for 30 s. */
  doctorRun?: { at: number; items: Promise<DoctorItem[]> } | undefined;
}

/** The set fields of a filter form (empty inputs dropped), known names only. */
function filterOf(req: Request, names: readonly string[]): Record<string, string> {
  const q: Record<string, string> = {};
  for (const name of names) {
    const v = req.query[name];
    if (typeof v === 'string' && v.trim() !== '') q[name] = v.trim();
  }
  return q;
}

const HISTORY_FILTERS = [
  'email',
  'holderDid',
  'schemaId',
  'status',
  'channel',
  'createdFrom',
  'createdTo',
] as const;
const AUDIT_FILTERS = ['actor', 'action', 'from', 'to'] as const;

const statusOf = (r: IssuanceSummary, now: Date) => derivedStatus(r, now);
const credentialHref = (id: string) => `/console/credentials/${encodeURIComponent(id)}`;

/** Overview: the last day's issuances, the upload and webhook backlogs, status lists, doctor. */
export async function overview(p: ConsolePages, _req: Request, res: Response): Promise<void> {
  const { ctx } = p;
  const now = new Date();
  const since = new Date(Math.floor(now.getTime() / HOUR_MS) * HOUR_MS - 23 * HOUR_MS);
  const [hourly, pending, failed, partitions, endpoints] = await Promise.all([
    ctx.store.history.issuancesPerHour(since),
    ctx.store.issuances.countPendingUploads(),
    ctx.store.issuances.countFailedUploads(),
    ctx.store.status.listPartitions(),
    ctx.store.webhooks.listEndpoints(),
  ]);
  // At most 100 failed deliveries counted per endpoint: an index range each, never a table count.
  const failing = (
    await Promise.all(
      endpoints.map(async (e) => ({
        endpoint: e,
        failed: (
          await ctx.store.webhooks.listDeliveries({ endpointId: e.id, state: 'failed', limit: 100 })
        ).records.length,
      })),
    )
  ).filter((e) => e.failed > 0);
  page(res, {
    title: 'Overview',
    current: 'overview',
    pages: p.pages,
    body: [
      html`<section aria-labelledby="h-issuances"><h2 id="h-issuances">Issuances per hour, last 24 hours</h2>${hourlyChart(hourly, now)}</section>
<section aria-labelledby="h-uploads"><h2 id="h-uploads">Uploads to the hosting service</h2>
<dl class="figures"><div><dt>Pending</dt><dd><a href="/console/issuances?status=upload_pending">${pending}</a></dd></div>
<div><dt>Failed (given up)</dt><dd><a href="/console/issuances?status=upload_failed">${failed}</a></dd></div></dl></section>
<section aria-labelledby="h-webhooks"><h2 id="h-webhooks">Webhook endpoints failing</h2>${
        endpoints.length === 0
          ? html`<p>No webhook endpoint is registered.</p>`
          : failing.length === 0
            ? html`<p>None of the ${endpoints.length} endpoint(s) has a failed delivery.</p>`
            : html`<table><thead><tr><th scope="col">Endpoint</th><th scope="col">URL</th><th scope="col">Failed deliveries</th></tr></thead><tbody>${failing.map(
                (f) =>
                  html`<tr><td><code>${f.endpoint.id}</code></td><td>${f.endpoint.url}</td><td>${f.failed === 100 ? '100 or more' : f.failed}</td></tr>`,
              )}</tbody></table>`
      }</section>
<section aria-labelledby="h-lists"><h2 id="h-lists">Status list partitions</h2>${
        partitions.length === 0
          ? html`<p>No status list partition yet.</p>`
          : html`<table><thead><tr><th scope="col">Partition</th><th scope="col">URI</th><th scope="col">Allocated</th><th scope="col">Size</th><th scope="col">Fill</th><th scope="col">Published</th></tr></thead><tbody>${partitions.map(
              (l) =>
                html`<tr><td>${l.partition}</td><td><a href="${ctx.status.uri(l.partition)}">${ctx.status.uri(l.partition)}</a></td><td>${l.allocated}</td><td>${l.size}</td><td><meter min="0" max="${l.size}" value="${l.allocated}" aria-label="partition ${l.partition} fill">${((100 * l.allocated) / l.size).toFixed(1)} %</meter> ${((100 * l.allocated) / l.size).toFixed(1)} %</td><td>${when(l.publishedAt)}</td></tr>`,
            )}</tbody></table>`
      }</section>`,
      p.doctor
        ? html`<section aria-labelledby="h-doctor"><h2 id="h-doctor">${ctx.config.production ? 'Doctor' : 'Production readiness'}</h2>${
            // docs/going-live.md: the doctor holds the server to production's rules; a development
            // start fails some of them by design (its generated keys and secrets, the emulator).
            ctx.config.production
              ? ''
              : html`<p>This server runs in development: the doctor checks it against production's rules, so FAIL lines are expected here until you go live (<code>docs/going-live.md</code>).</p>`
          }
<div id="doctor" data-fragment="/console/doctor" aria-live="polite"><p><a href="/console/doctor">Run the doctor checks</a> (they fetch the public documents, so they load after the page).</p></div></section>`
        : '',
    ],
  });
}

/** `admin doctor`'s items with their verdicts, as a fragment the Overview loads after its first paint. */
export async function doctorFragment(p: ConsolePages, _req: Request, res: Response): Promise<void> {
  if (!p.doctor) throw new AppError('NOT_FOUND', 'doctor: not available in this process');
  // One run at a time, kept for 30 s: reloading the Overview does not fetch every document again.
  if (!p.doctorRun || Date.now() - p.doctorRun.at > 30_000) {
    const run = { at: Date.now(), items: p.doctor() };
    p.doctorRun = run;
    run.items.catch(() => {
      if (p.doctorRun === run) p.doctorRun = undefined;
    });
  }
  const { at, items: running } = p.doctorRun;
  const items = await running;
  const caption = p.ctx.config.production
    ? 'admin doctor'
    : 'admin doctor: production readiness, FAIL expected in development';
  const body = html`<table><caption>${caption}, ${when(new Date(at))}</caption>
<thead><tr><th scope="col">Item</th><th scope="col">Verdict</th><th scope="col">Detail</th></tr></thead><tbody>${items.map(
    (i) =>
      html`<tr><td>${i.item}</td><td><span class="verdict ${i.verdict.toLowerCase()}">${i.verdict}</span></td><td>${i.detail}</td></tr>`,
  )}</tbody></table>`;
  res.set('Cache-Control', 'no-store');
  res.type('html').send(body.text);
}

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
  let results: Html;
  let status = 200;
  try {
    const { filter, query } = await historyQuery(ctx, req, PAGE_ROWS);
    form = filter;
    const found = await ctx.store.history.list(query);
    results = html`${
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
  } catch (err) {
    if (!(err instanceof AppError) || err.status >= 500) throw err;
    results = problem(err.message);
    status = 400;
  }
  const schemas = ctx.schemas.all().map((s) => s.schemaId);
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
  const twoBits = ctx.config.statusList.bits === 2;
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
  if (record.channel === 'direct' && record.status === 0 && !link?.renewedBy)
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

function auditTable(entries: AuditEntry[], caption: string): Html {
  if (entries.length === 0) return html`<p>No audit entry.</p>`;
  return html`<table><caption>${caption}</caption><thead><tr><th scope="col">At</th><th scope="col">Actor</th><th scope="col">Action</th><th scope="col">Target</th><th scope="col">Reason</th></tr></thead><tbody>${entries.map(
    (e) =>
      html`<tr><td>${when(e.at)}</td><td>${e.actor}</td><td>${e.action}</td><td class="did">${e.target}</td><td>${e.reason ?? ''}</td></tr>`,
  )}</tbody></table>`;
}

/** Audit: the log filtered by actor, action and date, newest first. */
export async function audit(p: ConsolePages, req: Request, res: Response): Promise<void> {
  const { ctx } = p;
  const form = filterOf(req, AUDIT_FILTERS);
  let results: Html;
  let status = 200;
  try {
    const q = parseInput(AuditQuerySchema, { ...form, limit: String(PAGE_ROWS) }, 'query');
    const cursor = typeof req.query.cursor === 'string' ? req.query.cursor : undefined;
    const after = cursor === undefined ? undefined : readAuditCursor(cursor);
    if (cursor !== undefined && after === undefined)
      throw new AppError('INVALID_PARAMETER', 'cursor: not a cursor of this page', { field: 'cursor' });
    const found = await ctx.store.audit.list({ ...q, after, total: false });
    results = html`${auditTable(found.records, 'Audit entries, newest first')}
<p class="pager">${
      found.next === null
        ? 'End of the log.'
        : html`<a rel="next" href="/console/audit${queryString({ ...form, cursor: auditCursor(found.next) })}">Next page</a>`
    }</p>`;
  } catch (err) {
    if (!(err instanceof AppError) || err.status >= 500) throw err;
    results = problem(err.message);
    status = 400;
  }
  page(res, {
    title: 'Audit log',
    current: 'audit',
    pages: p.pages,
    status,
    body: html`<form method="get" action="/console/audit" class="filters" role="search" aria-label="Filter the audit log">
<div><label for="a-actor">Actor</label><input id="a-actor" name="actor" value="${form.actor ?? ''}"></div>
<div><label for="a-action">Action</label><select id="a-action" name="action"><option value="">Any</option>${AUDIT_ACTIONS.map(
      (a) => html`<option value="${a}"${form.action === a ? html` selected` : ''}>${a}</option>`,
    )}</select></div>
<div><label for="a-from">From (UTC)</label><input id="a-from" name="from" type="date" value="${form.from ?? ''}"></div>
<div><label for="a-to">Before (UTC)</label><input id="a-to" name="to" type="date" value="${form.to ?? ''}"></div>
<div class="go"><button type="submit">Filter</button></div>
</form>
${results}`,
  });
}

/** Keys: active and retired-but-published keys per purpose, where they live, certificate expiry; rotate. */
export async function keys(p: ConsolePages, _req: Request, res: Response): Promise<void> {
  const { ctx } = p;
  const all = await keyInventory(ctx);
  const records = ctx.store.keys
    ? `the database, sealed under KEY_ENCRYPTION_KEY (${ctx.store.kind})`
    : `key files in KEYS_DIR (${ctx.config.keysDir})`;
  const kb = ctx.config.keyBackend;
  const backend =
    kb.kind === 'pkcs11'
      ? `KEY_BACKEND=pkcs11: the private keys stay on the token (${'label' in kb.token ? `label ${kb.token.label}` : `slot ${kb.token.slot}`}, module ${kb.module}); their records are kept in ${records}`
      : `KEY_BACKEND=software: private keys are kept in ${records}`;
  const purposes = ['credential-signing', 'partner-jwt'] as const;
  page(res, {
    title: 'Keys',
    current: 'keys',
    pages: p.pages,
    body: html`<p>${backend}. Verifiers find the signing key through <code>SD_JWT_ISSUER=${ctx.config.sdJwtIssuer}</code>.</p>
${purposes.map((purpose) => {
  const rows = all.filter((k) => k.purpose === purpose && (k.active || k.published || k.standby));
  return html`<section aria-labelledby="h-${purpose}"><h2 id="h-${purpose}">${purpose}</h2>
<table><thead><tr><th scope="col">kid</th><th scope="col">State</th><th scope="col">Algorithm</th><th scope="col">Created</th><th scope="col">Retired</th><th scope="col">Published</th>${purpose === 'credential-signing' ? html`<th scope="col">Last credential expires</th><th scope="col">Certificate expires</th>` : ''}</tr></thead><tbody>${rows.map(
    (k) =>
      html`<tr><td><code>${k.kid}</code></td><td>${k.active ? 'active' : k.standby ? 'standby' : 'retired, still published'}</td><td>${k.alg}</td><td>${when(new Date(k.createdAt))}</td><td>${when(k.retiredAt ? new Date(k.retiredAt) : null)}</td><td>${k.published ? 'yes' : 'no'}</td>${
        purpose === 'credential-signing'
          ? html`<td>${when('lastCredentialExpiresAt' in k && typeof k.lastCredentialExpiresAt === 'string' ? new Date(k.lastCredentialExpiresAt) : null)}</td><td>${'certificateExpiresAt' in k && typeof k.certificateExpiresAt === 'string' ? when(new Date(k.certificateExpiresAt)) : ctx.config.sdJwtIssuer === 'x5c' ? 'no chain' : 'not in x5c mode'}</td>`
          : ''
      }</tr>`,
  )}</tbody></table>
<form class="action" data-api="/console/api/admin/keys/rotate" data-confirm="Rotate the ${purpose} key? The active key is retired (still published while credentials it signed are live) and a new one signs from now on." data-done="Rotated the ${purpose} key: a new key signs from now on.">
<input type="hidden" name="purpose" value="${purpose}">
<fieldset><legend>Rotate the ${purpose} key</legend>
<label for="rotate-${purpose}-reason">Reason (required, kept in the audit log)</label>
<textarea id="rotate-${purpose}-reason" name="reason" required maxlength="1000" rows="2"></textarea>
<button type="submit">Rotate…</button></fieldset></form></section>`;
})}`,
  });
}

/** Schemas: the loaded credential types, their claims source, the last reload's refused files; reload. */
export async function schemas(p: ConsolePages, _req: Request, res: Response): Promise<void> {
  const { ctx } = p;
  const loaded = ctx.schemas.all();
  const last = ctx.schemaCatalog.lastReload();
  page(res, {
    title: 'Schemas',
    current: 'schemas',
    pages: p.pages,
    body: html`<p>Read from <code>${ctx.config.schemasDir}</code>.</p>
<table><caption>Credential types served now</caption><thead><tr><th scope="col">Schema</th><th scope="col">Title</th><th scope="col">Proof types</th><th scope="col">Claims source</th><th scope="col">vct</th><th scope="col">File</th></tr></thead><tbody>${loaded.map(
      (s) =>
        html`<tr><td>${s.schemaId}</td><td>${s.title}</td><td>${s.proofTypes.join(', ')}</td><td>${s.claims.provider}${'url' in s.claims ? html` <code>${String(s.claims.url)}</code>` : ''}${'path' in s.claims ? html` <code>${String(s.claims.path)}</code>` : ''}</td><td class="did">${s.sdJwt.vct}</td><td><code>${s.file}</code></td></tr>`,
    )}</tbody></table>
<section aria-labelledby="h-refused"><h2 id="h-refused">Files refused by the last reload</h2>${
      !last
        ? html`<p>No reload since this process started (a bad file stops the start itself).</p>`
        : last.problems.length === 0
          ? html`<p>The reload of ${when(last.at)} loaded every file.</p>`
          : html`<p>The reload of ${when(last.at)} was refused; the set above is still served.</p><table><thead><tr><th scope="col">File</th><th scope="col">Reason</th></tr></thead><tbody>${last.problems.map(
              (x) => html`<tr><td><code>${x.file}</code></td><td>${x.message}</td></tr>`,
            )}</tbody></table>`
    }</section>
<form class="action" data-api="/console/api/admin/schemas/reload" data-confirm="Read SCHEMAS_DIR again? A set with a bad file is refused and the current one kept." data-done="Reloaded the schema files from SCHEMAS_DIR.">
<fieldset><legend>Reload the schema files</legend>
<label for="reload-reason">Reason (optional, kept in the audit log)</label>
<textarea id="reload-reason" name="reason" maxlength="1000" rows="2"></textarea>
<button type="submit">Reload…</button></fieldset></form>`,
  });
}

/**
 * Bulk: a status change over every credential a selector matches, through `POST
 * /admin/status-changes` (shown only where that route exists): the count first (a dry run), then
 * the change once the operator has typed that count, then the job's progress.
 */
export async function bulk(p: ConsolePages, _req: Request, res: Response): Promise<void> {
  const { ctx } = p;
  const schemas = ctx.schemas.all().map((s) => s.schemaId);
  const twoBits = ctx.config.statusList.bits === 2;
  page(res, {
    title: 'Bulk status change',
    current: 'bulk',
    pages: p.pages,
    body: html`<p>Select credentials by any of these fields (every field given must match), see how many match, then confirm by typing that number. The job runs on the server and survives a restart; its progress shows below.</p>
<form id="bulk" class="action bulk" data-api="/console/api/admin/status-changes" data-bulk>
<fieldset><legend>Which credentials</legend>
<div class="filters">
<div><label for="b-schema">Schema</label><select id="b-schema" name="selector.schemaId"><option value="">Any</option>${schemas.map((s) => html`<option value="${s}">${s}</option>`)}</select></div>
<div><label for="b-email">Recipient email</label><input id="b-email" name="selector.email" type="email" autocomplete="off"></div>
<div><label for="b-holder">Holder DID</label><input id="b-holder" name="selector.holderDid"></div>
<div><label for="b-batch">Batch id</label><input id="b-batch" name="selector.batchId"></div>
<div><label for="b-kid">Signing key (kid)</label><input id="b-kid" name="selector.kid"></div>
<div><label for="b-after">Issued from (UTC)</label><input id="b-after" name="selector.issuedAfter" type="date" data-date></div>
<div><label for="b-before">Issued before (UTC)</label><input id="b-before" name="selector.issuedBefore" type="date" data-date></div>
</div></fieldset>
<fieldset><legend>What to do</legend>
<label for="b-change">Change</label>
<select id="b-change" name="change"><option value="revoke">revoke</option>${twoBits ? html`<option value="suspend">suspend</option><option value="unsuspend">unsuspend</option>` : ''}</select>
<label for="b-reason">Reason (required, kept in the audit log)</label>
<textarea id="b-reason" name="reason" required maxlength="1000" rows="2"></textarea>
<button type="button" id="b-count">Count the matching credentials</button>
</fieldset>
<div id="b-confirm" hidden>
<p id="b-matched" role="status"></p>
<label for="b-typed">Type the number of credentials to change, to confirm</label>
<input id="b-typed" inputmode="numeric" autocomplete="off">
<button type="submit" class="danger" id="b-start" disabled>Start the change</button>
</div>
</form>
<section aria-labelledby="h-job" id="b-job" hidden><h2 id="h-job">Progress</h2>
<progress id="b-progress" max="1" value="0" aria-labelledby="h-job"></progress>
<p id="b-state" role="status" aria-live="polite"></p></section>`,
  });
}
