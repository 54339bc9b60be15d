import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { generateHolderKeyPair } from '../../src/envelope/index.js';
import { routeTable } from '../../src/http/routes/index.js';
import type { Route } from '../../src/http/routes/route.js';
import { adaMembership } from '../helpers/direct-issue.js';
import { TEST_STORE } from '../helpers/issuer.js';
import { receiveWithOpenid4vci } from '../helpers/oid4vci-wallet.js';
import { startTenants, TEST_OPERATOR_KEY, type TestTenant, type TestTenants } from '../helpers/tenants.js';
import { type WebhookReceiver, webhookReceiver } from '../helpers/webhook-receiver.js';

const METRICS_TOKEN = 'test-metrics-token-0123456789abcdef01234';
const PRE_AUTHORIZED_CODE = 'urn:ietf:params:oauth:grant-type:pre-authorized_code';

/** One request of a walk: what was sent (its text, to tell an echo from a leak) and the answer. */
interface Walked {
  route: string;
  sent: string;
  status: number;
  body: string;
}

/** The row's path with its parameters named from `params` (an unnamed one gets a value nobody has). */
const pathOf = (route: Route, params: Record<string, string>) =>
  route.path.replace(/:(\w+)/g, (_m, name: string) =>
    // B has no console session: an id of its shape that nobody has.
    route.path.startsWith('/admin/console/')
      ? '0'.repeat(64)
      : encodeURIComponent(params[name] ?? 'none-such'),
  );

const label = (route: Route) => `${route.method.toUpperCase()} ${route.path}`;

/**
 * Answers that change by themselves between two reads (times, counters of the reads themselves,
 * signatures made per request) are left out of a snapshot; everything else is compared exactly.
 */
const VOLATILE = new Set(['/healthz', '/readyz', '/metrics', '/oid4vci/nonce']);

function normalise(body: string): unknown {
  try {
    return JSON.parse(body, (key, value) =>
      ['iat', 'exp', 'now', 'generatedAt', 'checkedAt', 'serverTime'].includes(key) ? undefined : value,
    );
  } catch {
    return body;
  }
}

