import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateMissingKeys } from '../../src/cli/keys.js';
import { expectError } from '../helpers/errors.js';
import { removeDir, startIssuer, type TestIssuer, tempDir } from '../helpers/issuer.js';

// docs/operations.md "Webhooks": in production an endpoint's address may not be loopback, private,
// link-local, multicast or reserved, written in any form, IPv6 forms that embed an IPv4 address
// included (they reach that IPv4 address on networks that route them).
describe('webhook endpoint URLs in production', () => {
  const dir = tempDir();
  let issuer: TestIssuer;
  beforeAll(async () => {
    issuer = await startIssuer({
      dir,
      env: {
        NODE_ENV: 'production',
        ISSUER_ORIGIN: 'https://issuer.example.com',
        ALLOW_INSECURE_UPSTREAM: '1',
      },
      exampleClaimsFile: '',
      prepare: async () => {
        await generateMissingKeys(join(dir, 'keys'), { production: true });
      },
    });
  });
  afterAll(async () => {
    await issuer?.close();
    removeDir(dir);
  });

  it.each([
    ['an IPv4-compatible loopback', 'https://[::127.0.0.1]/hooks'],
    ['an IPv4-mapped multicast address', 'https://[::ffff:224.0.0.1]/hooks'],
    ['a NAT64 loopback', 'https://[64:ff9b::127.0.0.1]/hooks'],
    ['a NAT64 private address', 'https://[64:ff9b::10.0.0.1]/hooks'],
    ['a 6to4 loopback', 'https://[2002:7f00:1::1]/hooks'],
    ['a 6to4 address of 240/4', 'https://[2002:f000:1::1]/hooks'],
    ['the broadcast address', 'https://255.255.255.255/hooks'],
    ['240/4', 'https://240.1.2.3/hooks'],
    ['198.18/15', 'https://198.19.0.1/hooks'],
    ['192.0.0/24', 'https://192.0.0.170/hooks'],
    ['a multicast address', 'https://239.255.255.250/hooks'],
    ['a loopback in hexadecimal', 'https://0x7f000001/hooks'],
  ])('refuses %s: 400 naming url, nothing registered', async (_name, url) => {
    const res = await issuer.admin('/admin/webhooks', { url, events: ['*'] });
    await expectError(res, 400, 'INVALID_PARAMETER', 'url');
    expect(
      ((await (await issuer.admin('/admin/webhooks')).json()) as { webhooks: unknown[] }).webhooks,
    ).toEqual([]);
  });

  it('takes a public address, also as its 6to4 or NAT64 form', async () => {
    for (const url of [
      'https://93.184.216.34/hooks',
      'https://[2002:5db8:d822::1]/hooks',
      'https://[64:ff9b::5db8:d822]/hooks',
    ]) {
      const res = await issuer.admin('/admin/webhooks', { url, events: ['*'] });
      expect(res.status).toBe(201);
    }
  });
});
