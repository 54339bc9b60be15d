import { z } from 'zod';
import type { ProofType, Telemetry } from '../model.js';
import { HttpFailure, type JsonResponse, type PostJson } from '../outbound/http-json.js';
import { currentRequestId } from '../request-context.js';
import type { UploadBody } from '../store/store.js';
import type { PartnerJwtSigner } from './partner-jwt.js';

export type UpstreamFailure = 'timeout' | 'network' | 'status' | 'malformed';

export class UpstreamError extends Error {
  override name = 'UpstreamError';
  constructor(
    readonly failure: UpstreamFailure,
    readonly route: string,
    message: string,
    /** HTTP status when `failure` is 'status'. */
    readonly status?: number,
    /** The upstream's own message, when it sent one. */
    readonly upstreamMessage?: string,
  ) {
    super(message);
  }

  /** 4xx answers are final for the request that caused them; everything else may be retried. */
  get retryable(): boolean {
    return (
      this.failure !== 'status' ||
      this.status === undefined ||
      this.status >= 500 ||
      this.status === 429 ||
      this.status === 408
    );
  }
}

const InitializeUserSchema = z.object({
  userId: z.string().min(1),
  did: z.string().min(1),
  publicKey: z.string().min(1),
});
export type InitializedUser = z.infer<typeof InitializeUserSchema>;

const StoreResponseSchema = z.object({
  // docs/interface.md says a store answer carries storagePath; the status already says it is stored, so an
  // answer without one is still a success (the path is recorded as null).
  storagePath: z.string().min(1).optional(),
  state: z.string().optional(),
  envelopeVersion: z.string().optional(),
  createdAt: z.string().optional(),
});
export type StoreResponse = z.infer<typeof StoreResponseSchema>;

/**
 * Client of the hosting service's direct-issuance API (docs/interface.md "Direct issuance"): timeout through AbortSignal,
 * explicit status checks, typed errors. Only `dstorage/vcs` is retried (by the outbox), because
 * `externalId` makes it idempotent.
 */
export class ServiceClient {
  constructor(
    private readonly baseUrl: () => string,
    private readonly jwt: PartnerJwtSigner,
    /** The outbound pools it calls through: the context's (`HttpPools.post`). */
    private readonly http: PostJson,
    private readonly timeoutMs = 10_000,
    /** Reports every call's outcome (logs and metrics). */
    private readonly telemetry?: Telemetry,
  ) {}

  // initialize-user: the email goes in the body, never in the JWT.
  /** `timeoutMs`: a shorter bound than the client's own (what is left of a request's deadline). */
  async initializeUser(
    email: string,
    options: { timeoutMs?: number; attempt?: number } = {},
  ): Promise<InitializedUser> {
    const body = await this.post('/auth/initialize-user', { email }, {}, [200, 201], options);
    return parse(InitializeUserSchema, body, 'auth/initialize-user');
  }

  // dstorage/vcs: the same externalId on every retry; also sent as idempotency-key.
  // `proofType` beside the envelope fields, as the reference issuer sends it.
  async storeEnvelope(envelope: UploadBody, proofType: ProofType, attempt?: number): Promise<StoreResponse> {
    const body = await this.post(
      '/dstorage/vcs',
      { ...envelope, proofType },
      { 'idempotency-key': envelope.externalId },
      [200, 201],
      { attempt },
    );
    return parse(StoreResponseSchema, body, 'dstorage/vcs');
  }

  private async post(
    path: string,
    payload: unknown,
    headers: Record<string, string>,
    ok: number[],
    options: { attempt?: number; timeoutMs?: number },
  ): Promise<unknown> {
    const route = path.slice(1);
    const { attempt } = options;
    try {
      const body = await this.send(path, payload, headers, ok, options.timeoutMs);
      this.telemetry?.emit('upstreamCall', { call: route, outcome: 'ok', attempt });
      return body;
    } catch (err) {
      const e = err as UpstreamError;
      this.telemetry?.emit('upstreamCall', {
        call: route,
        outcome: 'failed',
        failure: e.failure,
        status: e.status,
        attempt,
      });
      throw err;
    }
  }

  private async send(
    path: string,
    payload: unknown,
    headers: Record<string, string>,
    ok: number[],
    timeoutMs = this.timeoutMs,
  ): Promise<unknown> {
    const route = path.slice(1);
    let res: JsonResponse;
    // The request we are serving, if any, is named to the hosting service too (docs/operations.md).
    const requestId = currentRequestId();
    try {
      res = await this.http(`${this.baseUrl()}${path}`, payload, {
        headers: {
          'x-partner-auth': await this.jwt.token(),
          ...(requestId === undefined ? {} : { 'x-request-id': requestId }),
          ...headers,
        },
        timeoutMs,
      });
    } catch (err) {
      const kind = err instanceof HttpFailure ? err.kind : 'network';
      throw new UpstreamError(
        kind,
        route,
        `${route} ${kind === 'timeout' ? `timed out after ${timeoutMs} ms` : 'unreachable'}`,
      );
    }
    if (!ok.includes(res.status)) {
      const message = (res.body as { message?: unknown } | undefined)?.message;
      const upstreamMessage = typeof message === 'string' ? message.slice(0, 500) : undefined;
      throw new UpstreamError(
        'status',
        route,
        `${route} answered ${res.status}`,
        res.status,
        upstreamMessage,
      );
    }
    if (res.body === undefined)
      throw new UpstreamError('malformed', route, `${route} answered without a JSON body`);
    return res.body;
  }
}

function parse<T>(schema: z.ZodType<T>, body: unknown, route: string): T {
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw new UpstreamError('malformed', route, `${route} answered an unexpected body`);
  return parsed.data;
}
