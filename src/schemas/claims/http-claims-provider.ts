import { z } from 'zod';
import { HttpFailure, type JsonResponse, postJson } from '../../service-client/http-json.js';
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
    let res: JsonResponse;
    try {
      res = await postJson(
        this.url,
        { userId: query.userId, schemaId: query.schemaId, proofType: query.proofType },
        { headers: this.headers, timeoutMs: this.timeoutMs },
      );
    } catch (err) {
      const timedOut = err instanceof HttpFailure && err.kind === 'timeout';
      throw new ClaimsSourceError(
        timedOut ? `claims source timed out after ${this.timeoutMs} ms` : 'claims source unreachable',
      );
    }
    // Anything but 200 (redirects included: they are not followed) is an outage, never "not eligible".
    if (res.status !== 200) throw new ClaimsSourceError(`claims source answered ${res.status}`);
    const body = res.body;
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
