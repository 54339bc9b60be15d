import { HttpFailure, type JsonResponse, type PostJson } from '../outbound/http-json.js';
import {
  type ClaimsProvider,
  type ClaimsQuery,
  ClaimsSourceError,
  type ProviderAnswer,
  parseClaimsAnswer,
} from './claims-provider.js';

export class HttpClaimsProvider implements ClaimsProvider {
  constructor(
    private readonly url: string,
    private readonly timeoutMs: number,
    private readonly headers: Record<string, string> | undefined,
    /** The outbound pools it calls through: the context's, or the admin CLI's own (`postJson`). */
    private readonly post: PostJson,
  ) {}

  async lookup(query: ClaimsQuery): Promise<ProviderAnswer> {
    let res: JsonResponse;
    try {
      res = await this.post(
        this.url,
        { userId: query.userId, schemaId: query.schemaId, proofType: query.proofType },
        { headers: this.headers ?? {}, timeoutMs: this.timeoutMs },
      );
    } catch (err) {
      const timedOut = err instanceof HttpFailure && err.kind === 'timeout';
      throw new ClaimsSourceError(
        timedOut ? `claims source timed out after ${this.timeoutMs} ms` : 'claims source unreachable',
      );
    }
    // Anything but 200 (redirects included: they are not followed) is an outage, never "not eligible".
    if (res.status !== 200) throw new ClaimsSourceError(`claims source answered ${res.status}`);
    return parseClaimsAnswer(res.body);
  }
}
