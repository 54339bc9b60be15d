import { cpSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join, resolve } from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SIGN_IN_FAILURES_PER_MIN } from '../../src/http/routes/console/console.js';
import { expectError } from '../helpers/errors.js';
import {
  queryStore,
  removeDir,
  startIssuer,
  TEST_ADMIN_API_KEY,
  type TestIssuer,
  tempDir,
} from '../helpers/issuer.js';
import { capturingLogger } from '../helpers/log-capture.js';

const OPERATOR_KEY = 'operator-key-0123456789abcdef0123456789ab';

// docs/operations.md "The admin console", over HTTP (the browser flows are test/slow/console-browser.test.ts).
describe('admin console', () => {
  let issuer: TestIssuer;
  let cookie: string;
  let csrf: string;
  const logs = capturingLogger();

  const signIn = async (key: string, origin = issuer.url) =>
    fetch(`${issuer.url}/console/sign-in`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin },
      body: new URLSearchParams({ key }),
    });
  const get = (path: string) => fetch(`${issuer.url}${path}`, { headers: { cookie }, redirect: 'manual' });
  const act = (path: string, body: unknown, token = csrf) =>
    fetch(`${issuer.url}/console/api${path}`, {
      method: 'POST',
      headers: { cookie, origin: issuer.url, 'content-type': 'application/json', 'x-csrf-token': token },
      body: JSON.stringify(body),
    });
  const issue = async (email: string) => {
    const res = await issuer.admin('/admin/issue-vc', {
      userId: email,
      schemaId: 'membership-v1',
      vct: 'https://issuer.example/vct/membership-v1',
      expiration: new Date(Date.now() + 86_400_000).toISOString(),
      credentialSubject: {
        givenName: 'A',
        familyName: 'B',
        memberSince: '2020-01-01',
        tier: 'gold',
        memberNumber: 1,
      },
    });
    expect([201, 202]).toContain(res.status);
  };
  const audit = (action: string) =>
    queryStore<{ actor: string; target: string; reason: string | null }>(
      issuer.ctx.store,
      'SELECT actor, target, reason FROM audit_log WHERE action = ? ORDER BY id',
      [action],
    );

  // The schema files are a copy: the reload test puts a bad file among them.
  const schemasDir = tempDir();

  beforeAll(async () => {
    cpSync(resolve('schemas'), schemasDir, { recursive: true });
    issuer = await startIssuer({
      env: { ADMIN_API_KEYS: `ops-bob:${OPERATOR_KEY}`, SCHEMAS_DIR: schemasDir },
      context: { log: logs.log },
    });
    const res = await signIn(OPERATOR_KEY);
    expect(res.status).toBe(303);
    cookie = res.headers.get('set-cookie')!.split(';')[0]!;
    const page = await (await get('/console/keys')).text();
    csrf = /<meta name="csrf-token" content="([^"]+)">/.exec(page)![1]!;
  });
  afterAll(async () => {
    await issuer?.close();
    removeDir(schemasDir);
  });

  it('in development, the Overview labels the doctor as production readiness, its FAILs expected', async () => {
    const overview = await (await get('/console')).text();
    expect(overview).toContain('<h2 id="h-doctor">Production readiness</h2>');
    expect(overview).toMatch(/runs in development: .*FAIL lines are expected here until you go live/);
    const fragment = await (await get('/console/doctor')).text();
    expect(fragment).toMatch(/<caption>admin doctor: production readiness, FAIL expected in development, /);
  });

  it('rotates a key through the admin handler: the signed-in name and the reason are audited; no reason, no rotation', async () => {
    // A live credential keeps the key it was signed with published once retired.
    await issue('csv.one@example.org');
    const before = issuer.ctx.keys.current().signing.kid;
    const refused = await act('/admin/keys/rotate', { purpose: 'credential-signing' });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { details: { field: string } }).details.field).toBe('reason');
    expect(issuer.ctx.keys.current().signing.kid).toBe(before);

    const res = await act('/admin/keys/rotate', { purpose: 'credential-signing', reason: 'yearly rotation' });
    expect(res.status).toBe(200);
    const { created } = (await res.json()) as { created: { kid: string } };
    expect(issuer.ctx.keys.current().signing.kid).toBe(created.kid);
    expect(await audit('keys.rotate')).toEqual([
      { actor: 'ops-bob', target: created.kid, reason: 'yearly rotation' },
    ]);
    // The Keys page shows the retired key, still published.
    const page = await (await get('/console/keys')).text();
    expect(page).toContain(before);
    expect(page).toContain('retired, still published');
    // No format here signs under certificates of its own (no schema lists MSO_MDOC).
    expect(page).not.toContain('Format certificates');
  });

  it('reloads schemas; a bad file is refused with its reason, shown on the Schemas page, and audited', async () => {
    const bad = join(schemasDir, 'broken-console.json');
    writeFileSync(bad, '{ "schemaId": ');
    try {
      const res = await act('/admin/schemas/reload', { reason: 'new type' });
      expect(res.status).toBe(422);
      expect(((await res.json()) as { code: string }).code).toBe('SCHEMAS_INVALID');
      const page = await (await get('/console/schemas')).text();
      expect(page).toContain('broken-console.json');
      expect(page).toContain('membership-v1');
    } finally {
      rmSync(bad);
    }
    expect((await act('/admin/schemas/reload', {})).status).toBe(200);
    expect((await audit('schemas.reload')).map((e) => e.actor)).toEqual(['ops-bob', 'ops-bob']);
  });

  it('the Issuances CSV is the current filter, every row, parsed back by csv-parse', async () => {
    await issue('csv.two@example.org');
    const res = await get('/console/issuances.csv?email=csv.two%40example.org&channel=direct');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/csv/);
    const rows = parse(await res.text(), { columns: true }) as Array<Record<string, string>>;
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ schemaId: 'membership-v1', status: 'valid', proofType: 'SD_JWT_VC' });
    const all = parse(await (await get('/console/issuances.csv?channel=direct')).text(), { columns: true });
    expect(all).toHaveLength(2);
    // A bad filter is a 400 page naming the field, not a crash.
    const badFilter = await get('/console/issuances?createdFrom=yesterday');
    expect(badFilter.status).toBe(400);
    expect(await badFilter.text()).toContain('createdFrom');
  });

  it('refuses a sign-in from another origin, rate-limits failed sign-ins and never logs the key', async () => {
    expect((await signIn(OPERATOR_KEY, 'http://evil.example')).status).toBe(403);
    const statuses: number[] = [];
    for (let i = 0; i <= SIGN_IN_FAILURES_PER_MIN; i++) statuses.push((await signIn(`wrong-${i}`)).status);
    expect(statuses.slice(0, SIGN_IN_FAILURES_PER_MIN).every((s) => s === 403)).toBe(true);
    expect(statuses[SIGN_IN_FAILURES_PER_MIN]).toBe(429);
    // The limit is on failures: others' failures from the same address never lock the right key out.
    const right = await signIn(OPERATOR_KEY);
    expect(right.status).toBe(303);
    expect(right.headers.get('set-cookie')).toMatch(/^console_session=/);
    expect((await signIn('wrong-again')).status).toBe(429);
    const events = logs.records().map((r) => r.event);
    expect(events.filter((e) => e === 'console_sign_in_failed')).toHaveLength(SIGN_IN_FAILURES_PER_MIN);
    expect(events).toContain('console_refused');
    for (const line of logs.lines) {
      expect(line).not.toContain('wrong-');
      expect(line).not.toContain(OPERATOR_KEY);
    }
  });

  it('the own origin is configuration, not Host: a request naming another host as both Host and Origin is refused', async () => {
    const { port } = new URL(issuer.url);
    const foreign = `http://rebound.example:${port}`;
    const status = await new Promise<number>((done, fail) => {
      const req = request(
        `${issuer.url}/console/sign-in`,
        {
          method: 'POST',
          headers: {
            host: `rebound.example:${port}`,
            origin: foreign,
            'content-type': 'application/x-www-form-urlencoded',
          },
        },
        (res) => {
          res.resume();
          done(res.statusCode ?? 0);
        },
      );
      req.on('error', fail);
      req.end(new URLSearchParams({ key: OPERATOR_KEY }).toString());
    });
    expect(status).toBe(403);
    expect(logs.records().some((r) => r.event === 'console_refused' && r.origin === foreign)).toBe(true);
  });

  it('an asset name that is a property of every object is 404; a sign-in without a form body is 400 naming key', async () => {
    for (const name of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'])
      expect((await fetch(`${issuer.url}/console/assets/${name}`)).status).toBe(404);
    expect((await fetch(`${issuer.url}/console/assets/console.css`)).status).toBe(200);
    const bodies: Array<[string | undefined, string | undefined]> = [
      ['application/json', JSON.stringify({ key: OPERATOR_KEY })],
      ['text/plain', `key=${OPERATOR_KEY}`],
      [undefined, undefined],
      ['application/x-www-form-urlencoded', ''],
    ];
    for (const [type, body] of bodies) {
      const res = await fetch(`${issuer.url}/console/sign-in`, {
        method: 'POST',
        redirect: 'manual',
        headers: { origin: issuer.url, ...(type ? { 'content-type': type } : {}) },
        ...(body === undefined ? {} : { body }),
      });
      await expectError(res, 400, 'INVALID_PARAMETER', 'key');
    }
  });

  it('renews a direct credential from its page; both pages link the other, the signed-in name audited', async () => {
    const res = await issuer.admin('/admin/issue-vc', {
      userId: 'console.renew@example.org',
      schemaId: 'membership-v1',
      vct: 'https://issuer.example/vct/membership-v1',
      expiration: new Date(Date.now() + 86_400_000).toISOString(),
      credentialSubject: {
        givenName: 'R',
        familyName: 'N',
        memberSince: '2020-01-01',
        tier: 'gold',
        memberNumber: 2,
      },
    });
    const { credentialId } = (await res.json()) as { credentialId: string };
    const { userId } = (await issuer.ctx.store.issuances.get(credentialId))!;
    await issuer.ctx.store.claims.upsertClaims([
      {
        userId,
        schemaId: 'membership-v1',
        claims: { givenName: 'R', familyName: 'N', memberSince: '2020-01-01', tier: 'gold', memberNumber: 2 },
        expiresAt: null,
      },
    ]);
    const before = await (await get(`/console/credentials/${credentialId}`)).text();
    expect(before).toContain('data-api="/console/api/admin/renew"');
    // The flash after an action says what was done to which credential.
    expect(before).toContain(
      `data-done="Revoked credential ${credentialId} (revocation nonce ${(await issuer.ctx.store.issuances.get(credentialId))!.revocationNonce}, schema membership-v1)."`,
    );
    expect(before).toContain(`data-done="Renewed credential ${credentialId}: a new credential was issued`);
    expect(before).not.toContain('<dt>Batch</dt>');
    expect((await act('/admin/renew', { credentialId })).status).toBe(400);
    const renewed = await act('/admin/renew', { credentialId, reason: 'from the console' });
    expect(renewed.status).toBe(201);
    const renewedBy = ((await renewed.json()) as { credentialId: string }).credentialId;
    const oldPage = await (await get(`/console/credentials/${credentialId}`)).text();
    expect(oldPage).toContain(`href="/console/credentials/${renewedBy}"`);
    expect(oldPage).not.toContain('data-api="/console/api/admin/renew"');
    expect(await (await get(`/console/credentials/${renewedBy}`)).text()).toContain(
      `href="/console/credentials/${credentialId}"`,
    );
    expect((await audit('renew')).filter((e) => e.target === credentialId)).toEqual([
      { actor: 'ops-bob', target: credentialId, reason: 'from the console' },
    ]);
  });

  it('a credential of a batch-issue run shows its batch id; the revoke form names what it did to which credential', async () => {
    const res = await issuer.admin('/admin/issue-vc', {
      userId: 'console.batch@example.org',
      schemaId: 'membership-v1',
      vct: 'https://issuer.example/vct/membership-v1',
      expiration: new Date(Date.now() + 86_400_000).toISOString(),
      batchId: 'batch-console-0001',
      credentialSubject: {
        givenName: 'B',
        familyName: 'A',
        memberSince: '2020-01-01',
        tier: 'gold',
        memberNumber: 3,
      },
    });
    expect([201, 202]).toContain(res.status);
    const { credentialId } = (await res.json()) as { credentialId: string };
    const page = await (await get(`/console/credentials/${credentialId}`)).text();
    expect(page).toContain('<dt>Batch</dt><dd><code>batch-console-0001</code>');
    expect(page).toContain('status bulk revoke --batch batch-console-0001');
    expect(page).toMatch(
      new RegExp(
        `data-done="Revoked credential ${credentialId} \\(revocation nonce \\d+, schema membership-v1\\)\\."`,
      ),
    );
  });

  it('the admin routes themselves still refuse a browser, and the console API refuses the admin key alone', async () => {
    const viaKey = await fetch(`${issuer.url}/console/api/admin/keys/rotate`, {
      method: 'POST',
      headers: { 'x-admin-api-key': TEST_ADMIN_API_KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ reason: 'x' }),
    });
    expect(viaKey.status).toBe(401);
    expect((await act('/admin/keys/rotate', { reason: 'x' }, 'not-the-token')).status).toBe(403);
  });
});
