import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { getListFromStatusListJWT } from '@sd-jwt/jwt-status-list';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { x5cToPem } from '../../src/keys/certificates.js';
import { issueDevLeaf, loadOrCreateDevCa } from '../../src/keys/dev-ca.js';
import { parseKeyFile } from '../../src/keys/key-ring.js';
import { postJson } from '../../src/outbound/http-json.js';
import { PartnerJwtSigner } from '../../src/service-client/partner-jwt.js';
import { type InitializedUser, ServiceClient } from '../../src/service-client/service-client.js';
import { runCli } from '../helpers/cli.js';
import { entryArgs } from '../helpers/entry.js';
import { removeDir, startIssuer, TEST_ADMIN_API_KEY, type TestIssuer, tempDir } from '../helpers/issuer.js';

/** The real hosting-service client with a hook before each holder lookup (passed in as a context override). */
class GatedServiceClient extends ServiceClient {
  beforeInitializeUser: (() => Promise<void>) | undefined;

  override async initializeUser(email: string): Promise<InitializedUser> {
    await this.beforeInitializeUser?.();
    return super.initializeUser(email);
  }
}
const HEADER =
  'email,expiration,credentialSubject.givenName,credentialSubject.familyName,credentialSubject.memberSince,credentialSubject.tier,credentialSubject.memberNumber';
const row = (email: string, tier = 'gold', n = 1) =>
  `${email},2099-01-01T00:00:00Z,"""Gi""",Fa,2020-01-01,${tier},${n}`;

interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

