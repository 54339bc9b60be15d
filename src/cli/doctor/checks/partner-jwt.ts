import { postJson } from '../../../outbound/http-json.js';
import { PartnerJwtSigner } from '../../../service-client/partner-jwt.js';
import { networkCause } from '../../admin-client.js';
import type { DoctorCheck } from '../doctor-context.js';
import { line } from '../line.js';

const item = 'partner JWT';

/**
 * docs/interface.md "The partner JWT": the hosting service has no read-only route under the
 * partner JWT; `initialize-user` creates the account it is asked for. The check sends it an empty
 * body: a service that accepts the JWT refuses the body (400) and creates nothing; one that
 * refuses the JWT answers 401 (or 403).
 */
export const partnerJwt: DoctorCheck = {
  items: [item],
  async run(ctx) {
    const { config } = ctx;
    const ring = await ctx.ring();
    if (ring instanceof Error) return [line(item, 'FAIL', 'no partner-jwt key to sign with (see keys)')];
    if (!config.serviceBaseUrl || !config.partnerId)
      return [line(item, 'FAIL', 'SERVICE_V1_BASE_URL and PARTNER_ID are needed to check it')];
    const signer = new PartnerJwtSigner({
      identity: ctx.identity,
      partnerId: config.partnerId,
      key: () => ring.partner,
    });
    const url = `${config.serviceBaseUrl}/auth/initialize-user`;
    const kid = ring.partner.kid;
    try {
      const res = await postJson(
        url,
        {},
        { headers: { 'x-partner-auth': await signer.token() }, timeoutMs: ctx.timeoutMs },
      );
      if (res.status === 400)
        return [line(item, 'PASS', `${url} accepted the JWT (kid ${kid}) and refused the empty body (400)`)];
      if (res.status === 401 || res.status === 403)
        return [
          line(
            item,
            'FAIL',
            `${url} answered ${res.status}: the service refuses our partner JWT (kid ${kid}): is PARTNER_ID right and jwks.json reachable by the service?`,
          ),
        ];
      return [
        line(
          item,
          'WARN',
          `${url} answered ${res.status} to an empty body; the hosting service has no read-only route, so acceptance cannot be told`,
        ),
      ];
    } catch (err) {
      return [line(item, 'FAIL', `${url}: ${networkCause(err)}`)];
    }
  },
};
