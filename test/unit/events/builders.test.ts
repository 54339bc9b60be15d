import { describe, expect, it } from 'vitest';
import {
  credentialDeliveredEvent,
  credentialDeliveryFailedEvent,
  credentialIssuedEvent,
  credentialRenewedEvent,
  keyCompromisedEvent,
  keyRotatedEvent,
  statusChangeEvent,
  statusListPublishedEvent,
} from '../../../src/events/builders.js';
import { type NewWebhookEvent, WEBHOOK_EVENTS } from '../../../src/events/catalogue.js';

// docs/operations.md "Webhooks": each builder writes the fields of its type, in the order of
// WEBHOOK_EVENTS, as the JSON text the stores keep in webhook_events.data.

const fieldsOf = (e: NewWebhookEvent) => Object.keys(JSON.parse(e.data) as object);

describe('event builders', () => {
  it('credential.issued, with and without a status entry', () => {
    const base = {
      credentialId: 'c1',
      schemaId: 's',
      proofType: 'sd-jwt-vc',
      channel: 'hosted',
      holderDid: 'did:key:z1',
      revocationNonce: 7,
      expiresAt: '2030-01-01T00:00:00.000Z',
    };
    const withStatus = credentialIssuedEvent({ ...base, status: { uri: 'https://i/status/0', idx: 3 } });
    expect(withStatus.type).toBe('credential.issued');
    expect(withStatus.id).toMatch(/^evt_[0-9a-f-]{36}$/);
    expect(withStatus.data).toBe(
      '{"credentialId":"c1","schemaId":"s","proofType":"sd-jwt-vc","channel":"hosted","holderDid":"did:key:z1","revocationNonce":7,"status":{"uri":"https://i/status/0","idx":3},"expiresAt":"2030-01-01T00:00:00.000Z"}',
    );
    expect(fieldsOf(withStatus)).toEqual([...WEBHOOK_EVENTS['credential.issued']]);
    const without = credentialIssuedEvent({ ...base, holderDid: undefined });
    expect(fieldsOf(without)).toEqual([
      'credentialId',
      'schemaId',
      'proofType',
      'channel',
      'revocationNonce',
      'expiresAt',
    ]);
  });

  it('the upload events', () => {
    expect(credentialDeliveredEvent('c1', null, 2)).toMatchObject({
      type: 'credential.delivered',
      data: '{"credentialId":"c1","storagePath":null,"attempts":2}',
    });
    expect(credentialDeliveryFailedEvent('c1', 5, 'down')).toMatchObject({
      type: 'credential.delivery_failed',
      data: '{"credentialId":"c1","attempts":5,"lastError":"down"}',
    });
  });

  it('status changes: actor and reason null when absent, jobId only from a job', () => {
    const record = { credentialId: 'c1', revocationNonce: 9 };
    expect(statusChangeEvent(record, 'revoke', undefined)).toMatchObject({
      type: 'credential.revoked',
      data: '{"credentialId":"c1","revocationNonce":9,"actor":null,"reason":null}',
    });
    expect(statusChangeEvent(record, 'suspend', { actor: 'a', reason: 'r', jobId: 'j' })).toMatchObject({
      type: 'credential.suspended',
      data: '{"credentialId":"c1","revocationNonce":9,"actor":"a","reason":"r","jobId":"j"}',
    });
    expect(statusChangeEvent(record, 'unsuspend', { actor: 'a' }).type).toBe('credential.unsuspended');
  });

  it('renewal, keys and status lists', () => {
    expect(credentialRenewedEvent('new', 'old', 's').data).toBe(
      '{"credentialId":"new","renewedFrom":"old","schemaId":"s"}',
    );
    expect(keyRotatedEvent('credential-signing', 'k2', ['k1', 'k0']).data).toBe(
      '{"purpose":"credential-signing","kid":"k2","retiredKid":"k1"}',
    );
    expect(keyRotatedEvent('credential-signing', 'k2', []).data).toBe(
      '{"purpose":"credential-signing","kid":"k2","retiredKid":null}',
    );
    expect(keyCompromisedEvent('k1', { actor: 'ops', reason: 'leak' })).toMatchObject({
      type: 'key.compromised',
      data: '{"kid":"k1","actor":"ops","reason":"leak"}',
    });
    expect(statusListPublishedEvent(0, 'https://i/status/0')).toMatchObject({
      type: 'status_list.published',
      data: '{"partition":0,"uri":"https://i/status/0"}',
    });
  });
});