// The admin CLI against the real server: `runAdminCli` in this process (what scripts/admin.ts
// calls), and once as its own process where a real process matters (killed half way).
describe('admin CLI', () => {
  let issuer: TestIssuer;
  let serviceClient: GatedServiceClient;
  let work: string;

  const cliEnv = (env: Record<string, string | undefined>): Record<string, string> =>
    Object.fromEntries(
      Object.entries({
        NODE_ENV: 'test',
        ISSUER_URL: issuer.url,
        ADMIN_API_KEY: TEST_ADMIN_API_KEY,
        KEYS_DIR: join(work, 'cli-keys'),
        ...env,
      }).filter((e): e is [string, string] => e[1] !== undefined),
    );
  // The working folder holds no .env: the CLI's settings come from `env` only.
  const cli = (args: string[], env: Record<string, string | undefined> = {}): Promise<CliRun> =>
    runCli(args, cliEnv(env), work);
  const spawnCli = (args: string[]): ChildProcess =>
    spawn(process.execPath, entryArgs('scripts/admin.ts', ...args), {
      env: { ...process.env, ...cliEnv({}) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  const finish = async (child: ChildProcess): Promise<CliRun> => {
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (s: string) => (stdout += s));
    child.stderr!.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    const [code] = (await once(child, 'exit')) as [number | null];
    return { code, stdout, stderr };
  };
  const cliJson = async <T>(args: string[]) => {
    const run = await cli(['--json', ...args]);
    return { ...run, json: JSON.parse(run.stdout) as T };
  };
  const issuancesOf = async (email: string) => {
    const holder = issuer.emulator!.state.holderByEmail(email);
    if (!holder) return [];
    const page = (await (
      await issuer.admin(`/admin/issuance-history?limit=100&holderDid=${encodeURIComponent(holder.did)}`)
    ).json()) as { data: Array<{ credentialId: string }> };
    return page.data;
  };

  beforeAll(async () => {
    work = tempDir();
    issuer = await startIssuer({
      env: { STATUS_LIST_BITS: '2' },
      context: (config) => {
        serviceClient = new GatedServiceClient(
          () => config.serviceBaseUrl!,
          new PartnerJwtSigner({
            partnerId: config.partnerId!,
            identity: { origin: config.publicOrigin },
            key: () => issuer.ctx.keys.current().partner,
          }),
          postJson,
        );
        return { serviceClient };
      },
    });
  });
  afterAll(async () => {
    await issuer.close();
    removeDir(work);
  });

  it('issue: one credential, then a 400 from the server is a non-zero exit naming the field', async () => {
    const ok = await cliJson<{ outcome: string; credentialId: string; revocationNonce: string }>([
      'issue',
      '--email',
      'cli.single@example.org',
      '--schema',
      'membership-v1',
      '--vct',
      'urn:vct:cli',
      '--expiration',
      '2099-01-01T00:00:00Z',
      '--subject',
      JSON.stringify({
        givenName: 'Si',
        familyName: 'Ng',
        memberSince: '2020-01-01',
        tier: 'basic',
        memberNumber: 4,
      }),
    ]);
    expect(ok.code).toBe(0);
    expect(ok.json.outcome).toBe('issued');
    expect(issuer.emulator!.state.envelopes.has(ok.json.credentialId)).toBe(true);
    expect((await issuancesOf('cli.single@example.org')).map((r) => r.credentialId)).toEqual([
      ok.json.credentialId,
    ]);

    const subjectFile = join(work, 'subject.json');
    writeFileSync(subjectFile, '{"givenName":"Si"}');
    const bad = await cliJson<{ error: { status: number; code: string; details: { field: string } } }>([
      'issue',
      '--email',
      'support@example.org',
      '--schema',
      'membership-v1',
      '--vct',
      'urn:vct:cli',
      '--expiration',
      '2099-01-01T00:00:00Z',
      '--subject',
      `@${subjectFile}`,
    ]);
    expect(bad.code).toBe(1);
    expect(bad.json.error).toMatchObject({
      status: 400,
      code: 'INVALID_PARAMETER',
      details: { field: 'userId' },
    });
  });

  it('batch-issue: bad rows are all reported with line numbers and nothing is sent', async () => {
    const file = join(work, 'bad.csv');
    writeFileSync(
      file,
      [
        HEADER,
        row('fine.one@example.org'),
        row('noreply@example.org'),
        row('fine.two@example.org', 'bronze'),
        row('fine.three@example.org'),
        'late@example.org,2001-01-01,Gi,Fa,2020-01-01,gold,1',
      ].join('\n'),
    );
    const initializeCalls = issuer.emulator!.state.requests.filter(
      (r) => r.route === 'initialize-user',
    ).length;
    const run = await cliJson<{
      ok: boolean;
      sent: number;
      problems: Array<{ line: number; field: string }>;
    }>(['batch-issue', file, '--schema', 'membership-v1', '--vct', 'urn:vct:cli']);
    expect(run.code).toBe(1);
    expect(run.json.ok).toBe(false);
    expect(run.json.problems.map((p) => [p.line, p.field])).toEqual([
      [3, 'email'],
      [4, 'credentialSubject.tier'],
      [6, 'expiration'],
    ]);
    expect(issuer.emulator!.state.requests.filter((r) => r.route === 'initialize-user')).toHaveLength(
      initializeCalls,
    );
    expect(await issuancesOf('fine.one@example.org')).toEqual([]);
    expect(existsSync(`${file}.results.csv`)).toBe(false);
  });

  it('batch-issue: a run killed half way resumes with the same result file and issues no duplicates', async () => {
    const emails = Array.from({ length: 6 }, (_, i) => `resume.${i}@example.org`);
    const file = join(work, 'resume.csv');
    const results = join(work, 'resume-results.csv');
    writeFileSync(file, `${[HEADER, ...emails.map((e, i) => row(e, 'gold', i + 1))].join('\n')}\n`);

    // The server holds the 4th holder lookup until the CLI is dead, then finishes that issuance:
    // a row issued server-side whose answer never reached the result file.
    let calls = 0;
    let reached!: () => void;
    const reachedFourth = new Promise<void>((r) => (reached = r));
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let orphan: { credentialId: string } | undefined;
    serviceClient.beforeInitializeUser = async () => {
      if (++calls === 4) {
        reached();
        await released;
      }
    };
    try {
      const child = spawnCli([
        'batch-issue',
        file,
        '--schema',
        'membership-v1',
        // No --vct: the schema's own vct is used.
        '--concurrency',
        '1',
        '--out',
        results,
      ]);
      const exited = finish(child);
      await reachedFourth;
      child.kill('SIGKILL');
      await exited;
      // Owner-only from the first line: the results name holders.
      expect(statSync(results).mode & 0o777).toBe(0o600);
      const partial = readFileSync(results, 'utf8').trim().split('\n');
      expect(partial).toHaveLength(4);
      expect(partial.slice(1).map((l) => l.split(',')[1])).toEqual(emails.slice(0, 3));

      const uploaded = once(issuer.ctx.outbox, 'uploaded');
      release();
      [orphan] = (await uploaded) as [{ credentialId: string }];

      const resumed = await cliJson<{ skipped: number; sent: number; issued: number; failed: number }>([
        'batch-issue',
        file,
        '--schema',
        'membership-v1',
        // No --vct: the schema's own vct is used.
        '--concurrency',
        '2',
        '--out',
        results,
      ]);
      expect(resumed.code).toBe(0);
      expect(resumed.json).toMatchObject({ skipped: 3, sent: 3, issued: 3, failed: 0 });
    } finally {
      serviceClient.beforeInitializeUser = undefined;
    }

    const lines = readFileSync(results, 'utf8').trim().split('\n');
    expect(lines[0]).toBe('row,email,credentialId,revocationNonce,status,error');
    const byRow = lines.slice(1).map((l) => l.split(','));
    expect(byRow.map((c) => [c[0], c[1], c[4]])).toEqual(emails.map((e, i) => [String(i + 2), e, 'issued']));
    // Exactly one credential per holder; the row the dead run never recorded was replayed, not reissued.
    for (const [i, email] of emails.entries()) {
      const issued = await issuancesOf(email);
      expect(issued).toHaveLength(1);
      expect(issued[0]!.credentialId).toBe(byRow[i]![2]);
    }
    expect(byRow[3]![2]).toBe(orphan!.credentialId);
  });

  it('revoke, suspend, unsuspend and status by nonce', async () => {
    const issued = (await (
      await issuer.admin('/admin/issue-vc', {
        userId: 'cli.revoke@example.org',
        schemaId: 'membership-v1',
        vct: 'urn:vct:cli',
        expiration: '2099-01-01T00:00:00Z',
        credentialSubject: {
          givenName: 'R',
          familyName: 'V',
          memberSince: '2020-01-01',
          tier: 'gold',
          memberNumber: 8,
        },
      })
    ).json()) as { revocationNonce: string; status: { idx: number; uri: string } };
    const nonce = issued.revocationNonce;
    expect((await cliJson<Array<{ status: string }>>(['suspend', nonce])).json[0]!.status).toBe('suspended');
    expect((await cliJson<{ status: string }>(['status', nonce])).json).toMatchObject({
      isRevoked: false,
      status: 'suspended',
    });
    expect((await cliJson<Array<{ status: string }>>(['unsuspend', nonce])).json[0]!.status).toBe('valid');
    const revoked = await cliJson<Array<{ ok: boolean; status: string; revocationNonce: string }>>([
      'revoke',
      nonce,
      '123',
    ]);
    expect(revoked.code).toBe(1);
    expect(revoked.json[0]).toMatchObject({ ok: true, status: 'revoked', revocationNonce: nonce });
    expect(revoked.json[1]).toMatchObject({ ok: false });
    const status = await cli(['status', nonce]);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain('revoked');
    // The CLI's revoke reaches the token status list too.
    const list = getListFromStatusListJWT(await (await fetch(issued.status.uri)).text());
    expect(list.getStatus(issued.status.idx)).toBe(1);
  });

  it('history --json and as a table', async () => {
    const page = await cliJson<{
      data: Array<Record<string, unknown>>;
      pagination: { total: number; limit: number };
    }>(['history', '--schema', 'membership-v1', '--limit', '2']);
    expect(page.code).toBe(0);
    expect(page.json.data).toHaveLength(2);
    expect(page.json.pagination.limit).toBe(2);
    const all = await cliJson<{ data: Array<{ credentialId: string }>; pagination: { total: number } }>([
      'history',
      '--all',
    ]);
    expect(all.json.data).toHaveLength(all.json.pagination.total);
    // --cursor continues where a page ended (docs/interface.md "Paging"); --all walks the same way.
    const ids: string[] = [];
    let cursor: string | null = null;
    do {
      const next: {
        json: { data: Array<{ credentialId: string }>; pagination: { nextCursor: string | null } };
      } = await cliJson(['history', '--limit', '2', ...(cursor ? ['--cursor', cursor] : [])]);
      ids.push(...next.json.data.map((r) => r.credentialId));
      cursor = next.json.pagination.nextCursor;
    } while (cursor);
    expect(ids).toEqual(all.json.data.map((r) => r.credentialId));
    const table = await cli(['history', '--limit', '1']);
    expect(table.stdout).toMatch(/next page: --cursor \S+/);
    const pair = await cliJson<{ error: { details: { field: string } } }>([
      'history',
      '--cursor',
      'x',
      '--page',
      '2',
    ]);
    expect(pair.json.error.details.field).toBe('cursor');
    const revoked = await cliJson<{ data: Array<{ status: string }> }>(['history', '--status', 'revoked']);
    expect(revoked.json.data.map((r) => r.status)).toEqual(['revoked']);
    const bad = await cliJson<{ error: { status: number; details: { field: string } } }>([
      'history',
      '--limit',
      '500',
    ]);
    expect(bad.code).toBe(1);
    expect(bad.json.error).toMatchObject({ status: 400, details: { field: 'limit' } });
    const text = await cli(['history', '--limit', '3']);
    expect(text.stdout.split('\n')[0]).toMatch(/^created\s+nonce\s+status/);
  });

  it('claims import (JSON and CSV), publish-status-lists, keys, did', async () => {
    const json = join(work, 'claims.json');
    writeFileSync(
      json,
      JSON.stringify([
        {
          userId: 'cli-claims-1',
          claims: {
            givenName: 'A',
            familyName: 'B',
            memberSince: '2020-01-01',
            tier: 'gold',
            memberNumber: 1,
          },
        },
      ]),
    );
    const imported = await cliJson<{ upserted: number }>([
      'claims',
      'import',
      json,
      '--schema',
      'membership-v1',
    ]);
    expect(imported.code).toBe(0);
    expect(imported.json.upserted).toBe(1);
    expect(await issuer.ctx.store.claims.getClaims('cli-claims-1', 'membership-v1')).toBeDefined();
    const csv = join(work, 'claims.csv');
    writeFileSync(
      csv,
      [
        'userId,expiresAt,credentialSubject.givenName,credentialSubject.familyName,credentialSubject.memberSince,credentialSubject.tier,credentialSubject.memberNumber',
        'cli-claims-2,,C,D,2020-01-01,basic,2',
        'cli-claims-3,2099-01-01T00:00:00Z,E,F,2020-01-01,bronze,3',
      ].join('\n'),
    );
    const rejected = await cliJson<{ ok: boolean; problems: Array<{ at: string; field: string }> }>([
      'claims',
      'import',
      csv,
      '--schema',
      'membership-v1',
    ]);
    expect(rejected.code).toBe(1);
    expect(rejected.json.problems.map((p) => [p.at, p.field])).toEqual([['line 3', 'claims.tier']]);
    expect(await issuer.ctx.store.claims.getClaims('cli-claims-2', 'membership-v1')).toBeUndefined();

    const published = await cliJson<{ partitions: unknown[] }>(['publish-status-lists']);
    expect(published.code).toBe(0);
    expect(published.json.partitions.length).toBeGreaterThan(0);

    const before = issuer.ctx.keys.current().signing.kid;
    const rotated = await cliJson<{ created: { kid: string } }>(['keys', 'rotate']);
    expect(rotated.code).toBe(0);
    expect(issuer.ctx.keys.current().signing.kid).toBe(rotated.json.created.kid);
    const listed = await cliJson<{ keys: Array<{ kid: string; active: boolean }> }>(['keys', 'list']);
    expect(listed.json.keys.find((k) => k.kid === before)).toMatchObject({ active: false });

    const generated = await cliJson<Array<{ purpose: string; created: boolean }>>(['keys', 'generate']);
    expect(generated.json.map((k) => [k.purpose, k.created])).toEqual([
      ['credential-signing', true],
      ['partner-jwt', true],
      ['iden3-bjj', true],
    ]);
    expect(
      (await cliJson<Array<{ created: boolean }>>(['keys', 'generate'])).json.every((k) => !k.created),
    ).toBe(true);

    // A standby key with a CSR, then a certificate chain attached to it (files).
    const csrFile = join(work, 'next.csr');
    const prepared = await cliJson<{ kid: string; file: string; csr: string }>([
      'keys',
      'prepare',
      '--csr',
      csrFile,
    ]);
    expect(prepared.code).toBe(0);
    expect(readFileSync(csrFile, 'utf8')).toMatch(/^-----BEGIN CERTIFICATE REQUEST-----/);
    const ca = await loadOrCreateDevCa(join(work, 'ca'));
    const standby = await parseKeyFile(prepared.json.file);
    const chainFile = join(work, 'chain.pem');
    writeFileSync(
      chainFile,
      x5cToPem(await issueDevLeaf(ca, standby.publicKey, 'https://elsewhere.example')),
    );
    const wrongHost = await cli(['keys', 'certificate', '--', prepared.json.kid, chainFile]);
    expect(wrongHost.code).toBe(1);
    expect(wrongHost.stderr).toMatch(/does not name IP address 127\.0\.0\.1/);
    writeFileSync(chainFile, x5cToPem(await issueDevLeaf(ca, standby.publicKey, issuer.url)));
    const attached = await cliJson<{ kid: string; certificates: number }>([
      'keys',
      'certificate',
      '--',
      prepared.json.kid,
      chainFile,
    ]);
    expect(attached.code).toBe(0);
    expect(attached.json).toMatchObject({ kid: prepared.json.kid, certificates: 2 });
    expect((await parseKeyFile(prepared.json.file)).x5c).toHaveLength(2);

    const did = await cliJson<{ didWeb: string; iden3: string | null }>(['did']);
    expect(did.json.didWeb).toBe(`did:web:${new URL(issuer.url).host.replace(':', '%3A')}`);
    expect(did.json.iden3).toMatch(/^did:iden3:/);
  });

  it('fails without a usable admin key', async () => {
    const forbidden = await cli(['--json', 'history'], { ADMIN_API_KEY: 'x'.repeat(40) });
    expect(forbidden.code).toBe(1);
    expect(JSON.parse(forbidden.stdout).error).toMatchObject({ status: 403, code: 'FORBIDDEN' });
    const missing = await cli(['--json', 'history'], { ADMIN_API_KEY: undefined });
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.stdout).error).toMatchObject({ code: 'NO_ADMIN_KEY' });
  });
});
