import { createPublicKey, X509Certificate } from 'node:crypto';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { generateEncodedKeyPair } from '../../../src/envelope/keys.js';
import { DEV_CA_PEM, type DevCa, issueDevLeaf, loadOrCreateDevCa } from '../../../src/keys/dev-ca.js';
import { X5cTrust } from '../../../src/oid4vci/x5c-trust.js';
import { tempDir } from '../../helpers/tmp.js';

const YEAR_MS = 365 * 86_400_000;
const publicKey = () =>
  createPublicKey({ key: generateEncodedKeyPair('p256').spki, format: 'der', type: 'spki' });

// docs/haip.md "Wallet attestation": the chain an attestation carries must end at a trust anchor.
describe('X5cTrust', () => {
  let ca: DevCa;
  let other: DevCa;
  let trust: X5cTrust;
  beforeAll(async () => {
    const dir = tempDir();
    ca = await loadOrCreateDevCa(dir);
    other = await loadOrCreateDevCa(tempDir());
    trust = X5cTrust.fromFile('OID4VCI_WALLET_TRUST', join(dir, DEV_CA_PEM));
  });

  it('trusts a leaf the anchor issued, with or without the anchor in the chain', async () => {
    const chain = await issueDevLeaf(ca, publicKey(), 'https://wallet-provider.example');
    expect(trust.problem(chain, new Date())).toBeUndefined();
    expect(trust.problem(chain.slice(0, 1), new Date())).toBeUndefined();
  });

  it('names what is wrong: another CA, an expired leaf, a broken link, no certificates', async () => {
    const now = new Date();
    const foreign = await issueDevLeaf(other, publicKey(), 'https://stranger.example');
    expect(trust.problem(foreign.slice(0, 1), now)).toMatch(
      /which no certificate of OID4VCI_WALLET_TRUST issued/,
    );
    const old = await issueDevLeaf(
      ca,
      publicKey(),
      'https://wallet-provider.example',
      new Date(now.getTime() - 3 * YEAR_MS),
    );
    expect(trust.problem(old.slice(0, 1), now)).toMatch(/x5c\[0\] is not valid now/);
    const [leaf] = await issueDevLeaf(ca, publicKey(), 'https://wallet-provider.example');
    const otherRoot = Buffer.from(new X509Certificate(other.certificate.toString('pem')).raw).toString(
      'base64',
    );
    expect(trust.problem([leaf!, otherRoot], now)).toMatch(/x5c\[0\] is not issued and signed by x5c\[1\]/);
    expect(trust.problem(['bm90IGEgY2VydA=='], now)).toMatch(/not a DER X.509 certificate/);
    expect(trust.problem('one', now)).toMatch(/not a list/);
    expect(trust.problem([], now)).toMatch(/not a list/);
  });

  it('a trust file without certificates is refused, naming the setting', () => {
    expect(() => X5cTrust.fromFile('OID4VCI_KEY_ATTESTATION_TRUST', '/nonexistent/anchors.pem')).toThrow(
      /^OID4VCI_KEY_ATTESTATION_TRUST: \/nonexistent\/anchors\.pem: /,
    );
  });
});
