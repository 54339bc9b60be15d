import type { Request, Response } from 'express';
import type { AppContext } from '../../../context.js';
import { AppError } from '../../../errors.js';
import { certificateStanding } from '../../../keys/certificates.js';
import { AUDIT_ACTIONS } from '../../../model.js';
import type { AuditEntry } from '../../../store/store.js';
import { parseInput } from '../../middleware/validate.js';
import { AuditQuerySchema } from '../admin/audit.js';
import { keyInventory } from '../admin/keys.js';
import { auditCursor, readAuditCursor } from '../admin/paging.js';
import { hourlyChart } from './chart.js';
import { type Html, html, queryString, when } from './html.js';
import { type PageId, page, resultsOrProblem } from './layout.js';

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
export function filterOf(req: Request, names: readonly string[]): Record<string, string> {
  const q: Record<string, string> = {};
  for (const name of names) {
    const v = req.query[name];
    if (typeof v === 'string' && v.trim() !== '') q[name] = v.trim();
  }
  return q;
}

const AUDIT_FILTERS = ['actor', 'action', 'from', 'to'] as const;

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

/** An audit trail as a table (the Audit page, a credential's page). */
export function auditTable(entries: AuditEntry[], caption: string): Html {
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
  const { results, status } = await resultsOrProblem(async () => {
    const q = parseInput(AuditQuerySchema, { ...form, limit: String(PAGE_ROWS) }, 'query');
    const cursor = typeof req.query.cursor === 'string' ? req.query.cursor : undefined;
    const after = cursor === undefined ? undefined : readAuditCursor(cursor);
    if (cursor !== undefined && after === undefined)
      throw new AppError('INVALID_PARAMETER', 'cursor: not a cursor of this page', { field: 'cursor' });
    const found = await ctx.store.audit.list({ ...q, after, total: false });
    return html`${auditTable(found.records, 'Audit entries, newest first')}
<p class="pager">${
      found.next === null
        ? 'End of the log.'
        : html`<a rel="next" href="/console/audit${queryString({ ...form, cursor: auditCursor(found.next) })}">Next page</a>`
    }</p>`;
  });
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
    body: html`<p>${backend}. Verifiers find the signing key through <code>SD_JWT_ISSUER=${ctx.identity.mode}</code>.</p>
${purposes.map((purpose) => {
  const rows = all.filter((k) => k.purpose === purpose && (k.active || k.published || k.standby));
  return html`<section aria-labelledby="h-${purpose}"><h2 id="h-${purpose}">${purpose}</h2>
<table><thead><tr><th scope="col">kid</th><th scope="col">State</th><th scope="col">Algorithm</th><th scope="col">Created</th><th scope="col">Retired</th><th scope="col">Published</th>${purpose === 'credential-signing' ? html`<th scope="col">Last credential expires</th><th scope="col">Certificate expires</th>` : ''}</tr></thead><tbody>${rows.map(
    (k) =>
      html`<tr><td><code>${k.kid}</code></td><td>${k.active ? 'active' : k.standby ? 'standby' : 'retired, still published'}</td><td>${k.alg}</td><td>${when(new Date(k.createdAt))}</td><td>${when(k.retiredAt ? new Date(k.retiredAt) : null)}</td><td>${k.published ? 'yes' : 'no'}</td>${
        purpose === 'credential-signing'
          ? html`<td>${when('lastCredentialExpiresAt' in k && typeof k.lastCredentialExpiresAt === 'string' ? new Date(k.lastCredentialExpiresAt) : null)}</td><td>${'certificateExpiresAt' in k && typeof k.certificateExpiresAt === 'string' ? when(new Date(k.certificateExpiresAt)) : ctx.identity.mode === 'x5c' ? 'no chain' : 'not in x5c mode'}</td>`
          : ''
      }</tr>`,
  )}</tbody></table>
<form class="action" data-api="/console/api/admin/keys/rotate" data-confirm="Rotate the ${purpose} key? The active key is retired (still published while credentials it signed are live) and a new one signs from now on." data-done="Rotated the ${purpose} key: a new key signs from now on.">
<input type="hidden" name="purpose" value="${purpose}">
<fieldset><legend>Rotate the ${purpose} key</legend>
<label for="rotate-${purpose}-reason">Reason (required, kept in the audit log)</label>
<textarea id="rotate-${purpose}-reason" name="reason" required maxlength="1000" rows="2"></textarea>
<button type="submit">Rotate…</button></fieldset></form></section>`;
})}${formatCertificates(ctx)}`,
  });
}

const STANDING_CLASS = { valid: 'pass', expiring: 'warn', expired: 'fail' } as const;

/**
 * The certificates a format signs under (ISO mdoc: the IACA root and the document signer of the
 * signing key), with their expiry as `admin doctor` judges it; nothing while no format has any.
 */
function formatCertificates(ctx: ConsolePages['ctx']): Html | string {
  const rows = [...ctx.formats.started.entries()].flatMap(([proofType, started]) =>
    (started.certificates?.() ?? []).map((c) => ({ proofType, ...c, ...certificateStanding(c.notAfter) })),
  );
  if (rows.length === 0) return '';
  const role = (r: string) => (r === 'iaca' ? 'IACA root' : r === 'document-signer' ? 'document signer' : r);
  const left = (r: (typeof rows)[number]) =>
    r.standing === 'expired'
      ? 'expired'
      : r.standing === 'expiring'
        ? `expires in ${r.days} days: have the next one issued`
        : `${r.days} days left`;
  return html`<section aria-labelledby="h-format-certificates"><h2 id="h-format-certificates">Format certificates</h2>
<table><thead><tr><th scope="col">Format</th><th scope="col">Certificate</th><th scope="col">Subject</th><th scope="col">Expires</th><th scope="col">Standing</th></tr></thead><tbody>${rows.map(
    (r) =>
      html`<tr><td>${r.proofType}</td><td>${role(r.role)}</td><td>${r.subject.replaceAll('\n', ', ')}</td><td>${when(r.notAfter)}</td><td class="verdict ${STANDING_CLASS[r.standing]}">${left(r)}</td></tr>`,
  )}</tbody></table></section>`;
}

/** Schemas: the loaded credential types, their claims source, the last reload's refused files; reload. */
export async function schemas(p: ConsolePages, _req: Request, res: Response): Promise<void> {
  const { ctx } = p;
  const loaded = ctx.identity.catalog.schemas.all();
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
  const schemas = ctx.identity.catalog.schemas.all().map((s) => s.schemaId);
  const twoBits = ctx.identity.statusLists.bits === 2;
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
