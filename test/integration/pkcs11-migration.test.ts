import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runDoctor } from '../../src/cli/doctor.js';
import { loadConfig } from '../../src/config/config.js';
import { DEVELOPMENT_KEY_ENCRYPTION_KEY } from '../../src/config/key-encryption-key.js';
import { x5cToPem } from '../../src/keys/certificates.js';
import { issueDevLeaf, loadOrCreateDevCa } from '../../src/keys/dev-ca.js';
import { type ManagedKey, parseKeyFile, readKeys } from '../../src/keys/key-ring.js';
import { openPkcs11Backend, type Pkcs11Backend } from '../../src/keys/pkcs11-backend.js';
import { openSealedKey } from '../../src/keys/sealed-key.js';
import { SOFTWARE_KEYS_ASIDE } from '../../src/keys/token-migration.js';
import { x509 } from '../../src/keys/x509.js';
import { issueOverHttp, seedMembers } from '../fixtures/status.js';
import { runCli } from '../helpers/cli.js';
import { verifySdJwtVc } from '../helpers/holder-sd-jwt-verifier.js';
import { startIssuer, TEST_ADMIN_API_KEY, TEST_STORE, type TestIssuer, tempDir } from '../helpers/issuer.js';
import { createMigratedDatabase, postgresAvailable } from '../helpers/services.js';
import { processToken, softHsmAvailable } from '../helpers/softhsm.js';

const available = softHsmAvailable('the key migration tests') && TEST_STORE === 'sqlite';

/** The CSR, the key files and the doctor items these commands leave, read as an operator would. */
async function tokenBackend(): Promise<Pkcs11Backend> {
  const token = processToken();
  return openPkcs11Backend(
    { kind: 'pkcs11', module: token.module, token: { label: token.label } },
    token.pin,
  );
}

const idOf = (key: ManagedKey) => Buffer.from(key.kid, 'base64url').toString('hex');

// docs/security.md "Moving keys into the token": an issuer live with software keys moves them into
// the token, by import (same kids) or by rotation (new token keys, the old ones still published).
describe.skipIf(!available)('moving software keys into a PKCS#11 token (SoftHSM2)', () => {
  const open: TestIssuer[] = [];
  afterEach(async () => {
    for (const issuer of open.splice(0)) await issuer.close();
  });
  // A restart keeps the port, so ISSUER_ORIGIN (and the status list URLs in credentials) stay.
  const ports = new Map<string, number>();
  const start = async (dir: string, env: Record<string, string> = {}) => {
    const issuer = await startIssuer({ dir, env, ...(ports.has(dir) ? { port: ports.get(dir) } : {}) });
    ports.set(dir, Number(new URL(issuer.url).port));
    open.push(issuer);
    return issuer;
  };

  it('import: same kids, software copies moved aside, old and new credentials verify, doctor warns while copies remain', async () => {
    const dir = tempDir();
    const keysDir = join(dir, 'keys');
    const software = await start(dir);
    const [user] = await seedMembers(software, 'import', 2);
    const before = await issueOverHttp(software, user!);
    const kids = [software.ctx.keys.current().signing.kid, software.ctx.keys.current().partner.kid];
    await software.close();
    open.length = 0;

    const token = processToken();
    // With KEY_BACKEND=pkcs11 the start refuses the software keys, naming the way out.
    await expect(start(dir, token.env)).rejects.toThrow(/keys migrate-to-token import/);

    const run = await runCli(
      ['keys', 'migrate-to-token', 'import'],
      { KEYS_DIR: keysDir, ...token.env },
      dir,
    );
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/credential-signing .*: imported; software copy moved to /);
    const keys = await readKeys(keysDir, await tokenBackend());
    expect(keys.map((k) => k.custody)).toEqual(['pkcs11', 'pkcs11']);
    expect(keys.map((k) => k.kid).sort()).toEqual([...kids].sort());
    for (const key of keys) expect(readFileSync(key.file, 'utf8')).not.toMatch(/"d"\s*:/);
    const backend = await tokenBackend();
    for (const key of keys)
      expect(await backend.inspect(idOf(key))).toMatchObject({ extractable: false, valueRefused: true });
    const aside = readdirSync(join(keysDir, SOFTWARE_KEYS_ASIDE));
    expect(aside).toHaveLength(2);
    // Running it again changes nothing.
    const again = await runCli(
      ['keys', 'migrate-to-token', 'import'],
      { KEYS_DIR: keysDir, ...token.env },
      dir,
    );
    expect(again.stdout).toMatch(/already in the token/);

    const migrated = await start(dir, token.env);
    expect(migrated.ctx.keys.current().signing.kid).toBe(kids[0]);
    expect(migrated.ctx.keys.current().signing.custody).toBe('pkcs11');
    const after = await issueOverHttp(migrated, (await seedMembers(migrated, 'import-after', 1))[0]!);
    expect((await verifySdJwtVc(migrated.url, after.compact)).header.kid).toBe(kids[0]);
    expect((await verifySdJwtVc(migrated.url, before.compact)).header.kid).toBe(kids[0]);

    const { config, secrets } = loadConfig(
      {
        NODE_ENV: 'test',
        ISSUER_ORIGIN: migrated.url,
        DATABASE_URL: `sqlite:${join(dir, 'issuer.db')}`,
        KEYS_DIR: keysDir,
        ADMIN_API_KEY: TEST_ADMIN_API_KEY,
        ...token.env,
      },
      dir,
    );
    const lines = await runDoctor(config, secrets, { allowHttp: true });
    expect(lines.find((l) => l.item === 'key backend')).toMatchObject({ verdict: 'PASS' });
    expect(lines.find((l) => l.item === 'key backend')!.detail).toMatch(/verifies with the published key/);
    expect(JSON.stringify(lines)).not.toContain(token.pin);
    expect(lines.find((l) => l.item === 'software key copies')).toMatchObject({ verdict: 'WARN' });
  });

  it('rotate: new keys made in the token; the old ones retired and still published', async () => {
    const dir = tempDir();
    const keysDir = join(dir, 'keys');
    const software = await start(dir);
    const old = software.ctx.keys.current().signing.kid;
    const before = await issueOverHttp(software, (await seedMembers(software, 'rotate', 1))[0]!);
    await software.close();
    open.length = 0;

    const token = processToken();
    const run = await runCli(
      ['keys', 'migrate-to-token', 'rotate'],
      { KEYS_DIR: keysDir, ...token.env },
      dir,
    );
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/credential-signing: new token key \S+ signs from now on; retired /);

    const migrated = await start(dir, token.env);
    const ring = migrated.ctx.keys.current();
    expect(ring.signing.kid).not.toBe(old);
    expect(ring.signing.custody).toBe('pkcs11');
    expect(ring.partner.custody).toBe('pkcs11');
    expect(ring.signingKeys.find((k) => k.kid === old)?.retiredAt).toBeDefined();
    expect((await verifySdJwtVc(migrated.url, before.compact)).header.kid).toBe(old);
    const after = await issueOverHttp(migrated, (await seedMembers(migrated, 'rotate-after', 1))[0]!);
    expect((await verifySdJwtVc(migrated.url, after.compact)).header.kid).toBe(ring.signing.kid);
  });

  it('keys prepare --csr: the request is signed by the token key, and a chain attaches to it', async () => {
    const dir = tempDir();
    const keysDir = join(dir, 'keys');
    const token = processToken();
    const issuer = await start(dir, token.env);
    const csrFile = join(dir, 'next.csr');
    const prepared = await runCli(
      ['--json', 'keys', 'prepare', '--csr', csrFile],
      { KEYS_DIR: keysDir, ...token.env },
      dir,
    );
    expect(prepared.code).toBe(0);
    const { kid, file } = JSON.parse(prepared.stdout) as { kid: string; file: string };
    const standby = await parseKeyFile(file, await tokenBackend());
    expect(standby.custody).toBe('pkcs11');
    expect(standby.standby).toBe(true);
    const request = new x509.Pkcs10CertificateRequest(readFileSync(csrFile, 'utf8'));
    // The library's own check of the request's signature, with the key the request names.
    expect(await request.verify()).toBe(true);
    expect(
      Buffer.from(request.publicKey.rawData).equals(
        standby.publicKey.export({ format: 'der', type: 'spki' }),
      ),
    ).toBe(true);

    const ca = await loadOrCreateDevCa(join(dir, 'ca'));
    const chainFile = join(dir, 'chain.pem');
    writeFileSync(chainFile, x5cToPem(await issueDevLeaf(ca, standby.publicKey, issuer.url)));
    const attached = await runCli(
      ['--json', 'keys', 'certificate', '--origin', issuer.url, '--', kid, chainFile],
      { KEYS_DIR: keysDir, ...token.env },
      dir,
    );
    expect(attached.stderr).toBe('');
    expect(attached.code).toBe(0);
    expect((await parseKeyFile(file, await tokenBackend())).x5c).toHaveLength(2);
    expect(existsSync(file)).toBe(true);
  });
});

