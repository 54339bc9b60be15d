import { redactDatabaseUrl } from '../../../store/database-url.js';
import type { DoctorCheck } from '../doctor-context.js';
import { line } from '../line.js';

/** REDIS_URL, when set: the shared rate-limit counters' Redis answers PING. */
export const redis: DoctorCheck = {
  items: ['redis'],
  async run(ctx) {
    const url = ctx.secrets.redisUrl;
    if (url === undefined) return [];
    // The URL may carry a password.
    const where = redactDatabaseUrl(url);
    // Loaded only when REDIS_URL is set (a few tenths of a second of CPU).
    const { createClient } = await import('redis');
    const client = createClient({
      url,
      disableOfflineQueue: true,
      socket: { connectTimeout: ctx.timeoutMs, reconnectStrategy: false },
    });
    // Reported through connect()'s rejection below; unhandled it would end the process.
    client.on('error', () => {});
    try {
      await client.connect();
      const pong = await client.ping();
      return [
        line(
          'redis',
          'PASS',
          `${where} answered ${pong}; rate-limit counters under ${ctx.config.rateLimitRedisPrefix}<group>: (RATE_LIMIT_REDIS_PREFIX, shared by every instance)`,
        ),
      ];
    } catch (err) {
      return [
        line(
          'redis',
          'FAIL',
          `REDIS_URL: ${where}: ${(err as Error).message || (err as Error).name}; rate limits fail open (each instance lets requests through uncounted) until it answers`,
        ),
      ];
    } finally {
      // A refused connect leaves the client closed already (no reconnection strategy).
      if (client.isOpen) await client.close();
    }
  },
};
