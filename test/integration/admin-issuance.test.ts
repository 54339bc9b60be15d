import { once } from 'node:events';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEnvelope, privateKeyFromPkcs8Hex } from '../../src/envelope/index.js';
import type { IssuanceRecord } from '../../src/store/store.js';
import { expectError } from '../helpers/errors.js';
import { verifySdJwtVc } from '../helpers/holder-sd-jwt-verifier.js';
import { queryStore, startIssuer, TEST_ADMIN_API_KEY, type TestIssuer } from '../helpers/issuer.js';

const VCT = 'https://issuer.example/vct/membership-direct';
const SUBJECT = {
  givenName: 'Carla',
  familyName: 'Jansen',
  memberSince: '2020-02-29',
  tier: 'platinum',
  memberNumber: 77,
};
const inOneYear = () => new Date(Date.now() + 365 * 86400_000).toISOString().replace(/\.\d{3}Z$/, 'Z');

let counter = 0;
const nextEmail = () => `holder.${Date.now()}.${counter++}@example.org`;
const issueBody = (overrides: Record<string, unknown> = {}) => ({
  userId: nextEmail(),
  schemaId: 'membership-v1',
  vct: VCT,
  expiration: inOneYear(),
  credentialSubject: SUBJECT,
  ...overrides,
});

interface IssueAnswer {
  credentialId: string;
  revocationNonce: string;
  holderDid: string;
  schemaId: string;
  status: { idx: number; uri: string } | null;
  storagePath: string | null;
  uploadState: 'uploaded' | 'pending';
}

