import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeDir, startIssuer, TEST_API_KEY, type TestIssuer, tempDir } from '../helpers/issuer.js';

/** `npm run demo -- --user <userId> --schema <schemaId>` as a process against a running test issuer. */
async function demo(args: string[], env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/demo.ts', ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stdout, stderr };
}

describe('npm run demo -- --user --schema', () => {
  let issuer: TestIssuer;
  const dir = tempDir();
  const schemasDir = join(dir, 'schemas');
  let env: Record<string, string>;

  beforeAll(async () => {
    // A second schema, club-v1, and claims for a user the examples do not have.
    cpSync('schemas', schemasDir, { recursive: true });
    const schema = JSON.parse(readFileSync(join(schemasDir, 'membership-v1.json'), 'utf8'));
    schema.schemaId = 'club-v1';
    schema.proofTypes = ['SD_JWT_VC'];
    delete schema.iden3;
    schema.sdJwt = { vct: 'https://issuer.example/vct/club-v1' };
    writeFileSync(join(schemasDir, 'club-v1.json'), JSON.stringify(schema));
    // And badge-v1, Iden3 only.
    const badge = JSON.parse(readFileSync(join(schemasDir, 'membership-v1.json'), 'utf8'));
    badge.schemaId = 'badge-v1';
    badge.proofTypes = ['BJJ_SIG_2021'];
    delete badge.sdJwt;
    writeFileSync(join(schemasDir, 'badge-v1.json'), JSON.stringify(badge));
    const claimsFile = join(dir, 'claims.json');
    const claims = JSON.parse(readFileSync('examples/claims.json', 'utf8')) as unknown[];
    claims.push({
      userId: 'demo-user-7',
      schemaId: 'club-v1',
      claims: {
        givenName: 'Zora',
        familyName: 'Ndiaye',
        memberSince: '2020-02-02',
        tier: 'platinum',
        memberNumber: 77,
      },
    });
    claims.push({
      userId: 'demo-user-8',
      schemaId: 'badge-v1',
      claims: {
        givenName: 'Ines',
        familyName: 'Sato',
        memberSince: '2018-08-08',
        tier: 'basic',
        memberNumber: 88,
      },
    });
    writeFileSync(claimsFile, JSON.stringify(claims));
    issuer = await startIssuer({ dir, env: { SCHEMAS_DIR: schemasDir }, exampleClaimsFile: claimsFile });
    env = {
      ISSUER_URL: issuer.url,
      API_KEY: TEST_API_KEY,
      EMULATOR_URL: issuer.ctx.config.serviceBaseUrl!,
      SCHEMAS_DIR: schemasDir,
      KEYS_DIR: join(dir, 'keys'),
    };
  });
  afterAll(async () => {
    await issuer.close();
    removeDir(dir);
  });

  const envelopesFor = (schemaId: string) =>
    [...issuer.emulator!.state.envelopes.values()].filter((e) => e.envelope.schemaId === schemaId);

  it('runs the holder flow for the user and schema named, and verifies what it received', async () => {
    const run = await demo(['--user', 'demo-user-7', '--schema', 'club-v1'], env);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Zora');
    expect(run.stdout).toContain('verified credential');
    expect(run.stdout).not.toContain('FAIL');
    expect(envelopesFor('club-v1')).toHaveLength(1);
  });

  it('issues and verifies an Iden3 credential when that is what the schema offers', async () => {
    const run = await demo(['--user', 'demo-user-8', '--schema', 'badge-v1'], env);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('BJJ_SIG_2021');
    expect(run.stdout).toMatch(/PASS {2}signature {2}BJJSignature2021/);
    expect(run.stdout).toContain('Ines');
    expect(envelopesFor('badge-v1')).toHaveLength(1);
  });

  it('a user without claims for the schema, and an unknown flag, exit 1 and issue nothing', async () => {
    const before = issuer.emulator!.state.envelopes.size;
    const none = await demo(['--user', 'nobody', '--schema', 'club-v1'], env);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('not eligible');
    const bad = await demo(['--usr', 'x'], env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('usage');
    expect(issuer.emulator!.state.envelopes.size).toBe(before);
  });

  it('still refuses NODE_ENV=production', async () => {
    const before = issuer.emulator!.state.envelopes.size;
    const run = await demo(['--user', 'demo-user-1', '--schema', 'membership-v1'], {
      ...env,
      NODE_ENV: 'production',
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('NODE_ENV=production');
    expect(issuer.emulator!.state.envelopes.size).toBe(before);
  });
});

describe('npm run demo against a production issuer', () => {
  const work = tempDir();
  afterAll(() => removeDir(work));

  it('refuses an issuer whose metadata names an https origin', async () => {
    const prod = await startIssuer({ env: { ISSUER_ORIGIN: 'https://issuer.example.com' } });
    try {
      const run = await demo([], { ISSUER_URL: prod.url, KEYS_DIR: join(work, 'keys') });
      expect(run.code).toBe(1);
      expect(run.stderr).toContain('production issuer');
      expect(prod.emulator?.state.envelopes.size ?? 0).toBe(0);
    } finally {
      await prod.close();
    }
  });
});
