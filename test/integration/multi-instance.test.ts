import { X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  CredentialStatusResolverRegistry,
  CredentialStatusType,
  IssuerResolver,
  ProofType,
  W3CCredential,
} from '@0xpolygonid/js-sdk';
import { compactVerify, decodeProtectedHeader, importX509 } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateMissingKeys } from '../../src/cli/keys.js';
import { openEnvelope } from '../../src/envelope/index.js';
import { attachChain, chainProblems, x5cToPem } from '../../src/keys/certificates.js';
import { issueDevLeaf, loadOrCreateDevCa } from '../../src/keys/dev-ca.js';
import { readKeys } from '../../src/keys/key-ring.js';
import { fetchList, holder, issueInProcess, seedMembers } from '../fixtures/status.js';
import { runCli } from '../helpers/cli.js';
import { didResolverFor } from '../helpers/did-resolver.js';
import { removeDir, startIssuer, TEST_ADMIN_API_KEY, type TestIssuer, tempDir } from '../helpers/issuer.js';
import { createMigratedDatabase, postgresAvailable, type TempDatabase } from '../helpers/services.js';
import { holderIden3Did } from '../unit/formats/iden3-bjj/fixtures.js';

const available = await postgresAvailable('the two-instance tests');
const KEK = 'a1'.repeat(32);
const POLL_MS = 100;

