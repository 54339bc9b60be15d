import { decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifySdJwtVc } from '../helpers/holder-sd-jwt-verifier.js';
import { issueDirectlyAndOpen } from '../helpers/issue-and-open.js';
import { startIssuer, type TestIssuer } from '../helpers/issuer.js';

interface KeyView {
  kid: string;
  purpose: string;
  active: boolean;
  createdAt: string;
  retiredAt: string | null;
  published: boolean;
  lastCredentialExpiresAt?: string | null;
}

// Key rotation (docs/security.md "Issuer identification"): the new key signs from then on, retired keys
// stay published until the last credential they signed has expired.
describe('admin key rotation', () => {
  let issuer: TestIssuer;
  const issueAndOpen = () =>
    issueDirectlyAndOpen(issuer, { emailPrefix: 'rotation', validForMs: 30 * 86_400_000 });
  const keys = async () => ((await (await issuer.admin('/admin/keys')).json()) as { keys: KeyView[] }).keys;
  const publishedKids = async () => {
    const meta = (await (await fetch(`${issuer.url}/.well-known/jwt-vc-issuer`)).json()) as {
      jwks: { keys: Array<{ kid: string }> };
    };
    return meta.jwks.keys.map((k) => k.kid).sort();
  };

  beforeAll(async () => {
    issuer = await startIssuer();
  });
  afterAll(async () => {
    await issuer.close();
  });

  it('lists one active key per purpose at start', async () => {
    const all = await keys();
    expect(all.map((k) => [k.purpose, k.active, k.published])).toEqual([
      ['credential-signing', true, true],
      ['partner-jwt', true, true],
    ]);
  });

  it('rotates: new credentials carry the new kid, old ones still verify through the published JWKS', async () => {
    const oldKid = issuer.ctx.keys.current().signing.kid;
    const before = await issueAndOpen();
    expect(decodeProtectedHeader(before.split('~')[0]!).kid).toBe(oldKid);

    const res = await issuer.admin('/admin/keys/rotate', {});
    expect(res.status).toBe(200);
    const rotated = (await res.json()) as {
      purpose: string;
      created: KeyView;
      retired: KeyView[];
      statusListsRepublished: number;
    };
    expect(rotated.purpose).toBe('credential-signing');
    expect(rotated.retired.map((k) => k.kid)).toEqual([oldKid]);
    expect(rotated.statusListsRepublished).toBeGreaterThanOrEqual(1);
    const newKid = rotated.created.kid;
    expect(newKid).not.toBe(oldKid);
    expect(issuer.ctx.keys.current().signing.kid).toBe(newKid);

    const after = await issueAndOpen();
    expect(decodeProtectedHeader(after.split('~')[0]!).kid).toBe(newKid);
    expect(await publishedKids()).toEqual([oldKid, newKid].sort());
    for (const compact of [before, after]) {
      const verified = await verifySdJwtVc(issuer.url, compact);
      expect(verified.payload).toMatchObject({ vct: 'urn:vct:membership' });
    }
    const did = (await (await fetch(`${issuer.url}/.well-known/did.json`)).json()) as {
      verificationMethod: Array<{ id: string }>;
    };
    expect(did.verificationMethod.map((m) => m.id.split('#')[1]).sort()).toEqual([oldKid, newKid].sort());

    // Status lists are re-signed with the new key at once.
    const statusUri = (verifiedStatus(after) as { uri: string }).uri;
    const token = await (await fetch(statusUri)).text();
    expect(decodeProtectedHeader(token).kid).toBe(newKid);

    const listed = await keys();
    const old = listed.find((k) => k.kid === oldKid)!;
    expect(old).toMatchObject({ active: false, published: true, retiredAt: expect.any(String) });
    expect(old.lastCredentialExpiresAt).toMatch(/Z$/);
    expect(listed.find((k) => k.kid === newKid)).toMatchObject({
      active: true,
      published: true,
      retiredAt: null,
    });
  });

  it('a retired key that signed nothing still unexpired is no longer published', async () => {
    const idle = ((await (await issuer.admin('/admin/keys/rotate', {})).json()) as { created: KeyView })
      .created.kid;
    const next = ((await (await issuer.admin('/admin/keys/rotate', {})).json()) as { created: KeyView })
      .created.kid;
    const kids = await publishedKids();
    expect(kids).toContain(next);
    expect(kids).not.toContain(idle);
    expect((await keys()).find((k) => k.kid === idle)).toMatchObject({ active: false, published: false });
  });

  it('rotates the partner JWT key; direct issuance keeps working with the new kid', async () => {
    const oldKid = issuer.ctx.keys.current().partner.kid;
    const res = await issuer.admin('/admin/keys/rotate', { purpose: 'partner-jwt' });
    expect(res.status).toBe(200);
    const newKid = issuer.ctx.keys.current().partner.kid;
    expect(newKid).not.toBe(oldKid);
    await issueAndOpen();
    const jwks = (await (await fetch(`${issuer.url}/.well-known/jwks.json`)).json()) as {
      keys: Array<{ kid: string }>;
    };
    expect(jwks.keys.map((k) => k.kid)).toContain(newKid);
  });

  it('an unknown purpose is a 400 naming it', async () => {
    const res = await issuer.admin('/admin/keys/rotate', { purpose: 'iden3' });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { details: { field: string } }).details.field).toBe('purpose');
  });
});

function verifiedStatus(compact: string): unknown {
  const payload = JSON.parse(Buffer.from(compact.split('~')[0]!.split('.')[1]!, 'base64url').toString()) as {
    status: { status_list: unknown };
  };
  return payload.status.status_list;
}
