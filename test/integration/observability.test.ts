import { readFileSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateHolderKeyPair } from '../../src/envelope/index.js';
import { openApiDocument, routeTable } from '../../src/http/routes/index.js';
import { openApiPath } from '../../src/http/routes/ops/openapi.js';
import { emailHash } from '../../src/observability/logger.js';
import { startIssuer, TEST_ADMIN_API_KEY, TEST_API_KEY, type TestIssuer } from '../helpers/issuer.js';
import { capturingLogger } from '../helpers/log-capture.js';

const VCT = 'https://issuer.example/vct/membership-direct';
const EMAIL = 'obs.holder.7f3a@example.org';
const SUBJECT = {
  givenName: 'Zofia',
  familyName: 'Quarmby',
  memberSince: '2019-03-03',
  tier: 'platinum',
  memberNumber: 918273,
};
const inOneYear = () => new Date(Date.now() + 365 * 86400_000).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** Hosted issue-vc, direct admin issue-vc, revoke, and the status list read that shows it. */
async function wholeFlow(issuer: TestIssuer, requestId?: string) {
  const holder = generateHolderKeyPair('x25519');
  const ids: Record<string, string> = requestId ? { 'x-request-id': requestId } : {};
  const hosted = await issuer.post(
    '/issue-vc',
    {
      holderDID: 'did:example:obs-holder',
      pubKey: holder.publicKeyHex,
      userId: 'demo-user-1',
      schemaId: 'membership-v1',
    },
    ids,
  );
  expect(hosted.status).toBe(201);
  const direct = await issuer.admin('/admin/issue-vc', {
    userId: EMAIL,
    schemaId: 'membership-v1',
    vct: VCT,
    expiration: inOneYear(),
    credentialSubject: SUBJECT,
  });
  expect(direct.status).toBe(201);
  const answer = (await direct.json()) as { revocationNonce: string; status: { uri: string } };
  const revoked = await issuer.admin('/admin/revoke', { revocationNonce: answer.revocationNonce });
  expect(revoked.status).toBe(200);
  const list = await fetch(answer.status.uri);
  expect(list.status).toBe(200);
  const token = await list.text();
  return { hosted, direct: answer, token, holder };
}