// docs/several-issuers.md "Where the data lives" and docs/security.md: every route of the route
// table, called on tenant A's host with A's keys and aimed at tenant B's ids, reads, lists,
// counts, revokes and publishes nothing of B; B's keys and the operator's open nothing of A.
describe(`route-table isolation between tenants (${TEST_STORE})`, () => {
  let d: TestTenants;
  let a: TestTenant;
  let b: TestTenant;
  let receiver: WebhookReceiver;
  const holder = generateHolderKeyPair('x25519');
  /** B's ids and values that must never appear in an answer to A unless A's request sent them. */
  const markers: Record<string, string> = {};
  /** Path parameters by name, all B's. */
  const params: Record<string, string> = {};

  const tenantFetch =
    (t: TestTenant): typeof fetch =>
    (input, init) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      const headers = new Headers(init?.headers);
      headers.set('x-forwarded-host', t.host);
      return fetch(`${d.url}${url.pathname}${url.search}`, { ...init, headers });
    };

  beforeAll(async () => {
    d = await startTenants(2, {
      env: {
        OID4VCI: 'on',
        METRICS_TOKEN,
        STATUS_LIST_BITS: '2',
        RATE_LIMIT_HOLDER_PER_MIN: '0',
        RATE_LIMIT_ADMIN_PER_MIN: '0',
        RATE_LIMIT_PUBLIC_PER_MIN: '0',
      },
    });
    [a, b] = d.tenants as [TestTenant, TestTenant];
    receiver = await webhookReceiver('ok');
    await seed(b);
    // A has its own issuance, so its lists and counts are live ones.
    await ok(
      d.admin(a, '/admin/issue-vc', {
        userId: 'ann@a.example',
        schemaId: 'membership-v1',
        ...adaMembership(),
      }),
      201,
    );
  }, 120_000);
  afterAll(async () => {
    await d?.close();
    await receiver?.close();
  });

  async function ok(res: Promise<Response>, status: number): Promise<any> {
    const answer = await res;
    const text = await answer.text();
    expect(answer.status, text).toBe(status);
    return text === '' ? undefined : JSON.parse(text);
  }

  /** B's data: claims of a user only B has, hosted, direct and OpenID4VCI issuances, status changes, a webhook with deliveries, a job, offers, audit rows. */
  async function seed(t: TestTenant) {
    const hook = await ok(
      d.admin(t, '/admin/webhooks', { url: receiver.url, events: ['*'], description: 'b-hook' }),
      201,
    );
    receiver.setSecret(hook.secret);
    await ok(
      d.admin(t, '/admin/claims', {
        records: [
          {
            userId: 'bee-only-user',
            schemaId: 'membership-v1',
            claims: { ...adaMembership().credentialSubject, givenName: 'Beatrix' },
          },
        ],
        reason: 'b seed',
      }),
      200,
    );
    const hostedDid = 'did:example:holder-only-b';
    await ok(
      d.holder(t, '/issue-vc', {
        holderDID: hostedDid,
        pubKey: holder.publicKeyHex,
        userId: 'bee-only-user',
        schemaId: 'membership-v1',
      }),
      201,
    );
    const direct = await Promise.all(
      ['bee.one@b.example', 'bee.two@b.example', 'bee.three@b.example'].map((email) =>
        ok(
          d.admin(t, '/admin/issue-vc', {
            userId: email,
            schemaId: 'membership-v1',
            batchId: 'batch-only-b',
            ...adaMembership(),
          }),
          201,
        ),
      ),
    );
    const [kept, revoked, suspended] = direct as Array<{ credentialId: string; revocationNonce: string }> as [
      { credentialId: string; revocationNonce: string },
      { credentialId: string; revocationNonce: string },
      { credentialId: string; revocationNonce: string },
    ];
    await ok(
      d.admin(t, '/admin/revoke', { revocationNonce: revoked.revocationNonce, reason: 'b seed' }),
      200,
    );
    const job = await ok(
      d.admin(t, '/admin/status-changes', {
        change: 'suspend',
        selector: { credentialIds: [suspended.credentialId] },
        reason: 'b seed',
      }),
      202,
    );
    const offer = await ok(
      d.admin(t, '/admin/credential-offers', { schemaId: 'membership-v1', userId: 'bee-only-user' }),
      201,
    );
    const redeemed = await ok(
      d.admin(t, '/admin/credential-offers', { schemaId: 'membership-v1', userId: 'bee-only-user' }),
      201,
    );
    const { credential } = await receiveWithOpenid4vci(redeemed.offerUri, { fetch: tenantFetch(t) });
    const tokened = await ok(
      d.admin(t, '/admin/credential-offers', { schemaId: 'membership-v1', userId: 'bee-only-user' }),
      201,
    );
    const token = await ok(
      d.fetch(t.host, '/oid4vci/token', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: PRE_AUTHORIZED_CODE,
          'pre-authorized_code': tokened.credentialOffer.grants[PRE_AUTHORIZED_CODE]['pre-authorized_code'],
        }).toString(),
      }),
      200,
    );
    // B's state is compared once its webhook deliveries are all made: the events fanned out to
    // the endpoint (more than three) and none of them still pending.
    await vi.waitFor(
      async () => {
        const all = await ok(d.admin(t, `/admin/webhooks/${hook.id}/deliveries`), 200);
        expect(all.deliveries.length).toBeGreaterThan(3);
        expect(
          (await ok(d.admin(t, `/admin/webhooks/${hook.id}/deliveries?status=pending`), 200)).deliveries,
        ).toEqual([]);
      },
      { timeout: 30_000, interval: 50 },
    );
    const deliveries = await ok(d.admin(t, `/admin/webhooks/${hook.id}/deliveries`), 200);
    const kid = d.running.deployment.byId(t.id)!.ctx!.keys.current().signing.kid;
    Object.assign(markers, {
      host: t.host,
      partnerId: t.partnerId,
      kid,
      hostedDid,
      user: 'bee-only-user',
      name: 'Beatrix',
      email: 'bee.one@b.example',
      batch: 'batch-only-b',
      keptId: kept.credentialId,
      keptNonce: kept.revocationNonce,
      revokedNonce: revoked.revocationNonce,
      hook: hook.id,
      hookUrl: receiver.url,
      job: job.jobId,
      offer: offer.offerId,
      code: offer.credentialOffer.grants[PRE_AUTHORIZED_CODE]['pre-authorized_code'],
      credential: credential.split('.')[1]!,
      accessToken: token.access_token,
    });
    Object.assign(params, {
      nonce: kept.revocationNonce,
      jobId: job.jobId,
      id: hook.id,
      deliveryId: deliveries.deliveries[0].id,
      offerId: offer.offerId,
      credentialId: kept.credentialId,
      partition: '0',
    });
  }

  /** A body for the row from B's ids, shaped so that it reaches the handler past validation. */
  function bodyFor(route: Route): unknown {
    const shape = Object.keys(
      (route.doc.body as { shape?: Record<string, unknown> } | undefined)?.shape ?? {},
    );
    const values: Record<string, unknown> = {
      holderDID: markers.hostedDid,
      pubKey: holder.publicKeyHex,
      userId: markers.user,
      schemaId: 'membership-v1',
      revocationNonce: markers.keptNonce,
      reason: 'isolation walk',
      change: 'revoke',
      selector: { credentialIds: [markers.keptId], email: markers.email, batchId: markers.batch },
      kid: markers.kid,
      credentialId: markers.keptId,
      purpose: 'credential-signing',
      rows: [{ userId: markers.email, schemaId: 'membership-v1' }],
      // A's own new rows name nothing of B: a later list of A's must show no B id.
      url: 'http://127.0.0.1:9/a-hook',
      events: ['*'],
      records: [{ userId: 'a-user', schemaId: 'membership-v1', claims: adaMembership().credentialSubject }],
      claims: adaMembership().credentialSubject,
    };
    const special: Record<string, unknown> = {
      '/admin/revoke': { revocationNonce: markers.keptNonce, reason: 'isolation walk' },
      '/admin/suspend': { revocationNonce: markers.keptNonce, reason: 'isolation walk' },
      '/admin/unsuspend': { revocationNonce: markers.keptNonce, reason: 'isolation walk' },
      // B's user's claims, asked for by A's direct issuance.
      '/admin/issue-vc': {
        userId: 'ann.other@a.example',
        schemaId: 'membership-v1',
        claimsUserId: markers.user,
        vct: adaMembership().vct,
        expiration: adaMembership().expiration,
      },
      '/admin/issue-vc/validate': {
        rows: [
          {
            userId: 'ann.other@a.example',
            schemaId: 'membership-v1',
            claimsUserId: markers.user,
            vct: adaMembership().vct,
            expiration: adaMembership().expiration,
          },
        ],
      },
      '/admin/uploads/retry': { credentialId: markers.keptId },
    };
    if (route.path in special) return special[route.path];
    return Object.fromEntries(shape.filter((k) => k in values).map((k) => [k, values[k]]));
  }

  /** What `t`'s keys get from every row of `table` on `host`, reads first, then changes. */
  async function walk(host: string, table: Route[], keys: Record<string, string>): Promise<Walked[]> {
    const ordered = [...table.filter((r) => r.method === 'get'), ...table.filter((r) => r.method !== 'get')];
    const walked: Walked[] = [];
    for (const route of ordered) {
      const path = pathOf(route, params);
      const headers: Record<string, string> = { ...keys };
      let body: string | undefined;
      if (route.path === '/oid4vci/token') {
        headers['content-type'] = 'application/x-www-form-urlencoded';
        body = new URLSearchParams({
          grant_type: PRE_AUTHORIZED_CODE,
          'pre-authorized_code': markers.code!,
        }).toString();
      } else if (route.method !== 'get') {
        headers['content-type'] = 'application/json';
        body = JSON.stringify(bodyFor(route));
      }
      if (route.auth === 'metrics-token') headers.authorization = `Bearer ${METRICS_TOKEN}`;
      // B's access token at A's wallet routes.
      else if (route.path.startsWith('/oid4vci/')) headers.authorization = `Bearer ${markers.accessToken}`;
      const res = await d.fetch(host, path, {
        method: route.method.toUpperCase(),
        headers,
        ...(body ? { body } : {}),
      });
      walked.push({
        route: label(route),
        sent: `${path} ${body ?? ''}`,
        status: res.status,
        body: await res.text(),
      });
    }
    expect(walked.length).toBe(table.length);
    return walked;
  }

  /** Everything B's own keys read of B, and what B's hosting service holds. */
  async function snapshotOf(t: TestTenant, table: Route[]) {
    const reads: Record<string, unknown> = {};
    for (const route of table.filter((r) => r.method === 'get' && !VOLATILE.has(r.path))) {
      const res = await d.fetch(t.host, pathOf(route, params), {
        headers: { 'x-admin-api-key': t.adminKey, 'x-api-key': t.apiKey },
      });
      reads[label(route)] = { status: res.status, body: normalise(await res.text()) };
    }
    const operator = await (await d.operator('GET', `/operator/tenants/${t.id}`)).json();
    return {
      reads,
      operator,
      uploaded: [...t.emulator.emulator.state.envelopes.keys()].sort(),
      serviceRequests: t.emulator.emulator.state.requests.length,
    };
  }

  it("A's keys on A's host, walking every row of the route table at B's ids, touch nothing of B", async () => {
    const tableA = routeTable(d.running.deployment.byId(a.id)!.ctx!).filter((r) => !r.mountedByPath);
    const tableB = routeTable(d.running.deployment.byId(b.id)!.ctx!).filter((r) => !r.mountedByPath);
    expect(tableA.map(label)).toEqual(tableB.map(label));
    expect(tableA.length).toBeGreaterThan(40);
    const before = await snapshotOf(b, tableB);
    const walked = await walk(a.host, tableA, { 'x-api-key': a.apiKey, 'x-admin-api-key': a.adminKey });

    // A's keys open A's routes (a walk refused at the door would prove nothing) ...
    const keyed = new Set(tableA.filter((r) => r.auth !== 'none').map(label));
    for (const w of walked.filter((w) => keyed.has(w.route)))
      expect([401, 403], `${w.route} ${w.body}`).not.toContain(w.status);
    // ... and no answer names anything of B that A's request did not itself send.
    for (const w of walked)
      for (const [what, value] of Object.entries(markers))
        if (!w.sent.includes(value))
          expect(w.body.includes(value), `${w.route} shows B's ${what}: ${w.body}`).toBe(false);
    // Lookups by B's ids find nothing in A.
    const walkedAt = (route: string) => walked.find((w) => w.route === route)!;
    const answered = (route: string) => `${walkedAt(route).status} ${walkedAt(route).body}`;
    expect(answered('POST /admin/revoke')).toMatch(/^404 /);
    expect(answered('POST /admin/renew')).toMatch(/^404 /);
    expect(answered('DELETE /admin/webhooks/:id')).toMatch(/^404 /);
    expect(answered('GET /admin/status-changes/:jobId')).toMatch(/^404 /);
    expect(answered('GET /oid4vci/offers/:offerId')).toMatch(/^404 /);
    expect(answered('POST /oid4vci/token')).toMatch(/^400 /);
    expect(answered('POST /oid4vci/credential')).toMatch(/^401 /);
    expect(answered('POST /admin/issue-vc')).toMatch(/^404 /);
    expect(answered('POST /admin/uploads/retry')).toBe('200 {"retried":[]}');
    expect(answered('POST /admin/keys/compromised')).toMatch(/^404 /);
    // Counted: A's history and metrics count A's one issuance, none of B's.
    const read = (route: string) => walkedAt(route).body;
    expect(JSON.parse(read('GET /admin/issuance-history')).pagination.total).toBe(1);
    const issuances = [...read('GET /metrics').matchAll(/^issuer_issuances_total\{[^}]*\} (\d+)$/gm)];
    expect(issuances.reduce((n, m) => n + Number(m[1]), 0)).toBe(1);

    const after = await snapshotOf(b, tableB);
    expect(after).toEqual(before);
  });

  it("B's admin and holder keys on A's host, and the operator key on any tenant route, are refused", async () => {
    const table = routeTable(d.running.deployment.byId(a.id)!.ctx!).filter(
      (r) => r.auth === 'api-key' || r.auth === 'admin-api-key',
    );
    for (const keys of <Array<Record<string, string>>>[
      { 'x-api-key': b.apiKey, 'x-admin-api-key': b.adminKey },
      { 'x-operator-api-key': TEST_OPERATOR_KEY },
      { 'x-api-key': TEST_OPERATOR_KEY, 'x-admin-api-key': TEST_OPERATOR_KEY },
    ]) {
      const walked = await walk(a.host, table, keys);
      for (const w of walked) expect(w.status, `${w.route} ${JSON.stringify(Object.keys(keys))}`).toBe(403);
    }
  });
});