// docs/interface.md "admin issue-vc": `POST /admin/issue-vc` against the mounted emulator, checked as the holder would.
describe('admin direct issuance', () => {
  let issuer: TestIssuer;
  const initializeCalls = () =>
    issuer.emulator!.state.requests.filter((r) => r.route === 'initialize-user').length;

  beforeAll(async () => {
    issuer = await startIssuer({ context: { direct: { baseDelayMs: 1 } } });
  });
  afterAll(async () => {
    await issuer.close();
  });

  it('issues an SD-JWT VC without cnf, encrypted to the holder the email resolves to', async () => {
    const body = issueBody();
    const res = await issuer.admin('/admin/issue-vc', body);
    expect(res.status).toBe(201);
    const answer = (await res.json()) as IssueAnswer;
    const holder = issuer.emulator!.state.holderByEmail(body.userId)!;
    expect(answer).toEqual({
      credentialId: expect.any(String),
      revocationNonce: expect.stringMatching(/^\d+$/),
      holderDid: holder.did,
      schemaId: 'membership-v1',
      status: {
        idx: expect.any(Number),
        uri: expect.stringMatching(new RegExp(`^${issuer.url}/statuslist/\\d+$`)),
      },
      storagePath: expect.any(String),
      uploadState: 'uploaded',
    });
    expect(Object.keys(answer).sort()).toEqual(
      [
        'credentialId',
        'holderDid',
        'revocationNonce',
        'schemaId',
        'status',
        'storagePath',
        'uploadState',
      ].sort(),
    );

    const stored = issuer.emulator!.state.envelopes.get(answer.credentialId)!;
    expect(stored.response.storagePath).toBe(answer.storagePath);
    expect(stored.envelope).toMatchObject({ holderDid: holder.did, schemaId: 'membership-v1' });
    expect(stored.idempotencyKey).toBe(answer.credentialId);
    const compact = openEnvelope(
      privateKeyFromPkcs8Hex(holder.privateKeyPkcs8Hex),
      stored.envelope,
    ) as string;
    const verified = await verifySdJwtVc(issuer.url, compact);
    expect(verified.header).toMatchObject({ typ: 'dc+sd-jwt', kid: issuer.ctx.keys.current().signing.kid });
    const p = verified.payload as Record<string, any>;
    expect(p.cnf).toBeUndefined();
    expect(p).toMatchObject({
      iss: issuer.url,
      sub: holder.did,
      vct: VCT,
      id: `urn:uuid:${answer.credentialId}`,
    });
    expect(p.exp * 1000).toBe(new Date(body.expiration).getTime());
    expect(p.status.status_list).toEqual(answer.status);
    expect(verified.claims).toMatchObject(SUBJECT);
    // Default frame: every top-level claim is selectively disclosable.
    const raw = decodeJwt(compact.split('~')[0]!) as Record<string, any>;
    expect(raw._sd).toHaveLength(Object.keys(SUBJECT).length);
    expect(raw.givenName).toBeUndefined();

    const record = await issuer.ctx.store.issuances.get(answer.credentialId);
    expect(record).toMatchObject({
      channel: 'direct',
      holderDid: holder.did,
      userId: holder.userId,
      kid: issuer.ctx.keys.current().signing.kid,
      revocationNonce: Number(answer.revocationNonce),
    });
  });

  it('honours a disclosureFrame: only the listed claims are selectively disclosable', async () => {
    const body = issueBody({ disclosureFrame: { _sd: ['tier', 'memberNumber'] } });
    const res = await issuer.admin('/admin/issue-vc', body);
    expect(res.status).toBe(201);
    const answer = (await res.json()) as IssueAnswer;
    const holder = issuer.emulator!.state.holderByEmail(body.userId)!;
    const stored = issuer.emulator!.state.envelopes.get(answer.credentialId)!;
    const compact = openEnvelope(
      privateKeyFromPkcs8Hex(holder.privateKeyPkcs8Hex),
      stored.envelope,
    ) as string;
    const raw = decodeJwt(compact.split('~')[0]!) as Record<string, any>;
    expect(raw._sd).toHaveLength(2);
    expect(raw).toMatchObject({ givenName: 'Carla', familyName: 'Jansen', memberSince: '2020-02-29' });
    expect(raw.tier).toBeUndefined();
    const verified = await verifySdJwtVc(issuer.url, compact);
    expect(verified.claims).toMatchObject(SUBJECT);
  });

  describe('every invalid body is a 400 naming the field, before anything goes upstream', () => {
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['missing userId', { userId: undefined }, 'userId'],
      ['empty userId', { userId: '' }, 'userId'],
      ['malformed email', { userId: 'not-an-email' }, 'userId'],
      ['email without domain', { userId: 'carla@' }, 'userId'],
      ['admin@ address', { userId: 'admin@example.org' }, 'userId'],
      ['noreply@ address', { userId: 'noreply@example.org' }, 'userId'],
      ['support@ address', { userId: 'Support@Example.org' }, 'userId'],
      ['tagged role address', { userId: 'info+batch@example.org' }, 'userId'],
      ['missing schemaId', { schemaId: undefined }, 'schemaId'],
      ['missing vct', { vct: undefined }, 'vct'],
      ['empty vct', { vct: '' }, 'vct'],
      ['missing expiration', { expiration: undefined }, 'expiration'],
      ['malformed expiration', { expiration: 'next year' }, 'expiration'],
      ['expiration without offset', { expiration: '2099-01-01T00:00:00' }, 'expiration'],
      ['past expiration', { expiration: '2001-01-01T00:00:00Z' }, 'expiration'],
      ['missing credentialSubject', { credentialSubject: undefined }, 'credentialSubject'],
      ['credentialSubject not an object', { credentialSubject: ['tier'] }, 'credentialSubject'],
      ['disclosureFrame not an object', { disclosureFrame: 'all' }, 'disclosureFrame'],
      [
        'disclosureFrame naming no claim',
        { disclosureFrame: { _sd: ['tier', 'nickname'] } },
        'disclosureFrame._sd.1',
      ],
      ['disclosureFrame _sd not a list', { disclosureFrame: { _sd: 'tier' } }, 'disclosureFrame._sd'],
      ['onDuplicate unknown', { onDuplicate: 'replace' }, 'onDuplicate'],
    ];
    it.each(cases)('%s', async (_name, overrides, field) => {
      const before = initializeCalls();
      await expectError(
        await issuer.admin('/admin/issue-vc', issueBody(overrides)),
        400,
        'INVALID_PARAMETER',
        field,
      );
      expect(initializeCalls()).toBe(before);
    });

    it('names each reserved claim', async () => {
      const reserved = ['cnf', 'exp', 'iat', 'id', 'iss', 'nonce', 'status', 'sub', 'vct', 'vct#integrity'];
      const subject = { ...SUBJECT, ...Object.fromEntries(reserved.map((c) => [c, 'x'])) };
      const body = await expectError(
        await issuer.admin('/admin/issue-vc', issueBody({ credentialSubject: subject })),
        400,
        'INVALID_PARAMETER',
        'credentialSubject.cnf',
      );
      expect(body.details!.issues!.map((i) => i.field).sort()).toEqual(
        reserved.map((c) => `credentialSubject.${c}`).sort(),
      );
      for (const c of reserved) {
        await expectError(
          await issuer.admin('/admin/issue-vc', issueBody({ credentialSubject: { ...SUBJECT, [c]: 1 } })),
          400,
          'INVALID_PARAMETER',
          `credentialSubject.${c}`,
        );
      }
    });

    it('malformed JSON and a bad Idempotency-Key', async () => {
      const res = await fetch(`${issuer.url}/admin/issue-vc`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-admin-api-key': TEST_ADMIN_API_KEY },
        body: '{"userId": ',
      });
      await expectError(res, 400, 'INVALID_PARAMETER');
      await expectError(
        await issuer.admin('/admin/issue-vc', issueBody(), { 'idempotency-key': 'has space' }),
        400,
        'INVALID_PARAMETER',
        'Idempotency-Key',
      );
    });
  });

  it('an unknown schema is 404 and claims that do not fit the schema are 422, before initialize-user', async () => {
    const before = initializeCalls();
    await expectError(
      await issuer.admin('/admin/issue-vc', issueBody({ schemaId: 'no-such-schema' })),
      404,
      'NOT_FOUND',
      'schemaId',
    );
    await expectError(
      await issuer.admin('/admin/issue-vc', issueBody({ credentialSubject: { ...SUBJECT, tier: 'bronze' } })),
      422,
      'CLAIMS_INVALID',
    );
    expect(initializeCalls()).toBe(before);
  });

  it.each([
    [400, 'INVALID_PARAMETER'],
    [401, 'UNAUTHORIZED'],
    [403, 'FORBIDDEN'],
    [404, 'NOT_FOUND'],
    [409, 'CONFLICT'],
  ])('an upstream %i on initialize-user is passed on as %i %s, not retried', async (status, code) => {
    issuer.emulator!.faults.failNext('initialize-user', 1, status);
    const before = initializeCalls();
    const body = await expectError(await issuer.admin('/admin/issue-vc', issueBody()), status, code);
    expect(body.details?.upstream).toBe('auth/initialize-user');
    expect(body.message).toBe('injected fault on initialize-user');
    expect(initializeCalls()).toBe(before + 1);
  });

  it('an upstream 500 is retried with backoff; persistent 500s end in 502', async () => {
    const emulator = issuer.emulator!;
    emulator.faults.failNext('initialize-user', 2, 500);
    const first = initializeCalls();
    const ok = await issuer.admin('/admin/issue-vc', issueBody());
    expect(ok.status).toBe(201);
    expect(initializeCalls()).toBe(first + 3);

    emulator.faults.failNext('initialize-user', 3, 500);
    const before = initializeCalls();
    const envelopes = emulator.state.envelopes.size;
    await expectError(await issuer.admin('/admin/issue-vc', issueBody()), 502, 'UPSTREAM_UNAVAILABLE');
    const calls = emulator.state.requests.filter((r) => r.route === 'initialize-user').slice(before);
    expect(calls.map((r) => r.status)).toEqual([500, 500, 500]);
    expect(emulator.state.envelopes.size).toBe(envelopes);
  });

  it('a dstorage failure answers 202 pending; the outbox then stores it with the same externalId', async () => {
    const emulator = issuer.emulator!;
    emulator.faults.failNext('dstorage', 1, 500);
    const uploaded = once(issuer.ctx.outbox, 'uploaded');
    const res = await issuer.admin('/admin/issue-vc', issueBody());
    expect(res.status).toBe(202);
    const answer = (await res.json()) as IssueAnswer;
    expect(answer).toMatchObject({ uploadState: 'pending', storagePath: null });
    const [record] = (await uploaded) as [IssuanceRecord];
    expect(record.credentialId).toBe(answer.credentialId);
    const attempts = emulator.state.requests.filter(
      (r) => r.route === 'dstorage' && r.externalId === answer.credentialId,
    );
    expect(attempts.map((r) => r.status)).toEqual([500, 201]);
    expect(await issuer.ctx.store.issuances.get(answer.credentialId)).toMatchObject({
      uploadState: 'uploaded',
    });
  });

  it('a final dstorage answer (409) is passed on with its status; the credential stays recorded', async () => {
    const emulator = issuer.emulator!;
    emulator.faults.failNext('dstorage', 1, 409);
    const res = await issuer.admin('/admin/issue-vc', issueBody());
    const { details } = await expectError<{ credentialId: string; upstream: string }>(res, 409, 'CONFLICT');
    expect(details!.upstream).toBe('dstorage/vcs');
    expect(await issuer.ctx.store.issuances.get(details!.credentialId)).toMatchObject({
      uploadState: 'pending',
    });
  });

  describe('Idempotency-Key', () => {
    it('a request re-run after a crash between recording and answering finds its credential', async () => {
      const body = issueBody({ onDuplicate: 'revoke' });
      const key = `crash-${nextEmail()}`;
      const first = (await (
        await issuer.admin('/admin/issue-vc', body, { 'idempotency-key': key })
      ).json()) as IssueAnswer;
      // As if the process had died before storing the answer, long enough ago to be taken over.
      await queryStore(
        issuer.ctx.store,
        "UPDATE idempotency_keys SET status = NULL, response = NULL, created_at = '2000-01-01T00:00:00.000Z' WHERE key = ?",
        [key],
      );
      const rerun = await issuer.admin('/admin/issue-vc', body, { 'idempotency-key': key });
      expect(rerun.status).toBe(201);
      const again = (await rerun.json()) as IssueAnswer;
      expect(again.credentialId).toBe(first.credentialId);
      const history = (await (
        await issuer.admin(`/admin/issuance-history?holderDid=${encodeURIComponent(first.holderDid)}`)
      ).json()) as {
        data: Array<{ credentialId: string; status: string }>;
      };
      expect(history.data).toEqual([
        expect.objectContaining({ credentialId: first.credentialId, status: 'valid' }),
      ]);
    });

    it('replays the first answer for the same key and body; another body is 409', async () => {
      const body = issueBody();
      const key = `issue-${nextEmail()}`;
      const first = await issuer.admin('/admin/issue-vc', body, { 'idempotency-key': key });
      expect(first.status).toBe(201);
      const firstBody = await first.json();
      const envelopes = issuer.emulator!.state.envelopes.size;

      const again = await issuer.admin('/admin/issue-vc', body, { 'idempotency-key': key });
      expect(again.status).toBe(201);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(await again.json()).toEqual(firstBody);
      expect(issuer.emulator!.state.envelopes.size).toBe(envelopes);

      // Same content, other key order: the same request.
      const reordered = Object.fromEntries(Object.entries(body).reverse());
      expect((await issuer.admin('/admin/issue-vc', reordered, { 'idempotency-key': key })).status).toBe(201);

      await expectError(
        await issuer.admin('/admin/issue-vc', { ...body, vct: `${VCT}-2` }, { 'idempotency-key': key }),
        409,
        'CONFLICT',
        'Idempotency-Key',
      );
      // Without the key, the same body issues another credential (onDuplicate defaults to allow).
      const other = await issuer.admin('/admin/issue-vc', body);
      expect(((await other.json()) as IssueAnswer).credentialId).not.toBe(
        (firstBody as IssueAnswer).credentialId,
      );
    });

    it('a failed request is not remembered: a retry with the same key runs again', async () => {
      const body = issueBody();
      const key = `retry-${nextEmail()}`;
      issuer.emulator!.faults.failNext('initialize-user', 1, 404);
      await expectError(
        await issuer.admin('/admin/issue-vc', body, { 'idempotency-key': key }),
        404,
        'NOT_FOUND',
      );
      const ok = await issuer.admin('/admin/issue-vc', body, { 'idempotency-key': key });
      expect(ok.status).toBe(201);
      expect(ok.headers.get('idempotent-replayed')).toBeNull();
    });

    it('keys are per route; /admin/revoke replays and refuses another body', async () => {
      const key = `shared-${nextEmail()}`;
      const issued = (await (
        await issuer.admin('/admin/issue-vc', issueBody(), { 'idempotency-key': key })
      ).json()) as IssueAnswer;
      const revoke = { revocationNonce: issued.revocationNonce };
      const first = await issuer.admin('/admin/revoke', revoke, { 'idempotency-key': key });
      expect(first.status).toBe(200);
      const firstBody = (await first.json()) as { revokedAt: string; isRevoked: boolean };
      expect(firstBody.isRevoked).toBe(true);
      const again = await issuer.admin('/admin/revoke', revoke, { 'idempotency-key': key });
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(await again.json()).toEqual(firstBody);
      const other = (await (await issuer.admin('/admin/issue-vc', issueBody())).json()) as IssueAnswer;
      await expectError(
        await issuer.admin(
          '/admin/revoke',
          { revocationNonce: other.revocationNonce },
          { 'idempotency-key': key },
        ),
        409,
        'CONFLICT',
      );
      expect((await issuer.ctx.store.issuances.getByNonce(Number(other.revocationNonce)))!.status).toBe(0);
    });
  });

  describe('onDuplicate', () => {
    const issue = async (email: string, onDuplicate?: string) => {
      const res = await issuer.admin('/admin/issue-vc', issueBody({ userId: email, onDuplicate }));
      return { status: res.status, body: (await res.json()) as IssueAnswer };
    };
    const statusOf = async (nonce: string) =>
      (await issuer.ctx.store.issuances.getByNonce(Number(nonce)))!.status;

    it('allow (the default) issues another credential', async () => {
      const email = nextEmail();
      const a = await issue(email);
      const b = await issue(email, 'allow');
      expect([a.status, b.status]).toEqual([201, 201]);
      expect(b.body.credentialId).not.toBe(a.body.credentialId);
      expect(b.body.holderDid).toBe(a.body.holderDid);
      expect([await statusOf(a.body.revocationNonce), await statusOf(b.body.revocationNonce)]).toEqual([
        0, 0,
      ]);
    });

    it('ignore answers the existing valid credential and issues nothing', async () => {
      const email = nextEmail();
      const first = await issue(email, 'ignore');
      expect(first.status).toBe(201);
      const envelopes = issuer.emulator!.state.envelopes.size;
      const second = await issue(email, 'ignore');
      expect(second.status).toBe(200);
      expect(second.body).toEqual(first.body);
      expect(issuer.emulator!.state.envelopes.size).toBe(envelopes);
      // Once it is revoked, ignore issues a new one.
      await issuer.admin('/admin/revoke', { revocationNonce: first.body.revocationNonce });
      const third = await issue(email, 'ignore');
      expect(third.status).toBe(201);
      expect(third.body.credentialId).not.toBe(first.body.credentialId);
    });

    it('revoke revokes the active credentials and issues the new one: one active per holder', async () => {
      const email = nextEmail();
      const a = await issue(email);
      const b = await issue(email);
      const c = await issue(email, 'revoke');
      expect(c.status).toBe(201);
      expect(await statusOf(a.body.revocationNonce)).toBe(1);
      expect(await statusOf(b.body.revocationNonce)).toBe(1);
      expect(await statusOf(c.body.revocationNonce)).toBe(0);
      const check = await fetch(`${issuer.url}/revocation-status/${a.body.revocationNonce}`);
      expect(await check.json()).toMatchObject({ isRevoked: true });
      // Concurrent replacements still leave exactly one active credential.
      const answers = await Promise.all([
        issue(email, 'revoke'),
        issue(email, 'revoke'),
        issue(email, 'revoke'),
      ]);
      const active = await issuer.ctx.store.history.activeFor(
        c.body.holderDid,
        'membership-v1',
        'SD_JWT_VC',
        new Date(),
      );
      expect(active.map((r) => r.credentialId)).toHaveLength(1);
      expect(answers.map((a) => a.body.credentialId)).toContain(active[0]!.credentialId);
    });
  });
});

