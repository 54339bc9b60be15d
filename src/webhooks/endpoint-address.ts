import { BlockList, isIP } from 'node:net';

// Addresses a production webhook may not reach (RFC 1918, RFC 4193, RFC 3927, RFC 6598, RFC 4291
// §2.5): the issuer's own network is not the subscriber's to probe.
const PRIVATE = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
] as const)
  PRIVATE.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
] as const)
  PRIVATE.addSubnet(net, bits, 'ipv6');

/** Whether `address` (an IP literal) is loopback, private, link-local or unspecified. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return PRIVATE.check(address, 'ipv4');
  if (family === 6) {
    // An IPv4-mapped IPv6 address reaches the IPv4 one.
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    if (mapped) return PRIVATE.check(mapped[1]!, 'ipv4');
    return PRIVATE.check(address, 'ipv6');
  }
  return false;
}

export interface EndpointPolicy {
  /** Production: https only, and no private address unless `allowPrivate`. */
  production: boolean;
  /** WEBHOOK_ALLOW_PRIVATE=1. */
  allowPrivate: boolean;
}

/** What is wrong with `url` as a webhook endpoint under `policy`, or undefined. */
export function endpointUrlProblem(url: string, policy: EndpointPolicy): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'not a URL';
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') return 'must be http or https';
  if (policy.production && parsed.protocol !== 'https:') return 'must be https in production';
  if (parsed.username || parsed.password) return 'must not carry credentials';
  if (parsed.hash) return 'must not have a fragment';
  const host = parsed.hostname.replace(/^\[|\]$/g, '');
  if (policy.production && !policy.allowPrivate && (isPrivateAddress(host) || host === 'localhost'))
    return 'must not be a loopback, private or link-local address in production';
  return undefined;
}
