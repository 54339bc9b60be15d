import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { endpointUrlProblem, isPrivateAddress } from '../../../src/webhooks/endpoint-address.js';
import { newWebhookSecret, webhookHeaders, webhookSigningKey } from '../../../src/webhooks/signature.js';

// Standard Webhooks specification, "Signature scheme": checked by the reference verifier.
describe('webhook signatures', () => {
  const body = JSON.stringify({ type: 'credential.issued', timestamp: '2026-01-01T00:00:00.000Z', data: {} });

  it('verify with the standardwebhooks library, also with a second (previous) secret beside the new one', () => {
    const current = newWebhookSecret();
    const previous = newWebhookSecret();
    expect(current).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    const headers = webhookHeaders([current, previous].map(webhookSigningKey), 'msg_1', new Date(), body);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    for (const secret of [current, previous])
      expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(newWebhookSecret()).verify(body, headers)).toThrow();
  });

  it('match the reference signer byte for byte', () => {
    const secret = newWebhookSecret();
    const at = new Date(1_700_000_000_000);
    expect(webhookHeaders([webhookSigningKey(secret)], 'msg_2', at, body)['webhook-signature']).toBe(
      new Webhook(secret).sign('msg_2', at, body),
    );
  });
});

describe('webhook endpoint URLs', () => {
  const production = { production: true, allowPrivate: false };

  it.each([
    ['127.0.0.1', true],
    ['10.1.2.3', true],
    ['172.20.0.1', true],
    ['192.168.1.1', true],
    ['169.254.169.254', true],
    ['::1', true],
    ['fd00::1', true],
    ['fe80::1', true],
    ['::ffff:127.0.0.1', true],
    // IPv4 ranges that reach inside on some networks (RFC 6890).
    ['224.0.0.1', true],
    ['239.255.255.250', true],
    ['240.0.0.1', true],
    ['255.255.255.255', true],
    ['198.18.0.1', true],
    ['198.19.255.254', true],
    ['192.0.0.170', true],
    ['100.64.0.1', true],
    ['0.0.0.0', true],
    // IPv6 forms embedding such an IPv4 address: compatible, mapped, translated, NAT64, 6to4, Teredo.
    ['::127.0.0.1', true],
    ['::7f00:1', true],
    ['::a00:1', true],
    ['::ffff:7f00:1', true],
    ['::ffff:e000:1', true],
    ['::ffff:0:7f00:1', true],
    ['64:ff9b::127.0.0.1', true],
    ['64:ff9b::ffff:ffff', true],
    ['64:ff9b::c612:1', true],
    ['64:ff9b::c000:aa', true],
    ['2002:7f00:1::1', true],
    ['2002:f000:1::', true],
    ['2002:c0a8:101::1', true],
    ['2001:0:5db8:d822:0:0:80ff:fffe', true],
    ['64:ff9b:1::a00:1', true],
    ['ff02::1', true],
    ['fec0::1', true],
    ['2001:db8::1', true],
    // Public addresses, also in those forms.
    ['93.184.216.34', false],
    ['2606:4700::1', false],
    ['64:ff9b::5db8:d822', false],
    ['2002:5db8:d822::1', false],
    ['::ffff:5db8:d822', false],
    ['not an address', false],
  ])('%s private: %s', (address, expected) => {
    expect(isPrivateAddress(address)).toBe(expected);
  });

  it('production takes https to a public address; development also http and loopback', () => {
    expect(endpointUrlProblem('https://hooks.example.com/in', production)).toBeUndefined();
    expect(endpointUrlProblem('http://hooks.example.com/in', production)).toBeDefined();
    expect(endpointUrlProblem('https://127.0.0.1/in', production)).toBeDefined();
    expect(endpointUrlProblem('https://[::1]/in', production)).toBeDefined();
    expect(endpointUrlProblem('https://localhost/in', production)).toBeDefined();
    expect(endpointUrlProblem('https://api.localhost/in', production)).toBeDefined();
    // The URL parser's other notations of an address are normalised before the check.
    expect(endpointUrlProblem('https://0x7f.1/in', production)).toBeDefined();
    expect(endpointUrlProblem('https://2130706433/in', production)).toBeDefined();
    expect(endpointUrlProblem('https://[::127.0.0.1]/in', production)).toBeDefined();
    expect(endpointUrlProblem('https://[64:ff9b::127.0.0.1]/in', production)).toBeDefined();
    expect(endpointUrlProblem('https://[2002:7f00:1::]/in', production)).toBeDefined();
    expect(endpointUrlProblem('https://[2002:5db8:d822::1]/in', production)).toBeUndefined();
    expect(
      endpointUrlProblem('https://10.0.0.5/in', { production: true, allowPrivate: true }),
    ).toBeUndefined();
    const development = { production: false, allowPrivate: false };
    expect(endpointUrlProblem('http://127.0.0.1:9999/in', development)).toBeUndefined();
    expect(endpointUrlProblem('ftp://hooks.example.com/', development)).toBeDefined();
    expect(endpointUrlProblem('https://user:pw@hooks.example.com/', development)).toBeDefined();
    expect(endpointUrlProblem('not a url', development)).toBeDefined();
  });
});
