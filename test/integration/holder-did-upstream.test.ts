import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError } from '../helpers/errors.js';
import { queryStore, startIssuer, TEST_ADMIN_API_KEY, type TestIssuer } from '../helpers/issuer.js';
import { createMigratedDatabase, postgresAvailable, type TempDatabase } from '../helpers/services.js';

const postgres = await postgresAvailable('the holder DID initialize-user answers, on PostgreSQL');
const engines = postgres ? (['sqlite', 'postgres'] as const) : (['sqlite'] as const);

const subject = { givenName: 'A', familyName: 'B', memberSince: '2020-01-01', tier: 'gold', memberNumber: 1 };
const body = (userId: string) => ({
  userId,
  schemaId: 'membership-v1',
  vct: 'https://issuer.example/vct/membership-v1',
  expiration: new Date(Date.now() + 86_400_000).toISOString(),
  credentialSubject: subject,
});

// docs/interface.md "admin issue-vc": the holder DID initialize-user answers becomes `sub`, and
// follows the rules of `/issue-vc`'s holderDID; the console's CSV export neutralises formulas.
describe.each(engines)('holder DID from initialize-user and the CSV export (%s)', (engine) => {
  let issuer: TestIssuer;
  let db: TempDatabase | undefined;
  beforeAll(async () => {
    db = engine === 'postgres' ? await createMigratedDatabase() : undefined;
    issuer = await startIssuer(db ? { env: { DATABASE_URL: db.url } } : {});
  });
  afterAll(async () => {
    await issuer.close();
    await db?.drop();
  });
  /** The emulator's account for `email`, answering `did` from now on. */
  const answerDid = (email: string, did: string) => {
    const state = issuer.emulator!.state;
    const { holder } = state.resolveHolder(email, new Date());
    state.holders.set(holder.email, { ...holder, did });
  };

  it('HTML, CRLF or 3,000 bytes as the holder DID: 502 naming initialize-user, nothing signed, recorded or uploaded', async () => {
    const bad = [
      'did:example:<script>alert(1)</script>',
      'did:example:abc\r\nX-Injected: 1',
      `did:example:${'a'.repeat(3000)}`,
    ];
    for (const [i, did] of bad.entries()) {
      const email = `bad-did-${i}@example.org`;
      answerDid(email, did);
      const res = await issuer.admin('/admin/issue-vc', body(email));
      const error = await expectError(res, 502, 'UPSTREAM_UNAVAILABLE');
      expect(error.details).toMatchObject({ upstream: 'auth/initialize-user', field: 'did' });
    }
    const rows = await queryStore<{ n: number | string }>(
      issuer.ctx.store,
      'SELECT count(*) AS n FROM issuances',
    );
    expect(Number(rows[0]!.n)).toBe(0);
    expect(issuer.emulator!.state.envelopesOf(undefined)).toEqual([]);
    // A DID of the same rules is issued to.
    answerDid('good-did@example.org', 'did:example:good-holder');
    expect((await issuer.admin('/admin/issue-vc', body('good-did@example.org'))).status).toBe(201);
  });

  it('the console CSV writes a cell that starts with = + - @ or a tab as text', async () => {
    // No field the kit accepts starts with a formula character; a stored one stands for any such value.
    answerDid('csv-formula@example.org', 'did:example:plain');
    expect((await issuer.admin('/admin/issue-vc', body('csv-formula@example.org'))).status).toBe(201);
    const formulas = ['=HYPERLINK("http://evil.example")', '+1+1', '-2+3', '@SUM(A1)', '\tx', '\rx'];
    const [row] = await queryStore<{ credential_id: string }>(
      issuer.ctx.store,
      "SELECT credential_id FROM issuances WHERE holder_did = 'did:example:plain'",
    );
    const cookie = await signIn();
    for (const [i, f] of formulas.entries()) {
      await queryStore(issuer.ctx.store, 'UPDATE issuances SET schema_id = ? WHERE credential_id = ?', [
        f,
        row!.credential_id,
      ]);
      const res = await fetch(`${issuer.url}/console/issuances.csv?channel=direct`, { headers: { cookie } });
      expect(res.status).toBe(200);
      const parsed = parse(await res.text(), { columns: true }) as Array<Record<string, string>>;
      const cell = parsed.find((r) => r.credentialId === row!.credential_id)!.schemaId;
      expect(cell, `formula ${i}`).toBe(`'${f}`);
    }
  });

  const signIn = async () => {
    const res = await fetch(`${issuer.url}/console/sign-in`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', origin: issuer.url },
      body: new URLSearchParams({ key: TEST_ADMIN_API_KEY }),
    });
    return res.headers.get('set-cookie')!.split(';')[0]!;
  };
});
