import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEnvelope, privateKeyFromPkcs8Hex } from '../../src/envelope/index.js';
import { runCli } from '../helpers/cli.js';
import { expectError } from '../helpers/errors.js';
import { verifySdJwtVc } from '../helpers/holder-sd-jwt-verifier.js';
import { removeDir, startIssuer, TEST_ADMIN_API_KEY, type TestIssuer, tempDir } from '../helpers/issuer.js';

const ALICE = {
  givenName: 'Ada',
  familyName: 'Lovelace',
  memberSince: '2019-05-01',
  tier: 'gold',
  memberNumber: 7,
};
const BOB = {
  givenName: 'Bob',
  familyName: 'Smit',
  memberSince: '2022-01-01',
  tier: 'basic',
  memberNumber: 8,
};
const YEAR_SECONDS = 31_536_000; // membership-v1 expiresInSeconds
const inOneYear = () => new Date(Date.now() + 365 * 86400_000).toISOString().replace(/\.\d{3}Z$/, 'Z');

let counter = 0;
const nextEmail = () => `claims.user.${Date.now()}.${counter++}@example.org`;

/** A TCP port nobody listens on: the claims provider of `remote-v1` is down. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as { port: number };
  await new Promise<void>((done) => server.close(() => done()));
  return port;
}

// docs/interface.md "admin issue-vc" with `claimsUserId`: the claims come from the schema's claims
// provider (sqlite, filled by `admin claims import`), over HTTP and through the admin CLI.
describe('direct issuance of a claims provider user', () => {
  let issuer: TestIssuer;
  let work: string;
  const cli = (args: string[]) =>
    runCli(
      args,
      { ISSUER_URL: issuer.url, ADMIN_API_KEY: TEST_ADMIN_API_KEY, KEYS_DIR: join(work, 'cli-keys') },
      work,
    );
  const initializeCalls = () =>
    issuer.emulator!.state.requests.filter((r) => r.route === 'initialize-user').length;
  /** The credential as the holder the email resolves to opens and verifies it. */
  const opened = async (email: string, credentialId: string) => {
    const holder = issuer.emulator!.state.holderByEmail(email)!;
    const stored = issuer.emulator!.state.envelopes.get(credentialId)!;
    const compact = openEnvelope(
      privateKeyFromPkcs8Hex(holder.privateKeyPkcs8Hex),
      stored.envelope,
    ) as string;
    return { compact, verified: await verifySdJwtVc(issuer.url, compact) };
  };
  const body = (overrides: Record<string, unknown> = {}) => ({
    userId: nextEmail(),
    schemaId: 'membership-v1',
    vct: 'urn:vct:membership',
    expiration: inOneYear(),
    claimsUserId: 'claims-alice',
    ...overrides,
  });

  beforeAll(async () => {
    work = tempDir();
    const schemas = join(work, 'schemas');
    cpSync(resolve('schemas'), schemas, { recursive: true });
    writeFileSync(
      join(schemas, 'remote.json'),
      JSON.stringify({
        schemaId: 'remote-v1',
        title: 'Remote',
        proofTypes: ['SD_JWT_VC'],
        expiresInSeconds: 60,
        credentialSubject: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
        claims: { provider: 'http', url: `http://127.0.0.1:${await closedPort()}/lookup`, timeoutMs: 500 },
        sdJwt: { vct: 'urn:vct:remote' },
      }),
    );
    issuer = await startIssuer({ env: { SCHEMAS_DIR: schemas }, exampleClaimsFile: '' });
    const claims = join(work, 'claims.json');
    writeFileSync(
      claims,
      JSON.stringify([
        { userId: 'claims-alice', claims: ALICE },
        { userId: 'claims-bob', claims: BOB },
      ]),
    );
    const imported = await cli(['claims', 'import', claims, '--schema', 'membership-v1']);
    expect(imported.code).toBe(0);
  });
  afterAll(async () => {
    await issuer.close();
    removeDir(work);
  });

  it('issues the claims provider’s claims for that user, every top-level claim disclosable', async () => {
    const req = body();
    const res = await issuer.admin('/admin/issue-vc', req);
    expect(res.status).toBe(201);
    const answer = (await res.json()) as { credentialId: string };
    const { compact, verified } = await opened(req.userId, answer.credentialId);
    expect(verified.claims).toMatchObject(ALICE);
    const raw = decodeJwt(compact.split('~')[0]!) as { _sd: unknown[] };
    expect(raw._sd).toHaveLength(Object.keys(ALICE).length);
    expect(await issuer.ctx.store.issuances.get(answer.credentialId)).toMatchObject({ channel: 'direct' });
  });

  it('a disclosureFrame applies to the provider’s claims, and one that does not fit is a 400', async () => {
    const req = body({ disclosureFrame: { _sd: ['tier'] } });
    const res = await issuer.admin('/admin/issue-vc', req);
    expect(res.status).toBe(201);
    const { compact } = await opened(
      req.userId,
      ((await res.json()) as { credentialId: string }).credentialId,
    );
    const raw = decodeJwt(compact.split('~')[0]!) as Record<string, unknown>;
    expect(raw).toMatchObject({ givenName: 'Ada', memberNumber: 7 });
    expect(raw.tier).toBeUndefined();

    const before = initializeCalls();
    await expectError(
      await issuer.admin('/admin/issue-vc', body({ disclosureFrame: { _sd: ['nickname'] } })),
      400,
      'INVALID_PARAMETER',
      'disclosureFrame._sd.0',
    );
    expect(initializeCalls()).toBe(before);
  });

  it('a user the provider has nothing for is 404 NOT_FOUND naming claimsUserId; no account is created', async () => {
    const before = initializeCalls();
    await expectError(
      await issuer.admin('/admin/issue-vc', body({ claimsUserId: 'nobody' })),
      404,
      'NOT_FOUND',
      'claimsUserId',
    );
    expect(initializeCalls()).toBe(before);
  });

  it('exactly one of credentialSubject and claimsUserId: 400 naming the field', async () => {
    await expectError(
      await issuer.admin('/admin/issue-vc', body({ credentialSubject: ALICE })),
      400,
      'INVALID_PARAMETER',
      'claimsUserId',
    );
    await expectError(
      await issuer.admin('/admin/issue-vc', body({ claimsUserId: undefined })),
      400,
      'INVALID_PARAMETER',
      'credentialSubject',
    );
    await expectError(
      await issuer.admin('/admin/issue-vc', body({ claimsUserId: '' })),
      400,
      'INVALID_PARAMETER',
      'claimsUserId',
    );
  });

  it('a claims provider that cannot answer is 502 UPSTREAM_UNAVAILABLE', async () => {
    const before = initializeCalls();
    await expectError(
      await issuer.admin(
        '/admin/issue-vc',
        body({ schemaId: 'remote-v1', vct: 'urn:vct:remote', claimsUserId: 'anyone' }),
      ),
      502,
      'UPSTREAM_UNAVAILABLE',
    );
    expect(initializeCalls()).toBe(before);
    const check = await issuer.admin('/admin/issue-vc/validate', {
      rows: [{ schemaId: 'remote-v1', claimsUserId: 'anyone' }],
    });
    await expectError(check, 502, 'UPSTREAM_UNAVAILABLE');
  });

  it('/admin/issue-vc/validate agrees: the same rules, the same problems', async () => {
    const res = await issuer.admin('/admin/issue-vc/validate', {
      rows: [
        { schemaId: 'membership-v1', claimsUserId: 'claims-alice' },
        { schemaId: 'membership-v1', claimsUserId: 'nobody' },
        { schemaId: 'membership-v1', claimsUserId: 'claims-bob', disclosureFrame: { _sd: ['nickname'] } },
        { schemaId: 'membership-v1', credentialSubject: ALICE },
      ],
    });
    expect(res.status).toBe(200);
    const answer = (await res.json()) as {
      problems: Array<{ row: number; field: string }>;
      expiresInSeconds: Record<string, number>;
    };
    expect(answer.problems.map((p) => [p.row, p.field])).toEqual([
      [1, 'claimsUserId'],
      [2, 'disclosureFrame._sd.0'],
    ]);
    expect(answer.expiresInSeconds['membership-v1']).toBe(YEAR_SECONDS);
    for (const [row, field] of [
      [{ schemaId: 'membership-v1', claimsUserId: 'claims-alice', credentialSubject: ALICE }, 'claimsUserId'],
      [{ schemaId: 'membership-v1' }, 'credentialSubject'],
    ] as const) {
      await expectError(
        await issuer.admin('/admin/issue-vc/validate', { rows: [row] }),
        400,
        'INVALID_PARAMETER',
        `rows.0.${field}`,
      );
    }
  });

  it('admin issue --user: the provider’s claims, the schema’s lifetime, no --subject', async () => {
    const email = nextEmail();
    const run = await cli([
      '--json',
      'issue',
      '--schema',
      'membership-v1',
      '--email',
      email,
      '--user',
      'claims-bob',
    ]);
    expect(run.code).toBe(0);
    const answer = JSON.parse(run.stdout) as { outcome: string; credentialId: string };
    expect(answer.outcome).toBe('issued');
    const { verified } = await opened(email, answer.credentialId);
    expect(verified.claims).toMatchObject(BOB);
    const record = await issuer.ctx.store.issuances.get(answer.credentialId);
    // The default expiration is the schema's lifetime from when the command ran.
    expect(record!.expiresAt.getTime() - record!.createdAt.getTime()).toBeGreaterThan(
      (YEAR_SECONDS - 3600) * 1000,
    );

    const nobody = await cli([
      '--json',
      'issue',
      '--schema',
      'membership-v1',
      '--email',
      nextEmail(),
      '--user',
      'nobody',
    ]);
    expect(nobody.code).toBe(1);
    expect(JSON.parse(nobody.stdout).error).toMatchObject({ status: 404, code: 'NOT_FOUND' });

    for (const args of [['--user', 'claims-bob', '--subject', JSON.stringify(BOB)], []]) {
      const both = await cli([
        '--json',
        'issue',
        '--schema',
        'membership-v1',
        '--email',
        nextEmail(),
        ...args,
      ]);
      expect(both.code).toBe(1);
      expect(JSON.parse(both.stdout).error).toMatchObject({ code: 'CLI' });
    }
  });

  it('admin batch-issue with a user column and no expiration: the provider’s claims, the schema’s lifetime', async () => {
    const emails = [nextEmail(), nextEmail()];
    const file = join(work, 'by-user.csv');
    writeFileSync(file, ['email,user', `${emails[0]},claims-alice`, `${emails[1]},claims-bob`].join('\n'));
    const run = await cli(['--json', 'batch-issue', file, '--schema', 'membership-v1']);
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ total: 2, issued: 2, failed: 0 });
    const results = readFileSync(`${file}.results.csv`, 'utf8').trim().split('\n').slice(1);
    const ids = results.map((line) => line.split(',')[2]!);
    for (const [i, subject] of [ALICE, BOB].entries()) {
      const { verified } = await opened(emails[i]!, ids[i]!);
      expect(verified.claims).toMatchObject(subject);
      const record = await issuer.ctx.store.issuances.get(ids[i]!);
      expect(record!.expiresAt.getTime() - record!.createdAt.getTime()).toBeGreaterThan(
        (YEAR_SECONDS - 3600) * 1000,
      );
    }

    // A user the provider does not know is found before anything is sent, on its line.
    const bad = join(work, 'bad-user.csv');
    writeFileSync(bad, ['email,user', `${nextEmail()},claims-alice`, `${nextEmail()},nobody`].join('\n'));
    const before = initializeCalls();
    const refused = await cli(['--json', 'batch-issue', bad, '--schema', 'membership-v1']);
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stdout)).toMatchObject({
      ok: false,
      sent: 0,
      problems: [{ line: 3, field: 'user' }],
    });
    expect(initializeCalls()).toBe(before);
  });
});