// Two instances (real servers in this process) on one PostgreSQL database behave as one
// issuer: keys from the database, status lists and Idempotency-Keys through the database.
describe.skipIf(!available)('two instances on one PostgreSQL database', () => {
  let db: TempDatabase;
  let a: TestIssuer;
  let b: TestIssuer;
  const dirs = [tempDir(), tempDir()];

  beforeAll(async () => {
    db = await createMigratedDatabase();
    const env = { DATABASE_URL: db.url, KEY_ENCRYPTION_KEY: KEK, STATUS_LIST_BITS: '2' };
    a = await startIssuer({ dir: dirs[0], env, context: { keysPollMs: POLL_MS } });
    // B shares no disk with A: its empty KEYS_DIR stays empty, every key (the signing and partner
    // keys, and the Iden3 BJJ key) comes from the database.
    mkdirSync(join(dirs[1]!, 'keys'));
    b = await startIssuer({
      dir: dirs[1],
      env: { ...env, SERVICE_V1_BASE_URL: a.ctx.config.serviceBaseUrl! },
      context: { keysPollMs: POLL_MS },
      exampleClaimsFile: '',
    });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await db?.drop();
    for (const d of dirs) removeDir(d);
  });

  it('both sign with the key imported from the first start, and publish the same keys', async () => {
    expect(b.ctx.keys.current().signing.kid).toBe(a.ctx.keys.current().signing.kid);
    expect(readdirSync(join(dirs[1]!, 'keys'))).toEqual([]);
    const kids = async (i: TestIssuer) =>
      (
        (await (await fetch(`${i.url}/.well-known/jwt-vc-issuer`)).json()) as {
          jwks: { keys: Array<{ kid: string }> };
        }
      ).jwks.keys
        .map((k) => k.kid)
        .sort();
    expect(await kids(b)).toEqual(await kids(a));
  });

  it('a revocation and a suspension through A show in the list B serves at once', async () => {
    const [user] = await seedMembers(a, 'two-instances', 1);
    const issued = await issueInProcess(a, user!);
    const onB = issued.uri.replace(a.url, b.url);
    const before = await fetchList(onB);
    expect(before.list.getStatus(issued.idx)).toBe(0);
    expect((await a.admin('/admin/suspend', { revocationNonce: issued.nonce })).status).toBe(200);
    const suspended = await fetchList(onB);
    expect(suspended.list.getStatus(issued.idx)).toBe(2);
    expect(suspended.etag).not.toBe(before.etag);
    expect((await a.admin('/admin/revoke', { revocationNonce: issued.nonce })).status).toBe(200);
    expect((await fetchList(onB)).list.getStatus(issued.idx)).toBe(1);
    const status = await fetch(`${b.url}/revocation-status/${issued.nonce}`);
    expect(status.status).toBe(200);
  });

  it('a rotation through B is used and published by A at its next key poll, without a restart', async () => {
    const old = a.ctx.keys.current().signing.kid;
    const res = await b.admin('/admin/keys/rotate', { purpose: 'credential-signing' });
    expect(res.status).toBe(200);
    const { created } = (await res.json()) as { created: { kid: string } };
    // A reads the ring version every POLL_MS: wait for that poll, however late a busy machine runs it.
    await expect.poll(() => a.ctx.keys.current().signing.kid).toBe(created.kid);
    const [user] = await seedMembers(a, 'after-rotation', 1);
    const issued = await issueInProcess(a, user!);
    expect(decodeProtectedHeader(issued.compact.split('~')[0]!).kid).toBe(created.kid);
    const meta = (await (await fetch(`${a.url}/.well-known/jwt-vc-issuer`)).json()) as {
      jwks: { keys: Array<{ kid: string }> };
    };
    // The retired key stays published: credentials it signed have not expired.
    expect(meta.jwks.keys.map((k) => k.kid)).toEqual(expect.arrayContaining([created.kid, old]));
  });

  it('an Idempotency-Key replayed on the other instance answers the first answer', async () => {
    const body = {
      userId: 'idem.multi@example.org',
      schemaId: 'membership-v1',
      vct: 'urn:vct:membership',
      expiration: new Date(Date.now() + 30 * 86400_000).toISOString(),
      credentialSubject: {
        givenName: 'Ida',
        familyName: 'M',
        memberSince: '2022-01-01',
        tier: 'basic',
        memberNumber: 4,
      },
    };
    const headers = { 'idempotency-key': 'multi-instance-1' };
    const first = await a.admin('/admin/issue-vc', body, headers);
    expect(first.status).toBe(201);
    const again = await b.admin('/admin/issue-vc', body, headers);
    expect(again.status).toBe(201);
    expect(await again.json()).toEqual(await first.json());
  });

  it('onDuplicate=revoke sent to both instances at once leaves the holder one valid credential', async () => {
    const email = 'dup.multi@example.org';
    const body = (n: number) => ({
      userId: email,
      schemaId: 'membership-v1',
      vct: 'urn:vct:membership',
      expiration: new Date(Date.now() + 30 * 86400_000).toISOString(),
      onDuplicate: 'revoke',
      credentialSubject: {
        givenName: 'Dee',
        familyName: 'M',
        memberSince: '2022-01-01',
        tier: 'basic',
        memberNumber: n + 1,
      },
    });
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, n) => (n % 2 === 0 ? a : b).admin('/admin/issue-vc', body(n))),
    );
    expect(answers.map((r) => r.status)).toEqual(Array(6).fill(201));
    const holderDid = a.emulator!.state.holderByEmail(email)!.did;
    const active = await a.ctx.store.history.activeFor(holderDid, 'membership-v1', 'SD_JWT_VC', new Date());
    expect(active.filter((r) => r.status === 0)).toHaveLength(1);
  });

  it('both serve one Iden3 issuer DID, its key read from the database', async () => {
    expect(existsSync(join(dirs[0]!, 'keys', 'iden3-bjj.json'))).toBe(false);
    expect(existsSync(join(dirs[1]!, 'keys', 'iden3-bjj.json'))).toBe(false);
    const did = a.ctx.iden3Did();
    expect(did).toMatch(/^did:iden3:/);
    expect(b.ctx.iden3Did()).toBe(did);
    expect(b.ctx.iden3!.publicKeyHex).toBe(a.ctx.iden3!.publicKeyHex);
  });

  it('a BJJ credential issued on A verifies against /credential-status on B, and its revocation shows there', async () => {
    const holderDid = holderIden3Did(77n);
    const res = await a.post('/issue-vc', {
      holderDID: holderDid,
      pubKey: holder.publicKeyHex,
      userId: 'demo-user-1',
      schemaId: 'membership-v1',
      proofType: 'BJJ_SIG_2021',
    });
    expect(res.status).toBe(201);
    const stored = [...a.emulator!.state.envelopes.values()]
      .filter((e) => e.envelope.holderDid === holderDid)
      .at(-1)!;
    const vc = W3CCredential.fromJSON(openEnvelope(holder.privateKey, stored.envelope) as W3CCredential);
    expect(vc.issuer).toBe(b.ctx.iden3Did());
    const nonce = Number(vc.credentialStatus.revocationNonce);
    // Verified by js-sdk with B alone: the DID resolver knows B's states, and the status is read
    // from B (a load balancer sending the credential's status request there).
    const resolver = await didResolverFor(b);
    const registry = new CredentialStatusResolverRegistry();
    registry.register(CredentialStatusType.SparseMerkleTreeProof, {
      resolve: (status) => new IssuerResolver().resolve({ ...status, id: status.id.replace(a.url, b.url) }),
    });
    const verify = () =>
      vc.verifyProof(ProofType.BJJSignature, resolver.url, {
        credStatusResolverRegistry: registry,
        merklizeOptions: { documentLoader: b.ctx.iden3!.documentLoader },
      });
    try {
      await expect(verify()).resolves.toBe(true);
      const read = async () =>
        (
          (await (await fetch(`${b.url}/credential-status/${nonce}`)).json()) as {
            mtp: { existence: boolean };
          }
        ).mtp.existence;
      expect(await read()).toBe(false);
      expect((await a.admin('/admin/revoke', { revocationNonce: String(nonce) })).status).toBe(200);
      expect(await read()).toBe(true);
      expect((await b.ctx.iden3!.latestState()).state).toBe((await a.ctx.iden3!.latestState()).state);
    } finally {
      await resolver.close();
    }
  });
});

