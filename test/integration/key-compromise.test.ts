import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openEnvelope, privateKeyFromPkcs8Hex } from '../../src/envelope/index.js';
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

interface Job {
  state: 'running' | 'done' | 'failed';
  total: number;
  done: number;
  failed: number;
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

  /** A direct issuance, opened as its holder. */
  async function issue(): Promise<{ credentialId: string; revocationNonce: string; compact: string }> {
    const userId = `leak.${++n}@example.org`;
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
    const compact = openEnvelope(
      privateKeyFromPkcs8Hex(holder.privateKeyPkcs8Hex),
      stored.envelope,
    ) as string;
    return { ...answer, compact };
  }

  const publishedKids = async () => {
    const meta = (await (await fetch(`${issuer.url}/.well-known/jwt-vc-issuer`)).json()) as {
      jwks: { keys: Array<{ kid: string; x5c?: string[] }> };
    };
    const did = (await (await fetch(`${issuer.url}/.well-known/did.json`)).json()) as {
      verificationMethod: Array<{ id: string; publicKeyJwk: { kid: string; x5c?: string[] } }>;
    };
    return {
      jwks: meta.jwks.keys.map((k) => k.kid),
      did: did.verificationMethod.map((m) => m.publicKeyJwk.kid),
      x5c: [...meta.jwks.keys, ...did.verificationMethod.map((m) => m.publicKeyJwk)]
        .filter((k) => k.x5c)
        .map((k) => k.kid),
    };
  };

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
