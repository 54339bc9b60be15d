import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

type Cidr<T> = [T, number];
const v4 = (cidr: string) => ipaddr.IPv4.parseCIDR(cidr) as Cidr<ipaddr.IPv4>;
const v6 = (cidr: string) => ipaddr.IPv6.parseCIDR(cidr) as Cidr<ipaddr.IPv6>;

// Addresses a production webhook may not reach: the issuer's own network is not the subscriber's
// to probe. The special-purpose ranges of RFC 6890 §2.2.2 (IPv4) and §2.2.3 (IPv6) and their
// successors that are private, local, reserved, documentation, benchmarking or multicast: RFC 1122
// §3.2.1.3 (0/8, 127/8), RFC 1918, RFC 6598 (100.64/10), RFC 3927 (169.254/16), RFC 6890
// (192.0.0/24), RFC 5737 and RFC 9637 (documentation), RFC 2544 (198.18/15), RFC 7526
// (192.88.99/24), RFC 5771 (224/4), RFC 1112 §4 (240/4, 255.255.255.255), RFC 4291 §2.5 and
// §2.7, RFC 4193 (fc00::/7), RFC 3879 (fec0::/10), RFC 6666 (100::/64), RFC 5180, RFC 7343,
// RFC 8215 (64:ff9b:1::/48, a network's own NAT64).
const BLOCKED_V4 = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.0.0.0/24',
  '192.0.2.0/24',
  '192.88.99.0/24',
  '192.168.0.0/16',
  '198.18.0.0/15',
  '198.51.100.0/24',
  '203.0.113.0/24',
  '224.0.0.0/4',
  '240.0.0.0/4',
].map(v4);
const BLOCKED_V6 = [
  '::/128',
  '::1/128',
  '100::/64',
  '2001:2::/48',
  '2001:10::/28',
  '2001:20::/28',
  '2001:db8::/32',
  '3fff::/20',
  '64:ff9b:1::/48',
  'fc00::/7',
  'fe80::/10',
  'fec0::/10',
  'ff00::/8',
].map(v6);

// IPv6 forms that carry an IPv4 address and reach it: IPv4-mapped (RFC 4291 §2.5.5.2),
// IPv4-compatible (§2.5.5.1, deprecated but still routed by some stacks), IPv4-translated
// (RFC 6145), the NAT64 well-known prefix (RFC 6052 §2.1), 6to4 (RFC 3056 §2) and Teredo
// (RFC 4380 §4, the client's address inverted).
const MAPPED = v6('::ffff:0:0/96');
const COMPATIBLE = v6('::/96');
const TRANSLATED = v6('::ffff:0:0:0/96');
const NAT64 = v6('64:ff9b::/96');
const SIX_TO_FOUR = v6('2002::/16');
const TEREDO = v6('2001::/32');

const ipv4Of = (high: number, low: number) => new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);

/** The IPv4 addresses an IPv6 address reaches through its embedded forms (none for a plain one). */
function embeddedIpv4(address: ipaddr.IPv6): ipaddr.IPv4[] {
  const p = address.parts;
  if (address.match(MAPPED) || address.match(COMPATIBLE) || address.match(TRANSLATED) || address.match(NAT64))
    return [ipv4Of(p[6]!, p[7]!)];
  if (address.match(SIX_TO_FOUR)) return [ipv4Of(p[1]!, p[2]!)];
  if (address.match(TEREDO)) return [ipv4Of(p[2]!, p[3]!), ipv4Of(~p[6]! & 0xffff, ~p[7]! & 0xffff)];
  return [];
}

/**
 * An IPv6 literal whose last 32 bits are written as a dotted quad (RFC 4291 §2.2, `::127.0.0.1`),
 * with those bits in hexadecimal as every `ipaddr.js` version parses them; anything else as it is.
 */
function hexTail(address: string): string {
  const dotted = /^(.*:)(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(address);
  if (!dotted || isIP(address) !== 6) return address;
  const [a, b, c, d] = dotted.slice(2).map(Number) as [number, number, number, number];
  return `${dotted[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
}

const blockedIpv4 = (address: ipaddr.IPv4) => BLOCKED_V4.some((range) => address.match(range));

/**
 * Whether `address` (an IP literal, in any form `ipaddr.js` parses) is one a production webhook
 * may not reach: loopback, private, link-local, unspecified, multicast, broadcast, reserved,
 * documentation or benchmarking, directly or through an IPv6 form that embeds such an IPv4
 * address. Not an IP literal: false.
 */
export function isPrivateAddress(address: string): boolean {
  const literal = hexTail(address);
  if (!ipaddr.isValid(literal)) return false;
  const parsed = ipaddr.parse(literal);
  if (parsed.kind() === 'ipv4') return blockedIpv4(parsed as ipaddr.IPv4);
  const six = parsed as ipaddr.IPv6;
  if (BLOCKED_V6.some((range) => six.match(range))) return true;
  return embeddedIpv4(six).some(blockedIpv4);
}

export interface EndpointPolicy {
  /** Production: https only, and no private address unless `allowPrivate`. */
  production: boolean;
  /** WEBHOOK_ALLOW_PRIVATE=1. */
  allowPrivate: boolean;
}

/** `localhost` and its subdomains (RFC 6761 §6.3): always the machine itself. */
const isLocalhostName = (host: string) => host === 'localhost' || host.endsWith('.localhost');

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
  // The WHATWG URL parser has already normalised the host (IPv4 in any notation to dotted decimal,
  // IPv6 compressed and in brackets).
  const host = parsed.hostname
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '')
    .toLowerCase();
  if (policy.production && !policy.allowPrivate && (isPrivateAddress(host) || isLocalhostName(host)))
    return 'must not be a loopback, private, link-local, multicast or reserved address in production';
  return undefined;
}
