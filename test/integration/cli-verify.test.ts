import { spawn } from 'node:child_process';
import { createHash, generateKeyPairSync } from 'node:crypto';
import { once } from 'node:events';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { type JWK, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateDevChain } from '../../src/cli/key-certificates.js';
import { generateMissingKeys } from '../../src/cli/keys.js';
import { generateHolderKeyPair, openEnvelope, privateKeyFromPkcs8Hex } from '../../src/envelope/index.js';
import { DEV_CA_PEM, loadOrCreateDevCa } from '../../src/keys/dev-ca.js';
import { runCli } from '../helpers/cli.js';
import { entryArgs } from '../helpers/entry.js';
import { removeDir, startIssuer, type TestIssuer, tempDir } from '../helpers/issuer.js';
import { holderIden3Did } from '../unit/formats/iden3-bjj/fixtures.js';

/**
 * `npm run admin -- verify`: credentials issued by the real app (hosted and direct, each
 * SD_JWT_ISSUER mode, Iden3) verified by the CLI from the public documents only, and negative
 * controls that RFC 9901 and the status and metadata drafts require a verifier to refuse, each with
 * its own code.
 */
type Mode = 'url' | 'did:web' | 'x5c';
type Json = Record<string, any>;
interface VerifyJson {
  ok: boolean;
  format: string;
  checks: Array<{ check: string; ok: boolean; code?: string; detail: string }>;
  claims?: Json;
}

const SUBJECT = {
  givenName: 'Dana',
  familyName: 'Okafor',
  memberSince: '2019-05-01',
  tier: 'gold',
  memberNumber: 7,
};

/** The example schemas, with membership-v1's vct under the origin so that its type metadata is served. */
function writeSchemas(dir: string, origin: string): string {
  const schemas = join(dir, 'schemas');
  cpSync('schemas', schemas, { recursive: true });
  const file = join(schemas, 'membership-v1.json');
  const schema = JSON.parse(readFileSync(file, 'utf8'));
  schema.sdJwt = { vct: `${origin}/vct/membership-v1` };
  writeFileSync(file, JSON.stringify(schema));
  return schemas;
}

interface Running {
  issuer: TestIssuer;
  dir: string;
  schemasDir: string;
  caFile: string;
}

async function start(mode: Mode): Promise<Running> {
  const dir = tempDir();
  const keysDir = join(dir, 'keys');
  const schemasDir = join(dir, 'schemas');
  const issuer = await startIssuer({
    dir,
    env: { SD_JWT_ISSUER: mode, SCHEMAS_DIR: schemasDir },
    prepare: async (_dir, origin) => {
      writeSchemas(dir, origin);
      await generateMissingKeys(keysDir);
      if (mode === 'x5c') await generateDevChain(keysDir, { ISSUER_ORIGIN: origin, NODE_ENV: 'test' });
    },
  });
  return { issuer, dir, schemasDir, caFile: join(keysDir, DEV_CA_PEM) };
}

async function verify(r: Running, input: string, extra: string[] = [], origin = r.issuer.url) {
  const file = join(r.dir, `credential-${Math.random().toString(36).slice(2)}.txt`);
  writeFileSync(file, input);
  const run = await runCli(
    ['--json', 'verify', file, '--origin', origin, ...extra],
    { SCHEMAS_DIR: r.schemasDir },
    r.dir,
  );
  return { code: run.code, body: JSON.parse(run.stdout) as VerifyJson };
}

const failed = (body: VerifyJson) => body.checks.filter((c) => !c.ok).map((c) => [c.check, c.code]);

/** Direct issuance by email (POST /admin/issue-vc), opened with the emulated holder's key. */
async function direct(r: Running): Promise<{ compact: string; nonce: string }> {
  const email = `dana.${Math.random().toString(36).slice(2)}@example.org`;
  const res = await r.issuer.admin('/admin/issue-vc', {
    userId: email,
    schemaId: 'membership-v1',
    vct: `${r.issuer.url}/vct/membership-v1`,
    expiration: new Date(Date.now() + 86_400_000).toISOString(),
    credentialSubject: SUBJECT,
  });
  expect(res.status).toBe(201);
  const answer = (await res.json()) as { credentialId: string; revocationNonce: string };
  const holder = r.issuer.emulator!.state.holderByEmail(email)!;
  const envelope = r.issuer.emulator!.state.envelopes.get(answer.credentialId)!.envelope;
  const compact = openEnvelope(privateKeyFromPkcs8Hex(holder.privateKeyPkcs8Hex), envelope) as string;
  return { compact, nonce: answer.revocationNonce };
}

