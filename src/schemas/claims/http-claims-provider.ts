import { z } from 'zod';
import {
  type ClaimsAnswer,
  type ClaimsProvider,
  type ClaimsQuery,
  ClaimsSourceError,
} from './claims-provider.js';

// DESIGN §8 http provider: the exact answer shape; anything else is an upstream error.
const AnswerSchema = z.union([
  z.object({ eligible: z.literal(false) }),
  z.object({
    eligible: z.literal(true),
    credentialSubject: z.record(z.string(), z.unknown()),
    expiresAt: z.iso.datetime({ offset: true }).optional(),
  }),
]);

export class HttpClaimsProvider implements ClaimsProvider {
  constructor(
    private readonly url: string,
    private readonly timeoutMs: number,
    private readonly headers: Record<string, string> = {},
  ) {}

  async lookup(query: ClaimsQuery): Promise<ClaimsAnswer> {
    let res: Response;
    try {
      res = await fetch(this.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', ...this.headers },
        body: JSON.stringify({ userId: query.userId, schemaId: query.schemaId, proofType: query.proofType }),
        signal: AbortSignal.timeout(this.timeoutMs),
        redirect: 'error',
      });
    } catch (err) {
      const timedOut = (err as Error).name === 'TimeoutError';
      throw new ClaimsSourceError(
        timedOut ? `claims source timed out after ${this.timeoutMs} ms` : 'claims source unreachable',
      );
    }
    if (res.status !== 200) {
      await res.body?.cancel();
      throw new ClaimsSourceError(`claims source answered ${res.status}`);
    }
    let body: unknown;
    try {
      body = await res.json();
    } catch {
      throw new ClaimsSourceError('claims source answered with malformed JSON');
    }
    const parsed = AnswerSchema.safeParse(body);
    if (!parsed.success)
      throw new ClaimsSourceError(
        'claims source answer does not match { eligible, credentialSubject?, expiresAt? }',
      );
    const answer = parsed.data;
    if (!answer.eligible) return { eligible: false };
    return {
      eligible: true,
      credentialSubject: answer.credentialSubject,
      expiresAt: answer.expiresAt ? new Date(answer.expiresAt) : undefined,
    };
  }
}
