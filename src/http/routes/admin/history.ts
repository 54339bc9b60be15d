import type { Request, Response } from 'express';
import { z } from 'zod';
import { invalidParameter } from '../../../errors.js';
import { ProofTypeSchema } from '../../../formats/schema-file.js';
import type { EmailHasher } from '../../../issuance/email-hash.js';
import { CHANNELS } from '../../../model.js';
import { derivedStatus } from '../../../status/derived-status.js';
import type { StatusService } from '../../../status/status-service.js';
import type { IssuanceHistoryStore } from '../../../store/store.js';
import { NonceSchema } from '../nonce.js';
import { DerivedStatusSchema, NonceString, Timestamp, UploadStateSchema } from '../responses.js';
import { json200, type RouteFactory, TAGS } from '../route.js';
import { DateBoundField, EmailFilterField, SchemaIdField } from './fields.js';
import {
  historyCursor,
  PaginationSchema,
  PagingShape,
  pagination,
  parsePagedQuery,
  readHistoryCursor,
  requestedPage,
} from './paging.js';

const HistoryQueryShape = {
  ...PagingShape,
  order: z
    .enum(['createdAt_desc', 'createdAt_asc'], { error: 'must be createdAt_desc or createdAt_asc' })
    .default('createdAt_desc'),
  holderDid: z.string().min(1).max(2048).optional(),
  schemaId: SchemaIdField.optional(),
  revocationNonce: NonceSchema.optional(),
  proofType: ProofTypeSchema.optional(),
  channel: z.enum(CHANNELS, { error: `must be one of ${CHANNELS.join(', ')}` }).optional(),
  /** The batch it was issued in: a CSV run's or an OpenID4VCI batch's. */
  batchId: z.string().min(1).max(255).optional(),
  /** Created at or after (a date is midnight UTC). */
  createdFrom: DateBoundField.optional(),
  /** Created before. */
  createdTo: DateBoundField.optional(),
  status: z
    .enum(['valid', 'revoked', 'suspended', 'expired', 'upload_pending', 'upload_failed'], {
      error: 'must be one of valid, revoked, suspended, expired, upload_pending, upload_failed',
    })
    .optional(),
  email: EmailFilterField.optional(),
};
export const HistoryQuerySchema = z.object(HistoryQueryShape);

/** Where a credential's status is published: its token status list entry (SD-JWT VC only). */
export const StatusListEntrySchema = z.object({ idx: z.number().int(), uri: z.string() });

export const HistoryPageSchema = z.object({
  data: z.array(
    z.object({
      credentialId: z.string(),
      channel: z.enum(CHANNELS),
      holderDid: z.string(),
      schemaId: z.string(),
      proofType: ProofTypeSchema,
      revocationNonce: NonceString,
      status: DerivedStatusSchema,
      statusList: StatusListEntrySchema.nullable(),
      kid: z.string(),
      createdAt: Timestamp,
      expiresAt: Timestamp,
      revokedAt: Timestamp.nullable(),
      uploadState: UploadStateSchema,
      storagePath: z.string().nullable(),
      renewedFrom: z.string().nullable(),
      renewedBy: z.string().nullable(),
    }),
  ),
  pagination: PaginationSchema,
});
export type HistoryPage = z.infer<typeof HistoryPageSchema>;

/** `GET /admin/issuance-history`. */
export const historyRoute: RouteFactory = (ctx) => ({
  method: 'get',
  path: '/admin/issuance-history',
  group: 'admin',
  auth: 'admin-api-key',
  doc: {
    operationId: 'admin-issuance-history',
    summary: 'Issued credentials, newest first, with their status',
    tags: TAGS.admin,
    query: HistoryQuerySchema,
    responses: json200('A page of issuance records', HistoryPageSchema),
  },
  handler: issuanceHistory(ctx.store.history, ctx.status, ctx.hashEmail),
});

/**
 * `GET /admin/issuance-history`: `{ data, pagination: { page, limit, total, nextCursor } }` (after a
 * `cursor`: `{ limit, nextCursor, total? }`), never claims. Paging as docs/interface.md "Paging".
 */
export function issuanceHistory(
  history: IssuanceHistoryStore,
  status: StatusService,
  hashEmail: EmailHasher,
) {
  return async (req: Request, res: Response) => {
    const { email, cursor, ...q } = parsePagedQuery(HistoryQuerySchema, req.query as Record<string, unknown>);
    const after = cursor === undefined ? undefined : readHistoryCursor(cursor, q.order);
    if (cursor !== undefined && !after) {
      throw invalidParameter('cursor', 'not a cursor of this route and order');
    }
    const now = new Date();
    const emailHash = email === undefined ? undefined : await hashEmail(email);
    const { page, total } = requestedPage({ ...q, cursor });
    const result = await history.list({ ...q, page, after, total, emailHash, now });
    const { records, next } = result;
    // docs/operations.md "Renewal": the link both ways, one indexed read for the page.
    const links = await history.renewalLinks(records.map((r) => r.credentialId));
    res.json({
      data: records.map((r) => ({
        credentialId: r.credentialId,
        channel: r.channel,
        holderDid: r.holderDid,
        schemaId: r.schemaId,
        proofType: r.proofType,
        revocationNonce: String(r.revocationNonce),
        status: derivedStatus(r, now),
        statusList: r.statusSlot
          ? { idx: r.statusSlot.index, uri: status.uri(r.statusSlot.partition) }
          : null,
        kid: r.kid,
        createdAt: r.createdAt.toISOString(),
        expiresAt: r.expiresAt.toISOString(),
        revokedAt: r.revokedAt?.toISOString() ?? null,
        uploadState: r.uploadState,
        storagePath: r.storagePath,
        renewedFrom: links.get(r.credentialId)?.renewedFrom ?? null,
        renewedBy: links.get(r.credentialId)?.renewedBy ?? null,
      })),
      pagination: pagination(page, q.limit, next ? historyCursor(next, q.order) : null, result.total),
    } satisfies HistoryPage);
  };
}