/** Hosted issuance (POST /issue-vc) with a holder key in cnf; answers the credential and that key. */
async function hosted(r: Running, proofType: 'SD_JWT_VC' | 'BJJ_SIG_2021' = 'SD_JWT_VC') {
  const holder = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const enc = generateHolderKeyPair('x25519');
  const holderDid =
    proofType === 'BJJ_SIG_2021'
      ? holderIden3Did(BigInt(Math.floor(Math.random() * 1e9)))
      : `did:example:${Math.random().toString(36).slice(2)}`;
  const res = await r.issuer.post('/issue-vc', {
    holderDID: holderDid,
    pubKey: enc.publicKeyHex,
    userId: 'demo-user-1',
    schemaId: 'membership-v1',
    proofType,
    ...(proofType === 'SD_JWT_VC'
      ? { signingKey: { jwk: holder.publicKey.export({ format: 'jwk' }) as JWK } }
      : {}),
  });
  expect(res.status).toBe(201);
  const stored = [...r.issuer.emulator!.state.envelopes.values()].find(
    (e) => e.envelope.holderDid === holderDid,
  )!;
  return { credential: openEnvelope(enc.privateKey, stored.envelope), holder };
}

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const unb64 = (part: string) => JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
const sdHash = (presented: string) => createHash('sha256').update(presented).digest('base64url');

async function keyBindingJwt(
  holder: ReturnType<typeof generateKeyPairSync>,
  presented: string,
  claims: { nonce: string; aud: string; sd_hash?: string },
): Promise<string> {
  return new SignJWT({ iat: Math.floor(Date.now() / 1000), sd_hash: sdHash(presented), ...claims })
    .setProtectedHeader({ alg: 'ES256', typ: 'kb+jwt' })
    .sign(holder.privateKey);
}

describe.each<Mode>(['url', 'did:web', 'x5c'])('verify, SD_JWT_ISSUER=%s', (mode) => {
  let r: Running;
  beforeAll(async () => {
    r = await start(mode);
  });
  afterAll(async () => {
    await r.issuer.close();
    removeDir(r.dir);
  });
  const trust = () => (mode === 'x5c' ? ['--trust', r.caFile] : []);

  it('a direct credential passes every check: signature by the mode, disclosures, validity, type metadata, status', async () => {
    const { compact } = await direct(r);
    const { code, body } = await verify(r, compact, trust());
    expect(failed(body)).toEqual([]);
    expect(code).toBe(0);
    expect(body.ok).toBe(true);
    expect(body.format).toBe('sd-jwt-vc');
    expect(body.checks.map((c) => c.check)).toEqual([
      'format',
      'signature',
      'disclosures',
      'validity',
      'type metadata',
      'status',
    ]);
    expect(body.checks.find((c) => c.check === 'signature')!.detail).toContain(`${mode}:`);
    expect(body.claims).toMatchObject(SUBJECT);
  });

  it('a hosted credential presented with a key binding JWT passes for its nonce and audience', async () => {
    const { credential, holder } = await hosted(r);
    const presented = credential as string;
    const kb = await keyBindingJwt(holder, presented, { nonce: 'n-1', aud: 'https://rp.example' });
    const { code, body } = await verify(r, `${presented}${kb}`, [
      ...trust(),
      '--nonce',
      'n-1',
      '--aud',
      'https://rp.example',
    ]);
    expect(failed(body)).toEqual([]);
    expect(code).toBe(0);
    expect(body.checks.map((c) => c.check)).toContain('key binding');
  });

  it('a revoked credential fails on status only', async () => {
    const { compact, nonce } = await direct(r);
    expect((await r.issuer.admin('/admin/revoke', { revocationNonce: nonce })).status).toBe(200);
    const { code, body } = await verify(r, compact, trust());
    expect(code).toBe(1);
    expect(failed(body)).toEqual([['status', 'REVOKED']]);
  });
});

