import proxyAddr from 'proxy-addr';
import { z } from 'zod';

/**
 * Express's `trust proxy` (which hops' X-Forwarded-For to believe, so rate limits key on the
 * client). `false` / `0`: none (the default); a hop count; or a comma-separated list of
 * addresses, CIDR subnets and the names `loopback`, `linklocal`, `uniquelocal`, checked here by
 * the same compiler Express uses (proxy-addr), so a bad value is a config line, not a TypeError
 * at start-up. `true` (believe any X-Forwarded-For) is refused in production by `loadConfig`.
 */
export type TrustProxy = boolean | number | string[];

export const TrustProxySchema = z.string().transform((value, ctx): TrustProxy => {
  const v = value.trim();
  if (v === 'false' || v === '0') return false;
  if (v === 'true') return true;
  if (/^\d+$/.test(v)) return Number(v);
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
