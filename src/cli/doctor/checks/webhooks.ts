import type { DoctorCheck } from '../doctor-context.js';
import { line } from '../line.js';

/** Webhook deliveries: none given up (docs/operations.md "Webhooks"). */
export const webhooks: DoctorCheck = {
  items: ['webhooks'],
  async run(ctx) {
    const store = await ctx.store();
    if (!store) return [];
    const endpoints = (await store.webhooks.listEndpoints()).length;
    const failed = await store.webhooks.countFailedDeliveries();
    // A failed delivery is an event a subscriber never received and that no one retries by itself.
    if (failed > 0)
      return [
        line(
          'webhooks',
          'FAIL',
          `${failed} delivery(ies) failed (given up after WEBHOOK_MAX_ATTEMPTS; npm run admin -- webhooks deliveries <id> --status failed lists them); once the receiver answers: npm run admin -- webhooks retry-failed <id> (every failed delivery of the endpoint) or webhooks retry <deliveryId>`,
        ),
      ];
    return [
      line(
        'webhooks',
        'PASS',
        endpoints === 0 ? 'no webhook endpoint' : `${endpoints} endpoint(s), no failed delivery`,
      ),
    ];
  },
};