describe('verify refuses what a verifier must refuse (SD_JWT_ISSUER=url)', () => {
  let r: Running;
  let compact: string;
  let hostedCredential: { credential: string; holder: ReturnType<typeof generateKeyPairSync> };
  beforeAll(async () => {
    r = await start('url');
    compact = (await direct(r)).compact;
    const h = await hosted(r);
    hostedCredential = { credential: h.credential as string, holder: h.holder };
  });
  afterAll(async () => {
    await r.issuer.close();
    removeDir(r.dir);
  });

  const parts = () => compact.split('~');
  const disclosureNamed = (name: string) => parts().findIndex((p, i) => i > 0 && p && unb64(p)[1] === name);

  it('the untouched credential passes', async () => {
    const { code, body } = await verify(r, compact);
    expect(failed(body)).toEqual([]);
    expect(code).toBe(0);
  });

  it('reads the credential from stdin with -, and prints one line per check', async () => {
    const child = spawn(
      process.execPath,
      entryArgs('scripts/admin.ts', 'verify', '-', '--origin', r.issuer.url),
      {
        env: { PATH: process.env.PATH ?? '', SCHEMAS_DIR: r.schemasDir },
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stdin.end(compact);
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).toBe(0);
    expect(stdout).toMatch(/^PASS {2}format/m);
    expect(stdout).toMatch(/^PASS {2}status/m);
    expect(stdout).toMatch(/^verified$/m);
  });

  it('a disclosure the payload does not reference: DISCLOSURE_UNREFERENCED', async () => {
    const invented = b64(['c2FsdHNhbHRzYWx0', 'admin', true]);
    const { code, body } = await verify(r, `${parts().slice(0, -1).join('~')}~${invented}~`);
    expect(code).toBe(1);
    expect(failed(body)).toEqual([['disclosures', 'DISCLOSURE_UNREFERENCED']]);
    // A changed value re-encoded has a digest the payload does not hold either.
    const p = parts();
    const i = disclosureNamed('tier');
    const [salt] = unb64(p[i]!);
    p[i] = b64([salt, 'tier', 'platinum']);
    expect(failed((await verify(r, p.join('~'))).body)).toEqual([['disclosures', 'DISCLOSURE_UNREFERENCED']]);
  });

  it('a disclosure whose bytes were altered: DISCLOSURE_MALFORMED', async () => {
    const p = parts();
    const i = disclosureNamed('tier');
    const raw = Buffer.from(p[i]!, 'base64url');
    raw[raw.length - 1] = raw[raw.length - 1]! ^ 0x01; // the closing bracket no longer closes the array
    p[i] = raw.toString('base64url');
    const { code, body } = await verify(r, p.join('~'));
    expect(code).toBe(1);
    expect(failed(body)).toEqual([['disclosures', 'DISCLOSURE_MALFORMED']]);
  });

  it('a duplicated disclosure: DISCLOSURE_DUPLICATE', async () => {
    const p = parts();
    const i = disclosureNamed('tier');
    const { code, body } = await verify(r, `${p.slice(0, -1).join('~')}~${p[i]}~`);
    expect(code).toBe(1);
    expect(failed(body)).toEqual([['disclosures', 'DISCLOSURE_DUPLICATE']]);
  });

  it('a flipped signature byte: SIGNATURE_INVALID', async () => {
    const p = parts();
    const [h, pl, sig] = p[0]!.split('.');
    const bytes = Buffer.from(sig!, 'base64url');
    bytes[5] = bytes[5]! ^ 0x01;
    p[0] = `${h}.${pl}.${bytes.toString('base64url')}`;
    const { code, body } = await verify(r, p.join('~'));
    expect(code).toBe(1);
    expect(failed(body)).toEqual([['signature', 'SIGNATURE_INVALID']]);
  });

  it('a key binding JWT for another nonce: KB_NONCE_MISMATCH; with a wrong sd_hash: KB_SD_HASH_MISMATCH', async () => {
    const { credential, holder } = hostedCredential;
    const args = ['--nonce', 'expected-nonce', '--aud', 'https://rp.example'];
    const good = await keyBindingJwt(holder, credential, {
      nonce: 'expected-nonce',
      aud: 'https://rp.example',
    });
    expect((await verify(r, `${credential}${good}`, args)).code).toBe(0);

    const otherNonce = await keyBindingJwt(holder, credential, {
      nonce: 'another-nonce',
      aud: 'https://rp.example',
    });
    const a = await verify(r, `${credential}${otherNonce}`, args);
    expect(a.code).toBe(1);
    expect(failed(a.body)).toEqual([['key binding', 'KB_NONCE_MISMATCH']]);

    const wrongHash = await keyBindingJwt(holder, credential, {
      nonce: 'expected-nonce',
      aud: 'https://rp.example',
      sd_hash: sdHash(`${credential.split('~')[0]}~`),
    });
    const b = await verify(r, `${credential}${wrongHash}`, args);
    expect(b.code).toBe(1);
    expect(failed(b.body)).toEqual([['key binding', 'KB_SD_HASH_MISMATCH']]);

    // A nonce expected but no key binding JWT presented.
    expect(failed((await verify(r, credential, args)).body)).toEqual([['key binding', 'KB_MISSING']]);
  });

  it('type metadata other than the document vct#integrity names: TYPE_METADATA_INTEGRITY', async () => {
    // The issuer's documents through a proxy that serves changed type metadata at the vct.
    const proxy = createServer(async (req, res) => {
      const upstream = await fetch(`${r.issuer.url}${req.url}`);
      let body = Buffer.from(await upstream.arrayBuffer());
      if (req.url === '/vct/membership-v1')
        body = Buffer.from(body.toString('utf8').replace('"Membership"', '"Membership!"'));
      res.writeHead(upstream.status, {
        'content-type': upstream.headers.get('content-type') ?? 'application/json',
      });
      res.end(body);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const origin = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
      const { code, body } = await verify(r, compact, [], origin);
      expect(code).toBe(1);
      expect(failed(body)).toEqual([['type metadata', 'TYPE_METADATA_INTEGRITY']]);
    } finally {
      proxy.closeAllConnections();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    }
  });

  it('an expired credential: EXPIRED', async () => {
    const exp = unb64(parts()[0]!.split('.')[1]!).exp as number;
    const at = new Date((exp + 3600) * 1000).toISOString();
    const { code, body } = await verify(r, compact, ['--at', at]);
    expect(code).toBe(1);
    expect(body.checks.find((c) => c.check === 'validity')).toMatchObject({ ok: false, code: 'EXPIRED' });
  });

  it('an x5c chain to no trusted anchor: X5C_UNTRUSTED', async () => {
    const x5c = await start('x5c');
    try {
      const { compact: chained } = await direct(x5c);
      const otherCa = join(tempDir(), 'other');
      await loadOrCreateDevCa(otherCa);
      const { code, body } = await verify(x5c, chained, ['--trust', join(otherCa, DEV_CA_PEM)]);
      expect(code).toBe(1);
      expect(failed(body)).toContainEqual(['signature', 'X5C_UNTRUSTED']);
    } finally {
      await x5c.issuer.close();
      removeDir(x5c.dir);
    }
  });
});

describe('verify, Iden3 BJJ_SIG_2021', () => {
  let r: Running;
  beforeAll(async () => {
    r = await start('url');
  });
  afterAll(async () => {
    await r.issuer.close();
    removeDir(r.dir);
  });

  it('passes untouched; fails on a changed claim, a flipped signature byte, and once revoked', async () => {
    const vc = (await hosted(r, 'BJJ_SIG_2021')).credential as Json;
    const text = JSON.stringify(vc);
    const ok = await verify(r, text);
    expect(failed(ok.body)).toEqual([]);
    expect(ok.code).toBe(0);
    expect(ok.body.format).toBe('iden3');
    expect(ok.body.checks.map((c) => c.check)).toEqual([
      'format',
      'issuer key',
      'signature',
      'validity',
      'status',
    ]);

    const changed = structuredClone(vc);
    changed.credentialSubject.tier = 'platinum';
    expect(failed((await verify(r, JSON.stringify(changed))).body)).toEqual([
      ['signature', 'CORE_CLAIM_MISMATCH'],
    ]);

    const flipped = structuredClone(vc);
    const sig = Buffer.from(flipped.proof[0].signature, 'hex');
    sig[40] = sig[40]! ^ 0x01;
    flipped.proof[0].signature = sig.toString('hex');
    expect(failed((await verify(r, JSON.stringify(flipped))).body)).toEqual([
      ['signature', 'SIGNATURE_INVALID'],
    ]);

    const nonce = String(vc.credentialStatus.revocationNonce);
    expect(
      (await r.issuer.admin('/admin/revoke', { revocationNonce: nonce, proofType: 'BJJ_SIG_2021' })).status,
    ).toBe(200);
    const revoked = await verify(r, text);
    expect(revoked.code).toBe(1);
    expect(failed(revoked.body)).toEqual([['status', 'REVOKED']]);
  });
});

describe('verify, input', () => {
  it('text that is no credential fails with UNKNOWN_FORMAT; a bad --origin is a usage error', async () => {
    const dir = tempDir();
    const run = await runCli(['--json', 'verify', 'not-a-credential'], {}, dir);
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({
      ok: false,
      checks: [{ check: 'format', code: 'UNKNOWN_FORMAT' }],
    });
    const bad = await runCli(['verify', 'x.y.z~', '--origin', 'nope'], {}, dir);
    expect(bad.code).toBe(1);
    removeDir(dir);
  });
});
