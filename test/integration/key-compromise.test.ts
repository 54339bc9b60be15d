import { createPublicKey, verify as cryptoVerify, X509Certificate } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { digest } from '@sd-jwt/crypto-nodejs';
import { SDJwtVcInstance } from '@sd-jwt/sd-jwt-vc';
import { decodeProtectedHeader } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateMissingKeys } from '../../src/cli/keys.js';
import { openEnvelope, privateKeyFromPkcs8Hex } from '../../src/envelope/index.js';
import { attachChain, x5cToPem } from '../../src/keys/certificates.js';
import { issueDevLeaf, loadOrCreateDevCa } from '../../src/keys/dev-ca.js';
import { readKeys } from '../../src/keys/key-ring.js';
import { x509 } from '../../src/keys/x509.js';
import { runCli } from '../helpers/cli.js';
import { expectError } from '../helpers/errors.js';
import { verifySdJwtVc } from '../helpers/holder-sd-jwt-verifier.js';
import {
  queryStore,
  removeDir,
  startIssuer,
  TEST_ADMIN_API_KEY,
  type TestIssuer,
  tempDir,
} from '../helpers/issuer.js';
import { createMigratedDatabase, postgresAvailable, type TempDatabase } from '../helpers/services.js';

interface Job {
  state: 'running' | 'done' | 'failed';
  total: number;
  done: number;
  failed: number;
}

/** A direct issuance, opened as its holder. */
async function issueOpened(
  issuer: TestIssuer,
  n: number,
): Promise<{ credentialId: string; revocationNonce: string; compact: string }> {
  const userId = `leak.${n}@example.org`;
  const res = await issuer.admin('/admin/issue-vc', {
    userId,
    schemaId: 'membership-v1',
    vct: 'https://issuer.example/vct/membership-v1',
    expiration: '2099-01-01T00:00:00Z',
    credentialSubject: {
      givenName: 'Ada',
      familyName: 'Leak',
      memberSince: '2020-01-01',
      tier: 'gold',
      memberNumber: n,
    },
  });
  expect(res.status).toBe(201);
  const answer = (await res.json()) as { credentialId: string; revocationNonce: string };
  const holder = issuer.emulator!.state.holderByEmail(userId)!;
  const stored = issuer.emulator!.state.envelopes.get(answer.credentialId)!;
  const compact = openEnvelope(privateKeyFromPkcs8Hex(holder.privateKeyPkcs8Hex), stored.envelope) as string;
  return { ...answer, compact };
}

/** What the issuer publishes about its signing keys: kids by document, and every x5c chain. */
async function published(issuer: TestIssuer) {
  const meta = (await (await fetch(`${issuer.url}/.well-known/jwt-vc-issuer`)).json()) as {
    jwks: { keys: Array<{ kid: string; x5c?: string[] }> };
  };
  const did = (await (await fetch(`${issuer.url}/.well-known/did.json`)).json()) as {
    verificationMethod: Array<{ id: string; publicKeyJwk: { kid: string; x5c?: string[] } }>;
  };
  const withChains = [...meta.jwks.keys, ...did.verificationMethod.map((m) => m.publicKeyJwk)].filter(
    (k) => k.x5c,
  );
  return {
    kids: {
      jwks: meta.jwks.keys.map((k) => k.kid),
      did: did.verificationMethod.map((m) => m.publicKeyJwk.kid),
      x5c: withChains.map((k) => k.kid),
    },
    /** Every certificate of every published chain (base64 DER). */
    certificates: new Set(withChains.flatMap((k) => k.x5c!)),
  };
}

