import type { KeyObject } from 'node:crypto';
import { openSealedKey, sealJson } from '../keys/sealed-key.js';
import { WEBHOOK_SECRET_PURPOSE, type WebhookEndpointRecord } from '../store/webhook-store.js';
import { webhookSigningKey } from './signature.js';

/**
 * Endpoint secrets at rest and their HMAC keys: sealed with `kek` where the engine keeps keys
 * sealed (PostgreSQL), else stored as they are; each opened once and kept while it is in use.
 */
export class WebhookSigningKeys {
  private readonly cache = new Map<string, KeyObject>();

  constructor(private readonly kek: Buffer | undefined) {}

  /** The stored form of an endpoint's new secret. */
  seal(endpointId: string, secret: string): string {
    return this.kek ? sealJson(this.kek, endpointId, WEBHOOK_SECRET_PURPOSE, secret) : secret;
  }

  /** The signing keys of `endpoint` now: its secret's, then a replaced one's while it still signs. */
  keys(endpoint: WebhookEndpointRecord, now: Date): KeyObject[] {
    const keys = [this.keyOf(endpoint.id, endpoint.secret)];
    if (endpoint.previousSecret && endpoint.previousUntil && endpoint.previousUntil > now)
      keys.push(this.keyOf(endpoint.id, endpoint.previousSecret));
    return keys;
  }

  /** A stored (maybe sealed) secret's HMAC key. */
  private keyOf(endpointId: string, stored: string): KeyObject {
    const cacheKey = `${endpointId} ${stored}`;
    let key = this.cache.get(cacheKey);
    if (!key) {
      const secret =
        this.kek && !stored.startsWith('whsec_')
          ? (openSealedKey(this.kek, endpointId, WEBHOOK_SECRET_PURPOSE, stored) as string)
          : stored;
      // Rotated and removed endpoints leave stale entries: start afresh rather than grow.
      if (this.cache.size >= 1024) this.cache.clear();
      key = webhookSigningKey(secret);
      this.cache.set(cacheKey, key);
    }
    return key;
  }
}