// SD_JWT_ISSUER=x5c: the standby key and its chain live in the
// database, so a standby prepared and certified through one instance is promoted by a rotation
// through another, and both then sign with it and send its chain.
describe.skipIf(!available)('two instances in x5c mode on one PostgreSQL database', () => {
  let db: TempDatabase;
  let a: TestIssuer;
  let b: TestIssuer;
  const dirs = [tempDir(), tempDir(), tempDir()];
  // A CA kept away from KEYS_DIR, as a real one would be: rotation cannot certify a key itself.
  const caDir = dirs[2]!;

  /** The admin CLI (in this process) as an operator runs it next to instance A. */
  function cli(args: string[]) {
    const env = {
      ISSUER_URL: a.url,
      ADMIN_API_KEY: TEST_ADMIN_API_KEY,
      DATABASE_URL: db.url,
      KEY_ENCRYPTION_KEY: KEK,
      KEYS_DIR: join(caDir, 'cli-keys'),
    };
    return runCli(['--json', ...args], env, caDir);
  }
  const rotate = (i: TestIssuer) => i.admin('/admin/keys/rotate', { purpose: 'credential-signing' });
  const listed = async (i: TestIssuer) =>
    ((await (await i.admin('/admin/keys')).json()) as { keys: unknown[] }).keys;
  const published = async (i: TestIssuer) =>
    (
      (await (await fetch(`${i.url}/.well-known/jwt-vc-issuer`)).json()) as {
        jwks: { keys: Array<{ kid: string }> };
      }
    ).jwks.keys.map((k) => k.kid);

  beforeAll(async () => {
    db = await createMigratedDatabase();
    const env = { DATABASE_URL: db.url, KEY_ENCRYPTION_KEY: KEK, SD_JWT_ISSUER: 'x5c' };
    a = await startIssuer({
      dir: dirs[0],
      env,
      context: { keysPollMs: POLL_MS },
      prepare: async (dir, origin) => {
        const keysDir = join(dir, 'keys');
        await generateMissingKeys(keysDir);
        const key = (await readKeys(keysDir)).find((k) => k.purpose === 'credential-signing')!;
        attachChain(key.file, await issueDevLeaf(await loadOrCreateDevCa(caDir), key.publicKey, origin));
      },
    });
    mkdirSync(join(dirs[1]!, 'keys'));
    b = await startIssuer({
      dir: dirs[1],
      env: { ...env, SERVICE_V1_BASE_URL: a.ctx.config.serviceBaseUrl! },
      context: { keysPollMs: POLL_MS },
    });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await db?.drop();
    for (const d of dirs) removeDir(d);
  });

  it('without a certified standby key a rotation is refused (409) and the key ring stays as it was', async () => {
    // The chain imported from A's key file is what B sends: it shares no disk with A.
    expect(b.ctx.keys.current().signing.x5c).toEqual(a.ctx.keys.current().signing.x5c);
    expect(b.ctx.keys.current().signing.x5c).toHaveLength(2);
    const before = await listed(b);
    const refused = await rotate(b);
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as { code: string }).code).toBe('CONFLICT');
    expect(await listed(b)).toEqual(before);
    expect(await listed(a)).toEqual(before);
  });

  it('prepare and certificate through A, rotate through B: both sign with the standby key and send its chain', async () => {
    const old = a.ctx.keys.current().signing.kid;
    const csrFile = join(caDir, 'next.csr');
    const prepared = await cli(['keys', 'prepare', '--csr', csrFile]);
    expect(prepared.code).toBe(0);
    const { kid } = JSON.parse(prepared.stdout) as { kid: string };
    expect(readFileSync(csrFile, 'utf8')).toMatch(/^-----BEGIN CERTIFICATE REQUEST-----/);
    // Published by both (the version bump), not signing.
    for (const i of [a, b]) {
      await expect.poll(() => published(i)).toContain(kid);
      expect(i.ctx.keys.current().signing.kid).toBe(old);
    }
    const uncertified = await rotate(b);
    expect(uncertified.status).toBe(409);
    expect(b.ctx.keys.current().signing.kid).toBe(old);

    const standby = a.ctx.keys.current().signingKeys.find((k) => k.kid === kid)!;
    expect(standby.standby).toBe(true);
    const ca = await loadOrCreateDevCa(caDir);
    const chainFile = join(caDir, 'chain.pem');
    // A chain for another key is refused, and nothing is stored.
    writeFileSync(chainFile, x5cToPem(await issueDevLeaf(ca, a.ctx.keys.current().signing.publicKey, a.url)));
    expect((await cli(['keys', 'certificate', '--', kid, chainFile])).code).toBe(1);
    expect(await rotate(b).then((r) => r.status)).toBe(409);
    const chain = await issueDevLeaf(ca, standby.publicKey, a.url);
    writeFileSync(chainFile, x5cToPem(chain));
    const attached = await cli(['keys', 'certificate', '--', kid, chainFile]);
    expect(attached.code).toBe(0);
    expect(JSON.parse(attached.stdout)).toMatchObject({ kid, certificates: 2 });

    // B may not have reloaded yet: its rotation reads the chain from the row under the key lock.
    const rotated = await rotate(b);
    expect(rotated.status).toBe(200);
    expect(((await rotated.json()) as { created: { kid: string } }).created.kid).toBe(kid);
    const caCert = new X509Certificate(readFileSync(join(caDir, 'dev-ca.pem')));
    for (const i of [a, b]) {
      await expect.poll(() => i.ctx.keys.current().signing.kid).toBe(kid);
      const [user] = await seedMembers(i, `x5c-${i.url.split(':').pop()}`, 1);
      const jws = (await issueInProcess(i, user!)).compact.split('~')[0]!;
      const header = decodeProtectedHeader(jws);
      expect(header.x5c).toEqual(chain);
      // Verified as an x5c verifier does: the signature with the leaf's key, the chain up to the
      // trusted CA, the leaf naming the issuer's host.
      const leaf = await importX509(x5cToPem([header.x5c![0]!]), 'ES256');
      await expect(compactVerify(jws, leaf)).resolves.toBeDefined();
      const certs = header.x5c!.map((c) => new X509Certificate(Buffer.from(c, 'base64')));
      expect(certs.at(-1)!.verify(caCert.publicKey)).toBe(true);
      expect(chainProblems(header.x5c!, certs[0]!.publicKey, i.url, new Date())).toEqual([]);
      expect(await published(i)).toContain(kid);
    }
  });
});