// docs/operations.md "A signing key is compromised": POST /admin/keys/compromised and
// `keys compromised`, checked by an independent SD-JWT VC verifier reading only what the issuer
// publishes.
describe('key-compromise playbook', () => {
  let issuer: TestIssuer;
  const dir = tempDir();
  let n = 0;

  beforeAll(async () => {
    issuer = await startIssuer({ dir: join(dir, 'issuer'), context: { direct: { baseDelayMs: 1 } } });
  });
  afterAll(async () => {
    await issuer.close();
    removeDir(dir);
  });

  const issue = () => issueOpened(issuer, ++n);
  const publishedKids = async () => (await published(issuer)).kids;

  it('refuses bad input naming the field, and an unknown key', async () => {
    await expectError(
      await issuer.admin('/admin/keys/compromised', { kid: 'x' }),
      400,
      'INVALID_PARAMETER',
      'reason',
    );
    await expectError(
      await issuer.admin('/admin/keys/compromised', { kid: 'x', reason: 'r', force: true }),
      400,
      'INVALID_PARAMETER',
      'force',
    );
    await expectError(
      await issuer.admin('/admin/keys/compromised', { kid: 'nope', reason: 'r' }),
      404,
      'NOT_FOUND',
    );
  });

  it('rotates away, unpublishes the key at once, revokes what it signed; new credentials verify', async () => {
    const old = await Promise.all([issue(), issue(), issue()]);
    const before = await verifySdJwtVc(issuer.url, old[0]!.compact);
    const kid = before.header.kid as string;
    expect(kid).toBe(issuer.ctx.keys.current().signing.kid);
    expect((await publishedKids()).jwks).toContain(kid);

    const plan = (await (
      await issuer.admin('/admin/keys/compromised', { kid, reason: 'leaked in a log', dryRun: true })
    ).json()) as { active: boolean; credentials: number };
    expect(plan).toMatchObject({ active: true, credentials: 3 });
    expect(issuer.ctx.keys.current().signing.kid).toBe(kid);

    const res = await issuer.admin('/admin/keys/compromised', { kid, reason: 'leaked in a log' });
    expect(res.status).toBe(200);
    const done = (await res.json()) as { rotatedTo: string; jobId: string; credentials: number };
    expect(done.rotatedTo).not.toBe(kid);
    expect(done.credentials).toBe(3);
    expect(issuer.ctx.keys.current().signing.kid).toBe(done.rotatedTo);

    const published = await publishedKids();
    expect(published.jwks).not.toContain(kid);
    expect(published.did).not.toContain(kid);
    expect(published.x5c).not.toContain(kid);
    expect(published.jwks).toContain(done.rotatedTo);

    await expect
      .poll(
        async () => ((await (await issuer.admin(`/admin/status-changes/${done.jobId}`)).json()) as Job).state,
        {
          timeout: 60_000,
        },
      )
      .toBe('done');
    for (const c of old) {
      // The verifier finds no key for it any more.
      await expect(verifySdJwtVc(issuer.url, c.compact)).rejects.toThrow();
      const status = (await (await fetch(`${issuer.url}/revocation-status/${c.revocationNonce}`)).json()) as {
        isRevoked: boolean;
      };
      expect(status.isRevoked).toBe(true);
    }

    const fresh = await issue();
    const verified = await verifySdJwtVc(issuer.url, fresh.compact);
    expect(verified.header.kid).toBe(done.rotatedTo);

    const keys = (await (await issuer.admin('/admin/keys')).json()) as {
      keys: Array<{ kid: string; compromised?: boolean; published: boolean }>;
    };
    expect(keys.keys.find((k) => k.kid === kid)).toMatchObject({ compromised: true, published: false });
    const audit = await queryStore<{ actor: string; reason: string }>(
      issuer.ctx.store,
      "SELECT actor, reason FROM audit_log WHERE action = 'keys.compromised' AND target = ?",
      [kid],
    );
    expect(audit).toEqual([{ actor: 'admin', reason: 'leaked in a log' }]);
  });

  it('keys compromised: prints the plan, asks, then runs the playbook with --yes', async () => {
    // The key that signs now has signed two: the last test's fresh credential, and this one.
    await issue();
    const kid = issuer.ctx.keys.current().signing.kid;
    const env = {
      ISSUER_URL: issuer.url,
      ADMIN_API_KEY: TEST_ADMIN_API_KEY,
      KEYS_DIR: join(dir, 'cli-keys'),
    };
    const dry = await runCli(['keys', 'compromised', '--reason', 'drill', '--dry-run', '--', kid], env, dir);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(/would rotate away/);
    expect(dry.stdout).toMatch(/would revoke the 2 credential/);
    const unconfirmed = await runCli(['keys', 'compromised', '--reason', 'drill', '--', kid], env, dir);
    expect(unconfirmed.code).toBe(1);
    expect(issuer.ctx.keys.current().signing.kid).toBe(kid);
    const run = await runCli(
      ['--json', 'keys', 'compromised', '--reason', 'drill', '--yes', '--', kid],
      env,
      dir,
    );
    expect(run.code).toBe(0);
    const out = JSON.parse(run.stdout) as { rotatedTo: string; job: Job };
    expect(out.job).toMatchObject({ state: 'done', total: 2, done: 2, failed: 0 });
    expect((await publishedKids()).jwks).not.toContain(kid);
    expect(issuer.ctx.keys.current().signing.kid).toBe(out.rotatedTo);
  });
});

