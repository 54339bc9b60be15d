import { X509Certificate } from 'node:crypto';
import type { Request, Response } from 'express';
import { z } from 'zod';
import type { AppContext } from '../../../context.js';
import { keyCompromisedEvent, keyRotatedEvent } from '../../../events/builders.js';
import { compromisedKeyOf, compromisePlaybook } from '../../../keys/compromise-playbook.js';
import { isActive, type ManagedKey } from '../../../keys/key-ring.js';
import { compromisedKids, publishedSigningKeys } from '../../../keys/published-keys.js';
import { KeyRotation, type RotationOutcome } from '../../../keys/rotation.js';
import { x5cRotation, x5cRotationRefusal } from '../../../keys/rotation-certificate.js';
import type { Store } from '../../../store/store.js';
import { parseInput } from '../../middleware/validate.js';
import { Timestamp } from '../responses.js';
import { json200, type RouteFactory, TAGS } from '../route.js';
import { auditActor, ReasonField, RequiredReasonField } from './fields.js';

const PurposeSchema = z.enum(['credential-signing', 'partner-jwt']);

/** A key as the admin API describes it (never its private half). */
const KeySchema = z.object({
  kid: z.string(),
  purpose: PurposeSchema,
  alg: z.string(),
  createdAt: Timestamp,
  retiredAt: Timestamp.nullable(),
  active: z.boolean(),
  standby: z.boolean(),
});

/** `GET /admin/keys`: signing keys also say whether they are published, compromised and in use. */
export const KeyInventorySchema = z.object({
  keys: z.array(
    KeySchema.extend({
      published: z.boolean(),
      compromised: z.boolean().optional(),
      lastCredentialExpiresAt: Timestamp.nullable().optional(),
      certificateExpiresAt: Timestamp.optional(),
    }),
  ),
});

export const RotationSchema = z.object({
  purpose: PurposeSchema,
  created: KeySchema,
  retired: z.array(KeySchema),
  statusListsRepublished: z.number().int(),
});

/** The compromise playbook's answer; with dryRun, the plan only. */
const CompromisedAnswerSchema = z.object({
  kid: z.string(),
  active: z.boolean(),
  alreadyCompromised: z.boolean(),
  credentials: z.number().int(),
  /** dryRun: why the rotation away from an active key would be refused in x5c mode, else null. */
  rotationRefused: z.string().nullable().optional(),
  dryRun: z.literal(true).optional(),
  compromised: z.literal(true).optional(),
  rotatedTo: z.string().nullable().optional(),
  jobId: z.string().optional(),
  statusListsRepublished: z.number().int().optional(),
});

function describeKey(k: ManagedKey): z.infer<typeof KeySchema> {
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
    responses: json200('`{ keys: [...] }`', KeyInventorySchema),
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
    responses: json200('The new and retired keys', RotationSchema),
    // x5c mode without a certified standby key (docs/security.md "Keys shared by several instances").
    errors: ['CONFLICT'],
  },
  handler: rotateKeys(ctx),
});

/**
 * `GET /admin/keys` (kit extension): every key on disk. Credential-signing keys also say whether
 * they are published (retired keys stay published until the last credential they signed expires).
 */
export function listKeys(
  ctx: Pick<AppContext, 'identity'> & { store: Pick<Store, 'issuances' | 'compromisedKeys'> },
) {
  return async (_req: Request, res: Response) => {
    res.json({ keys: await keyInventory(ctx) });
  };
}

/**
 * Every key of the ring (`GET /admin/keys`, the console's Keys page): signing keys say whether
 * they are published and when the last credential they signed expires; a key with a certificate
 * chain (`SD_JWT_ISSUER=x5c`) says when its leaf certificate expires.
 */