// The same import on PostgreSQL: the rows rewritten in one transaction, their sealed text set aside.
describe.skipIf(!available || !(await postgresAvailable('the key import on PostgreSQL')))(
  'moving software keys into the token on PostgreSQL',
  () => {
    it('import keeps the kids; the rows hold no private key; the sealed copies are set aside', async () => {
      const db = await createMigratedDatabase();
      const dir = tempDir();
      const keysDir = join(dir, 'keys');
      const env = { DATABASE_URL: db.url };
      try {
        const software = await startIssuer({ dir, env });
        const port = Number(new URL(software.url).port);
        const before = await issueOverHttp(software, (await seedMembers(software, 'pg-import', 1))[0]!);
        const kid = software.ctx.keys.current().signing.kid;
        await software.close();

        const token = processToken();
        const run = await runCli(
          ['keys', 'migrate-to-token', 'import'],
          { KEYS_DIR: keysDir, ...env, ...token.env },
          dir,
        );
        expect(run.stderr).toBe('');
        expect(run.code).toBe(0);
        expect(
          readdirSync(join(keysDir, SOFTWARE_KEYS_ASIDE)).filter((f) => f.startsWith('database-')),
        ).toHaveLength(2);

        const migrated = await startIssuer({ dir, port, env: { ...env, ...token.env } });
        try {
          expect(migrated.ctx.keys.current().signing.kid).toBe(kid);
          expect(migrated.ctx.keys.current().signing.custody).toBe('pkcs11');
          for (const row of await migrated.ctx.store.keys!.list()) {
            const data = openSealedKey(
              DEVELOPMENT_KEY_ENCRYPTION_KEY,
              row.kid,
              row.purpose,
              row.sealed,
            ) as Record<string, unknown>;
            expect(data.privateJwk).toBeUndefined();
            expect(data.token).toMatchObject({ backend: 'pkcs11' });
          }
          expect((await verifySdJwtVc(migrated.url, before.compact)).header.kid).toBe(kid);
          const after = await issueOverHttp(migrated, (await seedMembers(migrated, 'pg-after', 1))[0]!);
          expect((await verifySdJwtVc(migrated.url, after.compact)).header.kid).toBe(kid);
        } finally {
          await migrated.close();
        }
      } finally {
        await db.drop();
      }
    });
  },
);