/**
 * A verifier that trusts x5c chains to one CA and reads nothing the issuer publishes: the signing
 * key is the leaf of the header's chain, which must lead to `anchorPem` and name `ip` (the
 * issuer's host); the status list token is checked the same way. @sd-jwt/sd-jwt-vc's verify()
 * checks the signature, then the status.
 */
async function verifyByChain(anchorPem: string, ip: string, compact: string) {
  const anchor = new X509Certificate(anchorPem);
  const verifier = (data: string, signature: string) => {
    const { x5c } = decodeProtectedHeader(`${data}.${signature}`);
    if (!x5c?.length) return false;
    const chain = x5c.map((c) => new X509Certificate(Buffer.from(c, 'base64')));
    if (!chain.at(-1)!.verify(anchor.publicKey)) return false;
    for (let i = 0; i + 1 < chain.length; i++) if (!chain[i]!.verify(chain[i + 1]!.publicKey)) return false;
    if (chain[0]!.checkIP(ip) !== ip) return false;
    return cryptoVerify(
      'sha256',
      Buffer.from(data),
      { key: chain[0]!.publicKey, dsaEncoding: 'ieee-p1363' },
      Buffer.from(signature, 'base64url'),
    );
  };
  const sdjwt = new SDJwtVcInstance({
    verifier,
    hasher: digest,
    statusListFetcher: async (uri: string) => (await fetch(uri)).text(),
  });
  const result = await sdjwt.verify(compact);
  return { ...result, header: decodeProtectedHeader(compact.split('~')[0]!) };
}