export async function keyInventory(
  ctx: Pick<AppContext, 'identity'> & { store: Pick<Store, 'issuances' | 'compromisedKeys'> },
) {
  const ring = ctx.identity.keys.current();
  const compromised = await compromisedKids(ctx.store.compromisedKeys);
  const published = new Set(
    (await publishedSigningKeys(ring, ctx.store.issuances, new Date(), compromised)).map((j) => j.kid),
  );
  const signing = await Promise.all(
    ring.signingKeys.map(async (k) => {
      const last = await ctx.store.issuances.latestExpiryForKid(k.kid);
      return {
        ...describeKey(k),
        published: published.has(k.kid),
        compromised: compromised.has(k.kid),
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

/** The rotation of the route's context (`keys/rotation.ts`), its event and status lists wired in. */
export function keyRotation(ctx: Pick<AppContext, 'config' | 'identity' | 'status' | 'store'>): KeyRotation {
  return new KeyRotation({
    keys: ctx.identity.keys,
    identity: ctx.identity,
    config: ctx.config,
    audit: ctx.store.audit,
    rotatedEvent: (purpose, created, retired, at) =>
      ctx.store.webhooks.recordEvent(keyRotatedEvent(purpose, created, retired), at),
    publishAll: async () => (await ctx.status.publishAll()).length,
  });
}

/** The answer of `POST /admin/keys/rotate`. */
function rotationAnswer(r: RotationOutcome) {
  return {
    purpose: r.purpose,
    created: describeKey(r.created),
    retired: r.retired.map((k) => ({ ...describeKey(k), retiredAt: r.at.toISOString(), active: false })),
    statusListsRepublished: r.statusListsRepublished,
  };
}

/**
 * `POST /admin/keys/rotate` (kit extension): retires the active key of a purpose, adds a new one
 * that signs from now on, reloads the ring and re-signs the status lists with the new key.
 */
export function rotateKeys(ctx: Pick<AppContext, 'config' | 'identity' | 'status' | 'store' | 'log'>) {
  const rotation = keyRotation(ctx);
  return async (req: Request, res: Response) => {
    const body = parseInput(RotateKeyBodySchema, req.body ?? {});
    const answer = rotationAnswer(await rotation.inTurn(body.purpose, auditActor(res, body.reason)));
    ctx.log.info(
      { event: 'key_rotation', purpose: answer.purpose, retired: answer.retired, created: answer.created },
      'key rotated',
    );
    res.json(answer);
  };
}

export const CompromisedKeyBodySchema = z.strictObject({
  kid: z.string().min(1).max(255),
  reason: RequiredReasonField,
  dryRun: z.boolean().optional(),
});

/** `POST /admin/keys/compromised`: the key-compromise playbook (docs/operations.md "A signing key is compromised"). */
export const compromisedKeyRoute: RouteFactory = (ctx) => ({
  method: 'post',
  path: '/admin/keys/compromised',
  group: 'admin',
  auth: 'admin-api-key',
  doc: {
    operationId: 'admin-keys-compromised',
    summary:
      'A credential-signing key is compromised: rotate away from it, stop publishing it, revoke what it signed (one bulk job)',
    tags: TAGS.admin,
    body: CompromisedKeyBodySchema,
    responses: json200(
      '`{ kid, active, compromised, credentials, rotatedTo, jobId, statusListsRepublished }` (dryRun: the plan only, with `rotationRefused`: why the rotation away from an active key would be refused in x5c mode, else null)',
      CompromisedAnswerSchema,
    ),
    errors: ['NOT_FOUND', 'CONFLICT'],
  },
  handler: compromisedKey(ctx),
});

export function compromisedKey(ctx: AppContext) {
  const rotation = keyRotation(ctx);
  const run = compromisePlaybook({
    keys: ctx.identity.keys,
    compromisedKeys: ctx.store.compromisedKeys,
    locks: ctx.store.locks,
    rotate: async (actor) => {
      const rotated = await rotation.rotate('credential-signing', actor);
      return { kid: rotated.created.kid, statusListsRepublished: rotated.statusListsRepublished };
    },
    publishAll: async () => (await ctx.status.publishAll()).length,
    compromisedEvent: (kid, actor, at) => ctx.store.webhooks.recordEvent(keyCompromisedEvent(kid, actor), at),
    revokeJob: (kid, actor) => ctx.statusJobs.create('revoke', { kid }, actor),
    jobTotal: async (jobId) => (await ctx.statusJobs.get(jobId))?.total,
  });
  return async (req: Request, res: Response) => {
    const body = parseInput(CompromisedKeyBodySchema, req.body);
    const key = compromisedKeyOf(ctx.identity.keys, body.kid);
    if (body.dryRun) {
      const active = ctx.identity.keys.current().signing.kid === key.kid;
      const alreadyCompromised = (await compromisedKids(ctx.store.compromisedKeys)).has(key.kid);
      const credentials = await ctx.statusJobs.count({ kid: key.kid });
      // In x5c mode the rotation away from an active key may be refused (no certified standby
      // key): the rehearsal says so, read from the keys as they are now (a standby key may have
      // been prepared by another process since this ring was loaded).
      const x5c = active ? x5cRotation(ctx.identity, ctx.config) : undefined;
      const rotationRefused = x5c
        ? ((await x5cRotationRefusal(x5c, await ctx.identity.keys.reload())) ?? null)
        : null;
      res.json({ kid: key.kid, active, alreadyCompromised, credentials, rotationRefused, dryRun: true });
      return;
    }
    // One run per kid, whoever asks and how often: a repeat answers the first run's rotation and job.
    const answer = await run(key.kid, { ...auditActor(res, body.reason), reason: body.reason });
    ctx.log.warn(
      {
        event: 'key_compromised',
        kid: answer.kid,
        rotatedTo: answer.rotatedTo,
        jobId: answer.jobId,
        credentials: answer.credentials,
        repeat: answer.alreadyCompromised,
      },
      `signing key ${answer.kid} declared compromised: unpublished; revoking ${answer.credentials} credential(s) in job ${answer.jobId}`,
    );
    res.json(answer);
  };
}
