import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startIssuer, TEST_ADMIN_API_KEY, type TestIssuer } from '../helpers/issuer.js';

const OPS_KEY = 'ops-key-0123456789abcdef0123456789abcdef';
const CI_KEY = 'ci-key-0123456789abcdef0123456789abcdef0';

interface AuditPage {
  data: Array<{ at: string; actor: string; action: string; target: string; reason?: string }>;
  pagination: { page?: number; limit: number; total?: number; nextCursor: string | null };
}

// Who did what: every admin action recorded with the name of the key that asked.
describe('audit log and named admin keys', () => {
  let issuer: TestIssuer;
  const as = (key: string) => ({ 'x-admin-api-key': key });
  const audit = async (query = '') =>
    (await (await issuer.admin(`/admin/audit${query}`)).json()) as AuditPage;

  beforeAll(async () => {
    issuer = await startIssuer({
      env: { ADMIN_API_KEYS: `ops:${OPS_KEY},ci-bot:${CI_KEY}`, STATUS_LIST_BITS: '2' },
    });
  });
  afterAll(() => issuer.close());

  it('records issue, revoke, suspend, unsuspend, claims.import, keys.rotate and status-list.publish with actor and reason', async () => {
    const issued = await issuer.admin(
      '/admin/issue-vc',
      {
        userId: 'audit.one@example.org',
        schemaId: 'membership-v1',
        vct: 'urn:vct:membership',
        expiration: new Date(Date.now() + 86400_000).toISOString(),
        credentialSubject: {
          givenName: 'A',
          familyName: 'B',
          memberSince: '2020-01-01',
          tier: 'gold',
          memberNumber: 1,
        },
        reason: 'ticket 42',
      },
      as(OPS_KEY),
    );
    expect(issued.status).toBe(201);
    const { credentialId, revocationNonce } = (await issued.json()) as {
      credentialId: string;
      revocationNonce: string;
    };

    expect((await issuer.admin('/admin/suspend', { revocationNonce }, as(CI_KEY))).status).toBe(200);
    expect((await issuer.admin('/admin/unsuspend', { revocationNonce }, as(CI_KEY))).status).toBe(200);
    expect((await issuer.admin('/admin/revoke', { revocationNonce, reason: 'left the club' })).status).toBe(
      200,
    );
    const imported = await issuer.admin(
      '/admin/claims',
      {
        records: [
          {
            userId: 'u-9',
            schemaId: 'membership-v1',
            claims: {
              givenName: 'C',
              familyName: 'D',
              memberSince: '2021-01-01',
              tier: 'basic',
              memberNumber: 9,
            },
          },
        ],
      },
      as(OPS_KEY),
    );
    expect(imported.status).toBe(200);
    const rotated = await issuer.admin('/admin/keys/rotate', { purpose: 'partner-jwt' }, as(CI_KEY));
    expect(rotated.status).toBe(200);
    const newKid = ((await rotated.json()) as { created: { kid: string } }).created.kid;
    expect((await issuer.admin('/admin/publish-token-status-list', {})).status).toBe(200);

    const page = await audit('?page=1');
    expect(page.pagination).toEqual({ page: 1, limit: 25, total: 7, nextCursor: null });
    expect(page.data.map(({ actor, action, target, reason }) => ({ actor, action, target, reason }))).toEqual(
      [
        { actor: 'admin', action: 'status-list.publish', target: '0', reason: undefined },
        { actor: 'ci-bot', action: 'keys.rotate', target: newKid, reason: undefined },
        { actor: 'ops', action: 'claims.import', target: '1 record: membership-v1', reason: undefined },
        { actor: 'admin', action: 'revoke', target: revocationNonce, reason: 'left the club' },
        { actor: 'ci-bot', action: 'unsuspend', target: revocationNonce, reason: undefined },
        { actor: 'ci-bot', action: 'suspend', target: revocationNonce, reason: undefined },
        { actor: 'ops', action: 'issue', target: credentialId, reason: 'ticket 42' },
      ],
    );
    expect(page.data.every((e) => !Number.isNaN(Date.parse(e.at)))).toBe(true);
    expect(Object.hasOwn(page.data[0]!, 'reason')).toBe(false);
  });

  it('filters by action and actor and paginates, newest first', async () => {
    const ops = await audit('?actor=ops');
    expect(ops.data.map((e) => e.action)).toEqual(['claims.import', 'issue']);
    const revokes = await audit('?action=revoke&total=true');
    expect(revokes.pagination.total).toBe(1);
    const second = await audit('?limit=2&page=2');
    expect(second.pagination).toEqual({ page: 2, limit: 2, total: 7, nextCursor: expect.any(String) });
    expect(second.data.map((e) => e.action)).toEqual(['claims.import', 'revoke']);
  });

  it('answers 400 naming the parameter for an unknown action; a failed change records nothing', async () => {
    const bad = await issuer.admin('/admin/audit?action=delete');
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { details: { field: string } }).details.field).toBe('action');
    expect((await issuer.admin('/admin/revoke', { revocationNonce: '999999' })).status).toBe(404);
    expect((await audit('?total=true')).pagination.total).toBe(7);
  });

  it('a wrong key is refused whatever the names; each named key works alone', async () => {
    expect((await issuer.admin('/admin/audit', undefined, as('nope'))).status).toBe(403);
    for (const key of [TEST_ADMIN_API_KEY, OPS_KEY, CI_KEY])
      expect((await issuer.admin('/admin/audit?limit=1', undefined, as(key))).status).toBe(200);
  });
});

// ADMIN_PORT: admin routes answer on the admin listener only.
describe('separate admin listener', () => {
  let issuer: TestIssuer;
  beforeAll(async () => {
    issuer = await startIssuer({ adminListener: true });
  });
  afterAll(() => issuer.close());

  it('serves admin routes on the admin listener and 404 for them on the public one', async () => {
    expect((await issuer.admin('/admin/keys')).status).toBe(200);
    const onPublic = await fetch(`${issuer.url}/admin/keys`, {
      headers: { 'x-admin-api-key': TEST_ADMIN_API_KEY },
    });
    expect(onPublic.status).toBe(404);
    expect((await fetch(`${issuer.url}/.well-known/did.json`)).status).toBe(200);
    expect((await fetch(`${issuer.adminUrl}/.well-known/did.json`)).status).toBe(404);
  });
});