// The same playbook with SD_JWT_ISSUER=x5c and a CA kept away from KEYS_DIR, as a real one is:
// the rotation needs a standby key certified through `keys prepare --csr` and `keys certificate`.
describe('key-compromise playbook, SD_JWT_ISSUER=x5c', () => {
  let issuer: TestIssuer;
  let ca: Awaited<ReturnType<typeof loadOrCreateDevCa>>;
  let anchorPem = '';
  const dir = tempDir();
  const keysDir = join(dir, 'issuer', 'keys');
  let n = 100;

  beforeAll(async () => {
    ca = await loadOrCreateDevCa(join(dir, 'ca'));
    anchorPem = ca.certificate.toString('pem');
    issuer = await startIssuer({
      dir: join(dir, 'issuer'),
      env: { SD_JWT_ISSUER: 'x5c' },
      context: { direct: { baseDelayMs: 1 } },
      prepare: async (_dir, origin) => {
        await generateMissingKeys(keysDir);
        const key = (await readKeys(keysDir)).find((k) => k.purpose === 'credential-signing')!;
        attachChain(key.file, await issueDevLeaf(ca, key.publicKey, origin));
      },
    });
  });
  afterAll(async () => {
    await issuer.close();
    removeDir(dir);
  });

  const issue = () => issueOpened(issuer, ++n);
  const isRevoked = async (nonce: string) =>
    ((await (await fetch(`${issuer.url}/revocation-status/${nonce}`)).json()) as { isRevoked: boolean })
      .isRevoked;

  it('stops until a certified standby key exists; then the key and its chain are gone, and a chain-only verifier refuses what it signed', async () => {
    const ip = new URL(issuer.url).hostname;
    const leaked = issuer.ctx.keys.current().signing;
    const kid = leaked.kid;
    const old = await Promise.all([issue(), issue()]);
    for (const c of old) {
      const before = await verifyByChain(anchorPem, ip, c.compact);
      expect(before.header.x5c).toEqual(leaked.x5c);
    }
    expect((await published(issuer)).certificates).toContain(leaked.x5c![0]);
    const env = { ISSUER_URL: issuer.url, ADMIN_API_KEY: TEST_ADMIN_API_KEY, KEYS_DIR: keysDir };

    // No standby key with a chain, no CA in KEYS_DIR: the rehearsal says so, the run changes nothing.
    const dry = await runCli(['keys', 'compromised', '--reason', 'leaked', '--dry-run', '--', kid], env, dir);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(
      /would stop: SD_JWT_ISSUER=x5c: the next signing key needs a valid certificate chain/,
    );
    const refused = await runCli(['keys', 'compromised', '--reason', 'leaked', '--yes', '--', kid], env, dir);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/the next signing key needs a valid certificate chain/);
    // The route itself refuses too (409), before changing anything.
    await expectError(
      await issuer.admin('/admin/keys/compromised', { kid, reason: 'leaked' }),
      409,
      'CONFLICT',
    );
    expect(issuer.ctx.keys.current().signing.kid).toBe(kid);
    expect((await published(issuer)).kids.jwks).toContain(kid);
    expect(await isRevoked(old[0]!.revocationNonce)).toBe(false);
    const keys = (await (await issuer.admin('/admin/keys')).json()) as {
      keys: Array<{ kid: string; compromised?: boolean }>;
    };
    expect(keys.keys.find((k) => k.kid === kid)).toMatchObject({ compromised: false });

    // A standby key, its CSR certified by the CA, the chain attached.
    const csrFile = join(dir, 'next.csr');
    const prepared = await runCli(['--json', 'keys', 'prepare', '--csr', csrFile], env, dir);
    expect(prepared.code).toBe(0);
    const next = (JSON.parse(prepared.stdout) as { kid: string }).kid;
    const csr = new x509.Pkcs10CertificateRequest(readFileSync(csrFile, 'utf8'));
    expect(await csr.verify()).toBe(true);
    const csrKey = createPublicKey({ key: Buffer.from(csr.publicKey.rawData), format: 'der', type: 'spki' });
    const chainFile = join(dir, 'chain.pem');
    writeFileSync(chainFile, x5cToPem(await issueDevLeaf(ca, csrKey, issuer.url)));
    expect((await runCli(['keys', 'certificate', '--', next, chainFile], env, dir)).code).toBe(0);

    const plan = await runCli(
      ['keys', 'compromised', '--reason', 'leaked', '--dry-run', '--', kid],
      env,
      dir,
    );
    expect(plan.stdout).toMatch(/would rotate away/);
    expect(plan.stdout).not.toMatch(/would stop:/);
    const run = await runCli(
      ['--json', 'keys', 'compromised', '--reason', 'leaked', '--yes', '--', kid],
      env,
      dir,
    );
    expect(run.code).toBe(0);
    const out = JSON.parse(run.stdout) as { rotatedTo: string; job: Job };
    expect(out.rotatedTo).toBe(next);
    expect(out.job).toMatchObject({ state: 'done', total: 2, done: 2, failed: 0 });

    // Gone from jwt-vc-issuer, did.json and every chain they carry; the new key's chain is there.
    const current = issuer.ctx.keys.current().signing;
    expect(current.kid).toBe(next);
    const after = await published(issuer);
    expect(after.kids.jwks).not.toContain(kid);
    expect(after.kids.did).not.toContain(kid);
    expect(after.kids.x5c).not.toContain(kid);
    expect(after.certificates).not.toContain(leaked.x5c![0]);
    expect(after.certificates).toContain(current.x5c![0]);
    const list = await (await fetch(`${issuer.url}/statuslist/0`)).text();
    expect(decodeProtectedHeader(list).x5c).toEqual(current.x5c);

    for (const c of old) {
      expect(after.certificates).not.toContain(
        (decodeProtectedHeader(c.compact.split('~')[0]!).x5c as string[])[0],
      );
      // Through the metadata: no such key any more.
      await expect(verifySdJwtVc(issuer.url, c.compact)).rejects.toThrow();
      // Through the chain alone (the certificate itself is the CA's to revoke): revoked.
      await expect(verifyByChain(anchorPem, ip, c.compact)).rejects.toThrow(/Status is not valid/);
      expect(await isRevoked(c.revocationNonce)).toBe(true);
    }

    const fresh = await issue();
    const byChain = await verifyByChain(anchorPem, ip, fresh.compact);
    expect(byChain.header.x5c).toEqual(current.x5c);
    expect((await verifySdJwtVc(issuer.url, fresh.compact)).header.kid).toBe(next);
  });
});

interface PlaybookAnswer {
  kid: string;
  active: boolean;
  alreadyCompromised: boolean;
  credentials: number;
  rotatedTo: string | null;
  jobId: string;
}

/**
 * Two runs of the playbook on one kid at once, through `first` and `second` (one instance twice, or
 * two instances on one database): one rotation, one revoke job, and both answers name them.
 */