describe('observability: request ids, logs, metrics, health', () => {
  let issuer: TestIssuer;
  const capture = capturingLogger();

  beforeAll(async () => {
    issuer = await startIssuer({ context: { log: capture.log } });
  });
  afterAll(async () => {
    await issuer.close();
  });

  it('keeps a valid x-request-id, echoes it, logs it and passes it to the hosting service', async () => {
    const { hosted } = await wholeFlow(issuer, 'trace-abc-123');
    expect(hosted.headers.get('x-request-id')).toBe('trace-abc-123');
    const upstream = issuer.emulator!.state.requests.filter((r) => r.requestId === 'trace-abc-123');
    expect(upstream.map((r) => r.route)).toContain('dstorage');
    const line = capture.records().find((r) => r.reqId === 'trace-abc-123' && r.msg === 'request completed');
    expect(line).toMatchObject({
      method: 'POST',
      route: '/issue-vc',
      status: 201,
      responseTime: expect.any(Number),
    });
    // The request line holds these fields and nothing else (no headers, body or query string).
    expect(Object.keys(line!).sort()).toEqual(
      ['level', 'method', 'msg', 'reqId', 'responseTime', 'route', 'service', 'status', 'time'].sort(),
    );
    expect(line!.level).toBe('info');
  });

  it('replaces a missing or invalid x-request-id with a generated one', async () => {
    for (const sent of [undefined, 'x'.repeat(129), 'has space']) {
      const res = await fetch(
        `${issuer.url}/healthz`,
        sent === undefined ? {} : { headers: { 'x-request-id': sent } },
      );
      const id = res.headers.get('x-request-id');
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
      expect(id).not.toBe(sent);
    }
  });

  it('logs status changes with nonce, change and actor, and auth failures without the key', async () => {
    const bad = await fetch(`${issuer.url}/admin/keys`, { headers: { 'x-admin-api-key': 'wrong-key-4242' } });
    expect(bad.status).toBe(403);
    const records = capture.records();
    expect(records.find((r) => r.event === 'status_change')).toMatchObject({
      change: 'revoke',
      actor: 'admin',
      nonce: expect.any(Number),
    });
    expect(records.find((r) => r.event === 'auth_failed')).toMatchObject({ route: '/admin/keys' });
    expect(capture.lines.join('\n')).not.toContain('wrong-key-4242');
  });

  it('a refused request: the auth failure and the request line both carry its id', async () => {
    const res = await fetch(`${issuer.url}/issue-vc`, {
      method: 'POST',
      headers: {
        'x-api-key': 'wrong-key-5151',
        'x-request-id': 'trace-refused-1',
        'content-type': 'application/json',
      },
      body: '{}',
    });
    expect(res.status).toBe(403);
    const mine = capture.records().filter((r) => r.reqId === 'trace-refused-1');
    expect(mine.find((r) => r.event === 'auth_failed')).toMatchObject({ level: 'warn', route: '/issue-vc' });
    expect(mine.find((r) => r.msg === 'request completed')).toMatchObject({
      status: 403,
      route: '/issue-vc',
    });
    expect(capture.lines.join('\n')).not.toContain('wrong-key-5151');
  });

  it('/healthz and /readyz answer without a key; readyz reports the outbox backlog', async () => {
    const health = await fetch(`${issuer.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${issuer.url}/readyz`);
    expect(ready.status).toBe(200);
    const body = (await ready.json()) as { status: string; checks: Record<string, any> };
    expect(body.status).toBe('ready');
    for (const check of ['database', 'keys', 'schemas', 'recovery']) expect(body.checks[check].ok).toBe(true);
    expect(body.checks.outbox).toEqual({ pending: 0, oldestAgeSeconds: 0, failed: 0 });
  });

  it('/metrics exposes every issue-10 metric with route patterns, never raw paths', async () => {
    await fetch(`${issuer.url}/no/such/route`);
    await fetch(`${issuer.url}/revocation-status/12345`);
    const res = await fetch(`${issuer.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await res.text();
    for (const name of [
      'issuer_http_requests_total',
      'issuer_http_request_duration_seconds',
      'issuer_issuances_total',
      'issuer_uploads_total',
      'issuer_upload_outbox_pending',
      'issuer_upload_outbox_oldest_age_seconds',
      'issuer_status_changes_total',
      'issuer_status_list_build_seconds',
      'issuer_revocation_visible_seconds',
      'issuer_claims_lookup_seconds',
      'issuer_rate_limited_total',
      'process_cpu_user_seconds_total',
      'nodejs_eventloop_lag_seconds',
    ])
      expect(text).toMatch(new RegExp(`^# TYPE ${name} `, 'm'));
    expect(text).toContain(
      'issuer_http_requests_total{route="/revocation-status/:nonce",method="GET",status="404"} 1',
    );
    expect(text).toContain('issuer_http_requests_total{route="unmatched",method="GET",status="404"} 1');
    expect(text).not.toContain('/revocation-status/12345');
    expect(text).toMatch(
      /issuer_issuances_total\{proof_type="SD_JWT_VC",channel="hosted",outcome="issued"\} [1-9]/,
    );
    expect(text).toMatch(
      /issuer_issuances_total\{proof_type="SD_JWT_VC",channel="direct",outcome="issued"\} [1-9]/,
    );
    expect(text).toMatch(/issuer_uploads_total\{outcome="stored"\} [1-9]/);
    expect(text).toMatch(/issuer_status_changes_total\{change="revoke"\} [1-9]/);
    // The list read after the revoke carried it: one visibility sample.
    expect(text).toMatch(/^issuer_revocation_visible_seconds_count [1-9]/m);
    expect(text).toMatch(/issuer_claims_lookup_seconds_count\{provider="sqlite",outcome="eligible"\} [1-9]/);
    expect(text).toMatch(/issuer_upstream_requests_total\{call="dstorage\/vcs",outcome="ok"\} [1-9]/);
  });

  it('readyz turns 503 naming the check when draining starts', async () => {
    issuer.ctx.lifecycle.draining = true;
    try {
      const ready = await fetch(`${issuer.url}/readyz`);
      expect(ready.status).toBe(503);
      const body = (await ready.json()) as { status: string; checks: Record<string, any> };
      expect(body.status).toBe('not_ready');
      expect(body.checks.shutdown.ok).toBe(false);
      const other = await issuer.admin('/admin/keys');
      expect(other.status).toBe(503);
      expect(((await other.json()) as { code: string }).code).toBe('UNAVAILABLE');
    } finally {
      issuer.ctx.lifecycle.draining = false;
    }
  });

  it('counts rate-limited requests by group', async () => {
    const limited = await startIssuer({ env: { RATE_LIMIT_PUBLIC_PER_MIN: '1' } });
    try {
      await fetch(`${limited.url}/.well-known/jwks.json`);
      expect((await fetch(`${limited.url}/.well-known/jwks.json`)).status).toBe(429);
      const text = await (await fetch(`${limited.url}/metrics`)).text();
      expect(text).toContain('issuer_rate_limited_total{group="public"} 1');
    } finally {
      await limited.close();
    }
  });
});

describe('observability: METRICS_TOKEN and a failing readiness check', () => {
  it('/metrics needs the bearer token when METRICS_TOKEN is set', async () => {
    const issuer = await startIssuer({ env: { METRICS_TOKEN: 'metrics-token-0123456789' } });
    try {
      expect((await fetch(`${issuer.url}/metrics`)).status).toBe(401);
      const wrong = await fetch(`${issuer.url}/metrics`, { headers: { authorization: 'Bearer nope' } });
      expect(wrong.status).toBe(401);
      expect(((await wrong.json()) as { code: string }).code).toBe('UNAUTHORIZED');
      const ok = await fetch(`${issuer.url}/metrics`, {
        headers: { authorization: 'Bearer metrics-token-0123456789' },
      });
      expect(ok.status).toBe(200);
      // RFC 9110 §11.1: the scheme is case-insensitive.
      for (const scheme of ['bearer', 'BEARER']) {
        const res = await fetch(`${issuer.url}/metrics`, {
          headers: { authorization: `${scheme} metrics-token-0123456789` },
        });
        expect(res.status).toBe(200);
      }
    } finally {
      await issuer.close();
    }
  });

  it('with ADMIN_PORT, /metrics answers on the admin listener only; the probes stay public', async () => {
    const issuer = await startIssuer({ adminListener: true });
    try {
      expect((await fetch(`${issuer.adminUrl}/metrics`)).status).toBe(200);
      expect((await fetch(`${issuer.url}/metrics`)).status).toBe(404);
      expect((await fetch(`${issuer.url}/readyz`)).status).toBe(200);
      expect((await fetch(`${issuer.url}/openapi.json`)).status).toBe(200);
    } finally {
      await issuer.close();
    }
  });

  it('readyz answers 503 naming the database when it cannot answer', async () => {
    const issuer = await startIssuer();
    try {
      // Either engine (TEST_STORE): the database goes away under the running server.
      if (issuer.ctx.store.kind === 'sqlite') issuer.ctx.store.db.close();
      else await issuer.ctx.store.pool.end();
      const res = await fetch(`${issuer.url}/readyz`);
      expect(res.status).toBe(503);
      const body = (await res.json()) as { status: string; checks: Record<string, any> };
      expect(body.status).toBe('not_ready');
      expect(body.checks.database).toMatchObject({ ok: false, error: expect.any(String) });
      expect(body.checks.keys.ok).toBe(true);
      // Liveness is not readiness.
      expect((await fetch(`${issuer.url}/healthz`)).status).toBe(200);
    } finally {
      await issuer.close().catch(() => {});
    }
  });
});

describe('secrets never reach a log line', () => {
  it('the hosted + direct + revoke flow logs none of the keys, JWTs, claims, emails or ciphertexts', async () => {
    const capture = capturingLogger();
    const issuer = await startIssuer({ context: { log: capture.log } });
    try {
      const flow = await wholeFlow(issuer);
      await fetch(`${issuer.url}/admin/keys`, { headers: { 'x-admin-api-key': `${TEST_ADMIN_API_KEY}x` } });
      // `history --email`: neither a lookup nor a malformed one logs the address.
      const history = (email: string) =>
        fetch(`${issuer.url}/admin/issuance-history?email=${encodeURIComponent(email)}`, {
          headers: { 'x-admin-api-key': TEST_ADMIN_API_KEY },
        });
      const found = (await (await history(EMAIL)).json()) as { data: unknown[] };
      expect(found.data).toHaveLength(1);
      expect((await history('lookup-4242@')).status).toBe(400);
      const stored = [...issuer.emulator!.state.envelopes.values()].map((v) => v.envelope);
      const partnerJwt = await (
        issuer.ctx.serviceClient as unknown as { jwt: { token(): Promise<string> } }
      ).jwt.token();
      const secrets = [
        TEST_API_KEY,
        TEST_ADMIN_API_KEY,
        partnerJwt,
        flow.token,
        EMAIL,
        'lookup-4242',
        // Claim values of the hosted (examples/claims.json) and direct credentials.
        'Alice',
        'alice.martin@example.com',
        ...Object.values(SUBJECT).map(String),
        ...stored.flatMap((e) => [e.data, e.iv, e.authTag, e.encryptedKey]),
        String(issuer.ctx.keys.current().signing.privateKey!.export({ format: 'jwk' }).d),
      ];
      expect(stored.length).toBeGreaterThanOrEqual(2);
      expect(capture.lines.length).toBeGreaterThan(5);
      const all = capture.lines.join('\n');
      for (const secret of secrets)
        expect(all, `a log line carries ${secret.slice(0, 12)}…`).not.toContain(secret);
      // The email is traceable as its short hash only.
      expect(emailHash(EMAIL)).toMatch(/^sha256:[0-9a-f]{12}$/);
    } finally {
      await issuer.close();
    }
  });

  it('redaction censors secret-bearing fields anywhere a part might log them', () => {
    const capture = capturingLogger();
    capture.log.info({
      req: {
        headers: {
          authorization: 'Bearer s3cr3t-a',
          'x-api-key': 's3cr3t-b',
          'x-admin-api-key': 's3cr3t-c',
          cookie: 's3cr3t-d',
        },
      },
      jwk: { kty: 'EC', d: 's3cr3t-e' },
      envelope: { data: 's3cr3t-f', iv: 's3cr3t-g', authTag: 's3cr3t-h', encryptedKey: 's3cr3t-i' },
      token: 's3cr3t-j',
      claims: { name: 's3cr3t-k' },
      email: 'someone@example.org',
      nested: { user: { email: 'other@example.org' } },
    });
    const line = capture.lines[0]!;
    expect(line).not.toMatch(/s3cr3t|someone@|other@/);
    expect(line).toContain(emailHash('someone@example.org'));
  });
});

describe('the API contract', () => {
  let issuer: TestIssuer;
  beforeAll(async () => {
    issuer = await startIssuer();
  });
  afterAll(async () => {
    await issuer.close();
  });

  it('GET /openapi.json is a valid OpenAPI 3.1 document whose paths are the route table', async () => {
    const res = await fetch(`${issuer.url}/openapi.json`);
    expect(res.status).toBe(200);
    const doc = (await res.json()) as { openapi: string; paths: Record<string, Record<string, any>> };
    expect(doc.openapi).toBe('3.1.0');
    const result = await new Validator().validate(doc as never);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    const table = routeTable(issuer.ctx);
    expect(new Set(Object.keys(doc.paths))).toEqual(new Set(table.map((r) => openApiPath(r.path))));
    for (const r of table) expect(doc.paths[openApiPath(r.path)]![r.method]).toBeDefined();
  });

  it('each operation carries its zod body, parameters, error bodies and security', () => {
    const doc = openApiDocument(issuer.ctx) as { paths: Record<string, Record<string, any>> };
    const issue = doc.paths['/issue-vc']!.post;
    expect(issue.operationId).toBe('issue-vc');
    expect(issue.security).toEqual([{ apiKey: [] }]);
    const body = issue.requestBody.content['application/json'].schema;
    expect(body.required).toEqual(expect.arrayContaining(['holderDID', 'userId', 'schemaId']));
    for (const status of ['201', '400', '403', '413', '415', '422', '429', '500', '502'])
      expect(issue.responses[status], status).toBeDefined();
    expect(issue.responses['403'].content['application/json'].schema.allOf[1].properties.code.const).toBe(
      'FORBIDDEN',
    );
    expect(doc.paths['/admin/revoke']!.post.security).toEqual([{ adminApiKey: [] }]);
    // The union body of POST /admin/uploads/retry: one credential, or every failed one.
    const retry = doc.paths['/admin/uploads/retry']!.post.requestBody.content['application/json'].schema;
    expect(JSON.stringify(retry)).toContain('credentialId');
    expect(JSON.stringify(retry)).toContain('allFailed');
    expect(doc.paths['/statuslist/{partition}']!.get.parameters[0]).toMatchObject({
      name: 'partition',
      in: 'path',
    });
    const history = doc.paths['/admin/issuance-history']!.get.parameters.map((p: { name: string }) => p.name);
    expect(history.length).toBeGreaterThan(0);
  });

  it('ops/ dashboard and alert rules use only metrics /metrics exposes', async () => {
    await wholeFlow(issuer);
    const exposed = new Set(
      [...(await (await fetch(`${issuer.url}/metrics`)).text()).matchAll(/^# TYPE (\S+) (\S+)/gm)].flatMap(
        ([, name, type]) =>
          type === 'histogram' ? [`${name}_bucket`, `${name}_sum`, `${name}_count`] : [name!],
      ),
    );
    const dashboard = JSON.parse(readFileSync('ops/grafana-dashboard.json', 'utf8')) as {
      panels: { targets: { expr: string }[] }[];
    };
    const exprs = [
      ...dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr)),
      ...[
        ...readFileSync('ops/prometheus-alerts.yml', 'utf8').matchAll(/expr: (\|\n(?:\s{10,}.*\n)+|.*)/g),
      ].map((m) => m[1]!),
    ];
    const used = new Set(
      exprs.flatMap((e) => [...e.matchAll(/\b((?:issuer|process|nodejs)_[a-z0-9_]+)/g)].map((m) => m[1]!)),
    );
    expect(used.size).toBeGreaterThan(8);
    for (const name of used) expect(exposed, name).toContain(name);
  });
});
