import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { removeDir, startIssuer, TEST_ADMIN_API_KEY, type TestIssuer, tempDir } from '../helpers/issuer.js';

const SUBJECT =
  '{"givenName":"A","familyName":"B","memberSince":"2020-01-01","tier":"gold","memberNumber":1}';

// The admin CLI as its users found it: runAdminCli in this process against a real server.
describe('admin CLI usability', () => {
  let issuer: TestIssuer;
  const work = tempDir();

  const cli = (args: string[], url?: string) =>
    runCli(args, { ISSUER_URL: url ?? issuer.url, ADMIN_API_KEY: TEST_ADMIN_API_KEY }, work);

  beforeAll(async () => {
    issuer = await startIssuer();
  });
  afterAll(async () => {
    await issuer.close();
    removeDir(work);
  });

  it('--version prints the package version', async () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
    expect((await cli(['--version'])).stdout.trim()).toBe(pkg.version);
  });

  it('completion bash is a valid script listing the commands and their options', async () => {
    const run = await cli(['completion', 'bash']);
    expect(run.code).toBe(0);
    const file = join(work, 'admin.bash');
    writeFileSync(file, run.stdout);
    execFileSync('bash', ['-n', file]);
    for (const word of [
      'issue',
      'batch-issue',
      'doctor',
      'history',
      'completion',
      '--wide',
      '--on-duplicate',
    ])
      expect(run.stdout).toContain(word);
    expect(run.stdout).toMatch(/"claims"\) words="import /);
    // Completing `admin claims ` in a real bash offers the sub-command.
    const offered = execFileSync('bash', [
      '-c',
      `source ${file}; COMP_WORDS=(admin claims ""); COMP_CWORD=2; _issuer_kit_admin; echo "\${COMPREPLY[@]}"`,
    ]).toString();
    expect(offered.trim().split(' ')).toContain('import');
    expect((await cli(['completion', 'zsh'])).stdout).toMatch(/^#compdef admin/);
    expect((await cli(['completion', 'fish'])).stderr).toMatch(/allowed: bash, zsh/);
  });

  it('issue: --vct and --expiration default from the schema; --help marks what is required; a different --vct warns', async () => {
    const help = await cli(['issue', '--help']);
    expect(help.stdout).toMatch(/--email <email>\s+\(required\)/);
    expect(help.stdout).toMatch(/--vct <vct>\s+SD-JWT vct \(default: the schema's sdJwt.vct\)/);
    expect(help.stdout).toMatch(/allow issues\s+another/);
    expect(help.stdout).toMatch(/default:\s+"allow"/);

    const run = await cli([
      '--json',
      'issue',
      '--email',
      'ux.one@example.org',
      '--schema',
      'membership-v1',
      '--subject',
      SUBJECT,
    ]);
    expect(run.code).toBe(0);
    const answer = JSON.parse(run.stdout) as { outcome: string; credentialId: string };
    expect(answer.outcome).toBe('issued');
    const record = await issuer.ctx.store.issuances.get(answer.credentialId);
    const lifetime = record!.expiresAt.getTime() - record!.createdAt.getTime();
    expect(Math.abs(lifetime - 31_536_000_000)).toBeLessThan(60_000);

    const other = await cli([
      'issue',
      '--email',
      'ux.two@example.org',
      '--schema',
      'membership-v1',
      '--subject',
      SUBJECT,
      '--vct',
      'urn:vct:other',
    ]);
    expect(other.code).toBe(0);
    expect(other.stderr).toMatch(
      /warning: --vct urn:vct:other differs from the schema's vct https:\/\/issuer.example\/vct\/membership-v1/,
    );
  });

  it('schemas validate: every layer of problems in one run (format, JSON Schema, claims module, Iden3 context)', async () => {
    const dir = join(work, 'layers');
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, 'layers-v1.json'),
      JSON.stringify({
        schemaId: 'layers-v1',
        proofTypes: ['SD_JWT_VC', 'BJJ_SIG_2021'],
        expiresInSeconds: -1,
        credentialSubject: { type: 'object', properties: { iss: { type: 'string' }, n: { type: 'nope' } } },
        claims: { provider: 'module', path: 'missing-provider.mjs' },
        iden3: {
          type: 'Layers',
          contextUrl: 'https://issuer.example/contexts/layers-v1.jsonld',
          contextFile: 'contexts/missing.jsonld',
          jsonSchemaUrl: 'https://issuer.example/schemas/layers-v1.json',
        },
      }),
    );
    const run = await cli(['schemas', 'validate', join(dir, 'layers-v1.json')]);
    expect(run.code).toBe(1);
    const lines = run.stderr.trim().split('\n');
    for (const layer of [
      /: expiresInSeconds: /,
      /: credentialSubject.properties: reserved claim names iss/,
      /: credentialSubject: not a valid JSON Schema/,
      /: claims.path missing-provider.mjs: cannot be read/,
      /: iden3.contextFile: /,
    ])
      expect(
        lines.filter((l) => layer.test(l)),
        String(layer),
      ).toHaveLength(1);
  });

  it('issue: takes the claims as --claims too (the name offer gives them), naming that flag in a refusal', async () => {
    const args = ['issue', '--email', 'ux.claims@example.org', '--schema', 'membership-v1'];
    const run = await cli(['--json', ...args, '--claims', SUBJECT]);
    expect(run.code, run.stderr).toBe(0);
    const answer = JSON.parse(run.stdout) as { outcome: string; credentialId: string };
    expect(answer.outcome).toBe('issued');
    expect((await issuer.ctx.store.issuances.get(answer.credentialId))?.schemaId).toBe('membership-v1');
    const bad = await cli([...args, '--claims', 'not json']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--claims: not valid JSON/);
    const both = await cli([...args, '--claims', SUBJECT, '--subject', SUBJECT]);
    expect(both.code).toBe(1);
    expect(both.stderr).toMatch(/--subject or --claims/);
  });

  it('issue: problems name the CLI flag and list the allowed values of an enum', async () => {
    const run = await cli([
      'issue',
      '--email',
      'ux.three@example.org',
      '--schema',
      'membership-v1',
      '--subject',
      SUBJECT.replace('"gold"', '"silver"'),
    ]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/--subject tier: must be one of "basic", "gold", "platinum"/);
    expect(run.stderr).not.toMatch(/credentialSubject/);
    const email = await cli([
      'issue',
      '--email',
      'not-an-email',
      '--schema',
      'membership-v1',
      '--subject',
      SUBJECT,
    ]);
    expect(email.code).toBe(1);
    expect(email.stderr).toMatch(/--email/);
    expect(email.stderr).not.toMatch(/userId/);
  });

  it('claims import: one line per problem, plain dates for expiresAt, --reason in the audit log', async () => {
    const records = Array.from({ length: 51 }, (_, i) => ({ userId: `u${i}`, claims: { tier: 'gold' } }));
    const file = join(work, 'claims.json');
    writeFileSync(file, JSON.stringify(records));
    const bad = await cli(['claims', 'import', file]);
    expect(bad.code).toBe(1);
    expect(bad.stderr.trim().split('\n')).toEqual([
      'record 1, record 2, record 3 and 48 more: schemaId: required (in the file or with --schema)',
      'nothing was imported',
    ]);

    const csv = join(work, 'claims.csv');
    writeFileSync(
      csv,
      'userId,expiresAt,credentialSubject.givenName,credentialSubject.familyName,credentialSubject.memberSince,credentialSubject.tier,credentialSubject.memberNumber\n' +
        'ux.csv@example.org,2099-06-30,"""G""",F,2020-01-01,gold,3\n',
    );
    const noSchema = await cli(['claims', 'import', csv]);
    expect(noSchema.stderr).toMatch(/^line 1: schemaId: no schemaId column and no --schema option$/m);
    const ok = await cli(['claims', 'import', csv, '--schema', 'membership-v1', '--reason', 'spring intake']);
    expect(ok.stderr).toBe('');
    expect(ok.code).toBe(0);
    const row = await issuer.ctx.store.claims.getClaims('ux.csv@example.org', 'membership-v1');
    expect(row?.expiresAt?.toISOString()).toBe('2099-06-30T00:00:00.000Z');
    const audit = await cli(['--json', 'audit', '--action', 'claims.import']);
    expect(JSON.parse(audit.stdout).data[0]).toMatchObject({
      action: 'claims.import',
      reason: 'spring intake',
    });
  });

  it('history: a narrow table by default, every column with --wide', async () => {
    const narrow = await cli(['history']);
    const header = narrow.stdout.split('\n')[0]!;
    expect(header.split(/\s+/)).toEqual([
      'created',
      'nonce',
      'status',
      'upload',
      'schemaId',
      'holder',
      'statusIdx',
    ]);
    const wide = await cli(['history', '--wide']);
    expect(wide.stdout.split('\n')[0]!.split(/\s+/)).toEqual([
      'created',
      'nonce',
      'status',
      'upload',
      'schemaId',
      'proofType',
      'expires',
      'holderDid',
      'credentialId',
      'statusIdx',
      'statusList',
    ]);
    // The table shows what --json says: each SD-JWT VC's index and list.
    const asJson = JSON.parse((await cli(['--json', 'history'])).stdout) as {
      data: Array<{ credentialId: string; statusList: { idx: number; uri: string } | null }>;
    };
    const listed = asJson.data.find((r) => r.statusList !== null);
    expect(listed).toBeDefined();
    const row = wide.stdout.split('\n').find((l) => l.includes(listed!.credentialId))!;
    expect(row.split(/\s+/).slice(-2)).toEqual([String(listed!.statusList!.idx), listed!.statusList!.uri]);
  });

  it('publish-status-lists prints ISO 8601 times where the API has epoch seconds', async () => {
    const table = await cli(['publish-status-lists']);
    expect(table.code).toBe(0);
    const asJson = JSON.parse((await cli(['--json', 'publish-status-lists'])).stdout) as {
      partitions: Array<{ iat: number }>;
    };
    expect(typeof asJson.partitions[0]!.iat).toBe('number');
    const lines = table.stdout.trim().split('\n');
    expect(lines[0]!.split(/\s+/)).toEqual(['partition', 'size', 'issuedAt', 'uri']);
    expect(lines[1]!.split(/\s+/)[2]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('history --email: the issuances to that address in any case, a malformed one named as --email', async () => {
    const issue = async (email: string) => {
      const run = await cli([
        '--json',
        'issue',
        '--email',
        email,
        '--schema',
        'membership-v1',
        '--subject',
        SUBJECT,
      ]);
      expect(run.code).toBe(0);
      return JSON.parse(run.stdout).credentialId as string;
    };
    const first = await issue('by.email@example.org');
    const variant = await issue(' BY.Email@Example.org ');
    await issue('someone.else@example.org');
    const found = await cli(['--json', 'history', '--email', 'By.Email@example.ORG']);
    expect(found.code).toBe(0);
    expect(JSON.parse(found.stdout).data.map((r: { credentialId: string }) => r.credentialId)).toEqual([
      variant,
      first,
    ]);
    const table = await cli(['history', '--email', 'by.email@example.org']);
    expect(table.stdout).toContain('(2 records)');
    const bad = await cli(['history', '--email', 'not-an-address']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/INVALID_PARAMETER: --email: /);
  });

  it('uploads retry: --help marks that one of credentialId and --all-failed is required; errors name them; completion offers it', async () => {
    const help = await cli(['uploads', 'retry', '--help']);
    expect(help.stdout).toMatch(/credentialId\s+\(required, or --all-failed\)/);
    expect(help.stdout).toMatch(/--all-failed\s+\(required, or a credentialId\)/);
    const neither = await cli(['uploads', 'retry']);
    expect(neither.code).toBe(1);
    expect(neither.stderr.trim()).toBe('error: uploads retry: give a credentialId or --all-failed');
    const both = await cli(['uploads', 'retry', 'some-id', '--all-failed']);
    expect(both.code).toBe(1);
    expect(both.stderr.trim()).toBe('error: uploads retry: give a credentialId or --all-failed, not both');
    const completion = (await cli(['completion', 'bash'])).stdout;
    expect(completion).toMatch(/"uploads"\) words="retry /);
    expect(completion).toMatch(/"uploads retry"\) words="--all-failed /);
  });
});

// batch-issue against a loopback server that answers what a busy or stopping issuer answers.
describe('batch-issue under 409 in-progress and 503', () => {
  const work = tempDir();
  afterAll(() => removeDir(work));
  const HEADER = 'email,expiration,credentialSubject.tier';
  const csv = (n: number) =>
    [HEADER, ...Array.from({ length: n }, (_, i) => `b${i}@example.org,2099-01-01,gold`)].join('\n');

  async function fakeIssuer(answer: (n: number, res: ServerResponse) => void) {
    let issued = 0;
    const server = createServer((req: IncomingMessage, res: ServerResponse) => {
      req.resume();
      req.on('end', () => {
        if (req.url === '/admin/issue-vc/validate') {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ problems: [], vct: { 'membership-v1': 'urn:vct:m' } }));
          return;
        }
        answer(++issued, res);
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      calls: () => issued,
      close: () => server.close(),
    };
  }
  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const cli = (url: string, args: string[]) =>
    runCli(args, { ISSUER_URL: url, ADMIN_API_KEY: TEST_ADMIN_API_KEY }, work);

  it('waits for a row still in progress, saying how long, and then records it', async () => {
    const server = await fakeIssuer((n, res) =>
      n === 1
        ? send(res, 409, {
            code: 'CONFLICT',
            message: 'Idempotency-Key: the first request with this key is still running; retry later',
            details: { field: 'Idempotency-Key', reason: 'in-progress' },
          })
        : send(res, 201, { credentialId: `c${n}`, revocationNonce: String(n) }),
    );
    const file = join(work, 'wait.csv');
    writeFileSync(file, csv(1));
    const run = await cli(server.url, ['batch-issue', file, '--schema', 'membership-v1']);
    server.close();
    expect(run.stderr).toMatch(
      /line 2: b0@example.org: the server is still issuing this row \(409 in-progress\); retrying in 1\.0 s/,
    );
    expect(run.code).toBe(0);
    expect(readFileSync(`${file}.results.csv`, 'utf8')).toMatch(/^2,b0@example.org,c2,2,issued,$/m);
  });

  it('stops sending new rows when the server answers 503, leaving them for a rerun', async () => {
    const server = await fakeIssuer((n, res) =>
      n === 1
        ? send(res, 201, { credentialId: 'c1', revocationNonce: '1' })
        : send(res, 503, { code: 'UNAVAILABLE', message: 'shutting down' }),
    );
    const file = join(work, 'stop.csv');
    writeFileSync(file, csv(20));
    const run = await cli(server.url, [
      'batch-issue',
      file,
      '--schema',
      'membership-v1',
      '--concurrency',
      '1',
    ]);
    server.close();
    expect(server.calls()).toBe(2);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /stopped sending: the server answered 503 UNAVAILABLE: shutting down; 19 row\(s\) not sent/,
    );
    expect(readFileSync(`${file}.results.csv`, 'utf8').trim().split('\n')).toHaveLength(2);
  });

  it('a new --out file warns that rows issued under another result file are issued again', async () => {
    const server = await fakeIssuer((n, res) =>
      send(res, 201, { credentialId: `c${n}`, revocationNonce: String(n) }),
    );
    const file = join(work, 'out.csv');
    writeFileSync(file, csv(1));
    const fresh = await cli(server.url, [
      'batch-issue',
      file,
      '--schema',
      'membership-v1',
      '--out',
      join(work, 'other.csv'),
    ]);
    expect(fresh.stderr).toMatch(
      /warning: .*other\.csv is a new result file: rows already issued under another result file .* will be issued again unless --on-duplicate ignore is given/,
    );
    const ignoring = await cli(server.url, [
      'batch-issue',
      file,
      '--schema',
      'membership-v1',
      '--out',
      join(work, 'third.csv'),
      '--on-duplicate',
      'ignore',
    ]);
    server.close();
    expect(ignoring.stderr).not.toMatch(/warning/);
  });
});
