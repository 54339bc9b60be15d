import { generateKeyPairSync, X509Certificate } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { attachCertificate, prepareKey } from '../../../src/cli/key-certificates.js';
import { certificateStanding, chainProblems, pemToX5c, x5cToPem } from '../../../src/keys/certificates.js';
import { DEV_CA_PEM, issueDevLeaf, loadOrCreateDevCa } from '../../../src/keys/dev-ca.js';
import { generateKey, KeyError, parseKeyFile } from '../../../src/keys/key-ring.js';
import { x509 } from '../../../src/keys/x509.js';
import { tempDir } from '../../helpers/tmp.js';

const ORIGIN = 'https://issuer.example.org';
const NOW = new Date('2026-06-01T00:00:00Z');
const DAY = 86_400_000;

// An x5c chain identifies the signing key for the origin's host, or it is refused.
describe('x5c certificate chains', () => {
  it('a development leaf for the key and host passes; it names the host and the origin', async () => {
    const dir = tempDir();
    const ca = await loadOrCreateDevCa(dir, NOW);
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const x5c = await issueDevLeaf(ca, privateKey, ORIGIN, NOW);
    expect(x5c).toHaveLength(2);
    expect(chainProblems(x5c, privateKey, ORIGIN, NOW)).toEqual([]);
    const leaf = new X509Certificate(Buffer.from(x5c[0]!, 'base64'));
    expect(leaf.subjectAltName).toBe('DNS:issuer.example.org, URI:https://issuer.example.org');
    expect(leaf.verify(new X509Certificate(readFileSync(join(dir, DEV_CA_PEM))).publicKey)).toBe(true);
    // A loopback origin gets an IP address entry.
    const loop = await issueDevLeaf(ca, privateKey, 'http://127.0.0.1:4000', NOW);
    expect(chainProblems(loop, privateKey, 'http://127.0.0.1:4000', NOW)).toEqual([]);
    expect(pemToX5c(x5cToPem(x5c))).toEqual(x5c);
  });

  it('refuses another key, an expired or not-yet-valid chain, another host, a broken link', async () => {
    const ca = await loadOrCreateDevCa(tempDir(), NOW);
    const otherCa = await loadOrCreateDevCa(tempDir(), NOW);
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const other = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    const x5c = await issueDevLeaf(ca, privateKey, ORIGIN, NOW);
    const problems = (chain: string[], at = NOW, origin = ORIGIN, key = privateKey) =>
      chainProblems(chain, key, origin, at).join('\n');
    expect(problems(x5c, NOW, ORIGIN, other)).toMatch(
      /^x5c\[0\]: the leaf certificate is for a different key/,
    );
    expect(problems(x5c, new Date(NOW.getTime() + 900 * DAY))).toMatch(/^x5c\[0\]: expired on/);
    expect(problems(x5c, new Date(NOW.getTime() - 2 * DAY))).toMatch(/not valid before/);
    expect(problems(x5c, NOW, 'https://elsewhere.example')).toMatch(
      /x5c\[0\]: subjectAltName .* does not name DNS name elsewhere\.example/,
    );
    const foreignRoot = [x5c[0]!, Buffer.from(otherCa.certificate.rawData).toString('base64')];
    expect(problems(foreignRoot)).toMatch(/x5c\[0\]: not issued and signed by x5c\[1\]/);
    expect(problems(['AAAA'])).toBe('x5c[0]: not a DER X.509 certificate');
  });

  it('admin keys certificate attaches a good chain and refuses a bad one, naming the reason', async () => {
    const dir = tempDir();
    const key = await generateKey(dir, 'credential-signing', NOW);
    const ca = await loadOrCreateDevCa(tempDir(), NOW);
    const pem = join(dir, 'chain.pem');
    writeFileSync(
      pem,
      x5cToPem(
        await issueDevLeaf(ca, generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey, ORIGIN, NOW),
      ),
    );
    await expect(attachCertificate(dir, key.kid, pem, ORIGIN, NOW)).rejects.toThrow(/different key/);
    writeFileSync(pem, x5cToPem(await issueDevLeaf(ca, key.publicKey, ORIGIN, NOW)));
    await expect(attachCertificate(dir, key.kid, pem, 'https://other.example', NOW)).rejects.toThrow(
      /does not name DNS name other\.example/,
    );
    await expect(
      attachCertificate(dir, key.kid, pem, ORIGIN, new Date(NOW.getTime() + 900 * DAY)),
    ).rejects.toThrow(/expired/);
    await expect(attachCertificate(dir, 'no-such-kid', pem, ORIGIN, NOW)).rejects.toBeInstanceOf(KeyError);
    expect(await attachCertificate(dir, key.kid, pem, ORIGIN, NOW)).toMatchObject({
      kid: key.kid,
      certificates: 2,
    });
    const reread = await parseKeyFile(key.file);
    expect(reread.x5c).toEqual(pemToX5c(readFileSync(pem, 'utf8')));
    expect(reread.publicJwk.x5c).toEqual(reread.x5c);
    expect(reread.publicJwk.d).toBeUndefined();
  });

  it('keys prepare writes a standby key and a CSR for it that names the host', async () => {
    const dir = tempDir();
    const out = await prepareKey(dir, ORIGIN, join(dir, 'next.csr'));
    const key = await parseKeyFile(out.file);
    expect(key.standby).toBe(true);
    const csr = readFileSync(join(dir, 'next.csr'), 'utf8');
    const request = new x509.Pkcs10CertificateRequest(csr);
    expect(await request.verify()).toBe(true);
    const spki = key.publicKey.export({ format: 'der', type: 'spki' });
    expect(Buffer.from(request.publicKey.rawData).equals(spki)).toBe(true);
    expect(request.subject).toBe('CN=issuer.example.org');
  });
});

describe('certificateStanding', () => {
  const now = Date.parse('2026-06-01T00:00:00Z');
  const at = (days: number) => new Date(now + days * 86_400_000);
  it('valid from 30 whole days left, expiring below, expired once past', () => {
    expect(certificateStanding(at(30), now)).toEqual({ days: 30, standing: 'valid' });
    expect(certificateStanding(at(29.9), now)).toEqual({ days: 29, standing: 'expiring' });
    expect(certificateStanding(at(0), now)).toEqual({ days: 0, standing: 'expiring' });
    expect(certificateStanding(at(-0.1), now)).toEqual({ days: -1, standing: 'expired' });
  });
});
