import proxyAddr from 'proxy-addr';
import { z } from 'zod';

/**
 * Express's `trust proxy` (which hops' X-Forwarded-For to believe, so rate limits key on the
 * client). `false` / `0`: none (the default); a hop count; or a comma-separated list of
 * addresses, CIDR subnets and the names `loopback`, `linklocal`, `uniquelocal`, checked here by
 * the same compiler Express uses (proxy-addr), so a bad value is a config line, not a TypeError
 * at start-up. `true` (believe any X-Forwarded-For) is refused in production by `loadConfig`.
 *
 * A hop count above {@link MAX_TRUST_PROXY_HOPS} is refused in every environment: a count larger
 * than the real proxy chain believes entries the client wrote itself, so `TRUST_PROXY=1000` would
 * be `true` under another name (docs/security.md "Client addresses behind a proxy").
 */
export type TrustProxy = boolean | number | string[];

/** The longest proxy chain a hop count may describe; longer chains name their proxies' addresses. */
export const MAX_TRUST_PROXY_HOPS = 5;

export const TrustProxySchema = z.string().transform((value, ctx): TrustProxy => {
  const v = value.trim();
  if (v === 'false' || v === '0') return false;
  if (v === 'true') return true;
  if (/^\d+$/.test(v)) {
    const hops = Number(v);
    if (hops > MAX_TRUST_PROXY_HOPS) {
      ctx.issues.push({
        code: 'custom',
        message: `a hop count of at most ${MAX_TRUST_PROXY_HOPS} (got ${v}); a longer chain is given as the proxies' addresses or subnets`,
        input: value,
      });
      return z.NEVER;
    }
    return hops;
  }
  const list = v.split(',').map((s) => s.trim());
  if (list.some((s) => s === '')) {
    ctx.issues.push({
      code: 'custom',
      message:
        'a comma-separated list of addresses, subnets or loopback/linklocal/uniquelocal has an empty entry',
      input: value,
    });
    return z.NEVER;
  }
  try {
    proxyAddr.compile(list);
  } catch (err) {
    ctx.issues.push({
      code: 'custom',
      message: `${(err as Error).message} (expected false, a hop count, or addresses, subnets and loopback/linklocal/uniquelocal separated by commas)`,
      input: value,
    });
    return z.NEVER;
  }
  return list;
});