// Admin routes are for the issuer's own servers (docs/interface.md "Authentication").
describe('admin route protection', () => {
  let issuer: TestIssuer;
  beforeAll(async () => {
    issuer = await startIssuer();
  });
  afterAll(async () => {
    await issuer.close();
  });

  const routes: Array<[string, string, unknown]> = [
    ['POST', '/admin/issue-vc', issueBody()],
    ['POST', '/admin/revoke', { revocationNonce: '1' }],
    ['GET', '/admin/issuance-history', undefined],
    ['POST', '/admin/publish-token-status-list', {}],
    ['GET', '/admin/keys', undefined],
    ['POST', '/admin/keys/rotate', {}],
    ['POST', '/admin/claims', { records: [] }],
  ];
  const call = (method: string, path: string, body: unknown, headers: Record<string, string>) =>
    fetch(`${issuer.url}${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  it.each(routes)('%s %s: missing or wrong x-admin-api-key → 403', async (method, path, body) => {
    await expectError(await call(method, path, body, {}), 403, 'FORBIDDEN');
    await expectError(
      await call(method, path, body, { 'x-admin-api-key': `${TEST_ADMIN_API_KEY}x` }),
      403,
      'FORBIDDEN',
    );
    await expectError(await call(method, path, body, { 'x-admin-api-key': 'short' }), 403, 'FORBIDDEN');
  });

  it.each(routes)('%s %s: a browser request is refused even with the key', async (method, path, body) => {
    const key = { 'x-admin-api-key': TEST_ADMIN_API_KEY };
    const withOrigin = await call(method, path, body, { ...key, origin: 'https://evil.example' });
    expect(withOrigin.headers.get('access-control-allow-origin')).toBeNull();
    await expectError(withOrigin, 403, 'FORBIDDEN');
    await expectError(
      await call(method, path, body, { ...key, 'sec-fetch-site': 'cross-site' }),
      403,
      'FORBIDDEN',
    );
  });

  it('admin answers carry no CORS headers and preflight finds nothing', async () => {
    const res = await issuer.admin('/admin/issuance-history');
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    const preflight = await fetch(`${issuer.url}/admin/issue-vc`, {
      method: 'OPTIONS',
      headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
    });
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
    expect(preflight.status).toBeGreaterThanOrEqual(400);
  });
});
