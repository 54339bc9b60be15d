import { X509Certificate } from 'node:crypto';
import type { Request, Response } from 'express';
import { z } from 'zod';
import type { AppContext } from '../../../context.js';
import { isActive, type KeyPurpose, type ManagedKey } from '../../../keys/key-ring.js';
import { publishedSigningKeys } from '../../../keys/published-keys.js';
import { x5cRotation } from '../../../keys/rotation-certificate.js';
import type { AuditActor } from '../../../model.js';
import type { Store } from '../../../store/store.js';
import { keyRotatedEvent } from '../../../store/webhook-store.js';
import { parseInput } from '../../middleware/validate.js';
import { json200, type RouteFactory, TAGS } from '../route.js';
import { auditActor, ReasonField } from './fields.js';

function describeKey(k: ManagedKey) {
  return {
    kid: k.kid,
    purpose: k.purpose,
    alg: k.alg,
    createdAt: k.createdAt.toISOString(),
    retiredAt: k.retiredAt?.toISOString() ?? null,
    active: isActive(k),
    standby: k.standby,
  };
}

/** `GET /admin/keys`. */
export const listKeysRoute: RouteFactory = (ctx) => ({
  method: 'get',
  path: '/admin/keys',
  group: 'admin',
  auth: 'admin-api-key',
  doc: {
    operationId: 'admin-keys',
    summary: 'Every key on disk and whether it is published',
    tags: TAGS.admin,
    responses: json200('`{ keys: [...] }`'),
  },
  handler: listKeys(ctx),
});

/** `POST /admin/keys/rotate`. */
export const rotateKeysRoute: RouteFactory = (ctx) => ({
  method: 'post',
  path: '/admin/keys/rotate',
  group: 'admin',
  auth: 'admin-api-key',
  doc: {
    operationId: 'admin-keys-rotate',
    summary: 'Rotate a signing or partner key',
    tags: TAGS.admin,
    body: RotateKeyBodySchema,
    responses: json200('The new and retired keys'),
  },
  handler: rotateKeys(ctx),
});

/**
 * `GET /admin/keys` (kit extension): every key on disk. Credential-signing keys also say whether
 * they are published (retired keys stay published until the last credential they signed expires).
 */
export function listKeys(ctx: Pick<AppContext, 'keys'> & { store: Pick<Store, 'issuances'> }) {
  return async (_req: Request, res: Response) => {
    res.json({ keys: await keyInventory(ctx) });
  };
}

/**
 * Every key of the ring (`GET /admin/keys`, the console's Keys page): signing keys say whether
 * they are published and when the last credential they signed expires; a key with a certificate
 * chain (`SD_JWT_ISSUER=x5c`) says when its leaf certificate expires.
 */
export async function keyInventory(ctx: Pick<AppContext, 'keys'> & { store: Pick<Store, 'issuances'> }) {
  const ring = ctx.keys.current();
  const published = new Set((await publishedSigningKeys(ring, ctx.store.issuances)).map((j) => j.kid));
  const signing = await Promise.all(
    ring.signingKeys.map(async (k) => {
      const last = await ctx.store.issuances.latestExpiryForKid(k.kid);
      return {
        ...describeKey(k),
        published: published.has(k.kid),
        lastCredentialExpiresAt: last?.toISOString() ?? null,
        ...certificateExpiry(k),
      };
    }),
  );
  // The partner JWKS lists every partner key (retired ones too), so all are published.
  const partner = ring.partnerKeys.map((k) => ({ ...describeKey(k), published: true }));
  return [...signing, ...partner];
}

function certificateExpiry(k: ManagedKey): { certificateExpiresAt?: string } {
  const leaf = k.x5c?.[0];
  if (!leaf) return {};
  try {
    return {
      certificateExpiresAt: new Date(new X509Certificate(Buffer.from(leaf, 'base64')).validTo).toISOString(),
    };
  } catch {
    return {};
  }
}

export const RotateKeyBodySchema = z.object({
  purpose: z
    .enum(['credential-signing', 'partner-jwt'], { error: 'must be credential-signing or partner-jwt' })
    .default('credential-signing'),
  reason: ReasonField,
});

/**
 * `POST /admin/keys/rotate` (kit extension): retires the active key of a purpose, adds a new one
 * that signs from now on, reloads the ring and re-signs the status lists with the new key.
 */
export function rotateKeys(ctx: Pick<AppContext, 'keys' | 'config' | 'status' | 'store' | 'log'>) {
  let queue: Promise<unknown> = Promise.resolve();
  return async (req: Request, res: Response) => {
    const body = parseInput(RotateKeyBodySchema, req.body ?? {});
    // One rotation at a time in this process; across instances the key store serializes them
    // (a PostgreSQL advisory lock), so two at once never each retire the other's new key.
    const run = queue.then(() => rotate(body.purpose, auditActor(res, body.reason)));
    queue = run.catch(() => {});
    const answer = await run;
    ctx.log.info(
      { event: 'key_rotation', purpose: answer.purpose, retired: answer.retired, created: answer.created },
      'key rotated',
    );
    res.json(answer);
  };

  async function rotate(purpose: KeyPurpose, actor: AuditActor) {
    const now = new Date();
    const x5c = purpose === 'credential-signing' ? x5cRotation(ctx.config, now) : undefined;
    const { retired, created, eventRecorded } = await ctx.keys.rotate(purpose, now, x5c);
    // Key files (SQLite) are not in a database transaction: their event is written once the new
    // key is in place. Key rows (PostgreSQL) wrote it in the rotation's transaction.
    await ctx.store.audit.record({ ...actor, at: now, action: 'keys.rotate', target: created.kid });
    if (!eventRecorded)
      await ctx.store.webhooks.recordEvent(
        keyRotatedEvent(
          purpose,
          created.kid,
          retired.map((k) => k.kid),
        ),
        now,
      );
    const lists = purpose === 'credential-signing' ? await ctx.status.publishAll() : [];
    return {
      purpose,
      created: describeKey(created),
      retired: retired.map((k) => ({ ...describeKey(k), retiredAt: now.toISOString(), active: false })),
      statusListsRepublished: lists.length,
    };
  }
}