async function runTwiceAtOnce(first: TestIssuer, second: TestIssuer, signed: number) {
  const kid = first.ctx.keys.current().signing.kid;
  const body = { kid, reason: 'leaked twice' };
  const responses = await Promise.all([
    first.admin('/admin/keys/compromised', body),
    second.admin('/admin/keys/compromised', body),
  ]);
  expect(responses.map((r) => r.status)).toEqual([200, 200]);
  const answers = (await Promise.all(responses.map((r) => r.json()))) as PlaybookAnswer[];
  const [a, b] = answers as [PlaybookAnswer, PlaybookAnswer];
  expect(a.rotatedTo).toEqual(expect.any(String));
  expect(a.rotatedTo).not.toBe(kid);
  expect(b.rotatedTo).toBe(a.rotatedTo);
  expect(b.jobId).toBe(a.jobId);
  for (const answer of answers)
    expect(answer).toMatchObject({ kid, active: true, credentials: signed, compromised: true });
  // One of the two ran the playbook, the other answered what it did.
  expect(answers.map((x) => x.alreadyCompromised).sort()).toEqual([false, true]);

  const store = first.ctx.store;
  const rotations = await queryStore(store, "SELECT target FROM audit_log WHERE action = 'keys.rotate'");
  expect(rotations).toEqual([{ target: a.rotatedTo }]);
  const jobs = await queryStore(store, 'SELECT id FROM status_jobs');
  expect(jobs).toEqual([{ id: a.jobId }]);
  const marks = await queryStore(store, "SELECT target FROM audit_log WHERE action = 'keys.compromised'");
  expect(marks).toEqual([{ target: kid }]);
  await expect
    .poll(async () => ((await (await first.admin(`/admin/status-changes/${a.jobId}`)).json()) as Job).state, {
      timeout: 60_000,
    })
    .toBe('done');

  // Later, a third run: the same answer, nothing more done.
  const again = await second.admin('/admin/keys/compromised', body);
  expect(again.status).toBe(200);
  expect(await again.json()).toMatchObject({
    rotatedTo: a.rotatedTo,
    jobId: a.jobId,
    alreadyCompromised: true,
  });
  expect(await queryStore(store, 'SELECT id FROM status_jobs')).toEqual([{ id: a.jobId }]);
  expect(await queryStore(store, "SELECT target FROM audit_log WHERE action = 'keys.rotate'")).toHaveLength(
    1,
  );
}

// docs/operations.md "A signing key is compromised": the playbook runs once per kid.
describe('key-compromise playbook run twice at once, SQLite', () => {
  let issuer: TestIssuer;
  const dir = tempDir();

  beforeAll(async () => {
    issuer = await startIssuer({ dir: join(dir, 'issuer'), context: { direct: { baseDelayMs: 1 } } });
  });
  afterAll(async () => {
    await issuer.close();
    removeDir(dir);
  });

  it('one rotation and one revoke job; both answers name them, and so does a later run', async () => {
    await Promise.all([issueOpened(issuer, 201), issueOpened(issuer, 202)]);
    await runTwiceAtOnce(issuer, issuer, 2);
  });
});

const pgAvailable = await postgresAvailable('the key-compromise playbook on PostgreSQL');

describe.skipIf(!pgAvailable)(
  'key-compromise playbook run twice at once, two instances on PostgreSQL',
  () => {
    let db: TempDatabase;
    let a: TestIssuer;
    let b: TestIssuer;
    const dirs = [tempDir(), tempDir()];

    beforeAll(async () => {
      db = await createMigratedDatabase();
      const env = { DATABASE_URL: db.url, KEY_ENCRYPTION_KEY: 'a1'.repeat(32) };
      a = await startIssuer({ dir: dirs[0], env, context: { direct: { baseDelayMs: 1 } } });
      mkdirSync(join(dirs[1]!, 'keys'));
      b = await startIssuer({
        dir: dirs[1],
        env: { ...env, SERVICE_V1_BASE_URL: a.ctx.config.serviceBaseUrl! },
        exampleClaimsFile: '',
      });
    });
    afterAll(async () => {
      await b?.close();
      await a?.close();
      await db?.drop();
      for (const d of dirs) removeDir(d);
    });

    it('one rotation and one revoke job between the instances; both answers name them', async () => {
      await Promise.all([issueOpened(a, 301), issueOpened(a, 302), issueOpened(a, 303)]);
      expect(b.ctx.keys.current().signing.kid).toBe(a.ctx.keys.current().signing.kid);
      await runTwiceAtOnce(a, b, 3);
    });
  },
);
