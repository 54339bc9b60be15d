import { CheckFailure } from './check.js';

/** A fetched public document: the URL it came from and its exact bytes. */
export interface FetchedDocument {
  url: string;
  bytes: Buffer;
  text: string;
  contentType: string;
}

export interface DocumentFetcherOptions {
  /** Fetch the issuer's documents from this origin instead (staging, tests): `--origin`. */
  origin?: string | undefined;
  timeoutMs?: number | undefined;
}

// A status list of a million 8-bit entries compresses far below this; a larger answer is not ours.
const MAX_DOCUMENT_BYTES = 16 * 1024 * 1024;
const DEFAULT_TIMEOUT_MS = 10_000;

/**
 * GETs the issuer's public documents (metadata, did.json, type metadata, status lists) with a
 * deadline, an explicit 200 check, no redirects and a size limit. With an override origin, every
 * URL on one of the issuer's hosts is fetched from that origin instead, path and query kept, as
 * `doctor --origin` does: the credential names its production URLs, the documents come from where
 * the issuer really runs.
 */
export class DocumentFetcher {
  readonly #origin: string | undefined;
  readonly #timeoutMs: number;
  readonly #issuerHosts = new Set<string>();

  constructor(options: DocumentFetcherOptions = {}) {
    this.#origin = options.origin ? options.origin.replace(/\/+$/, '') : undefined;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /** Declares a host (`name[:port]`) as the issuer's: its documents follow the override origin. */
  addIssuerHost(host: string): void {
    this.#issuerHosts.add(host.toLowerCase());
  }

  /** Where `url` is fetched from. */
  target(url: string): string {
    const parsed = new URL(url);
    if (!this.#origin || !this.#issuerHosts.has(parsed.host.toLowerCase())) return parsed.toString();
    // As doctor --origin: the origin (and any path prefix it has) takes the place of the issuer's.
    return `${this.#origin}${parsed.pathname}${parsed.search}`;
  }

  /** `accept`: the media type asked for, where the document has several forms (a status list's CWT). */
  async get(url: string, code = 'FETCH_FAILED', accept?: string): Promise<FetchedDocument> {
    const target = this.target(url);
    let res: Response;
    try {
      res = await fetch(target, {
        signal: AbortSignal.timeout(this.#timeoutMs),
        redirect: 'manual',
        ...(accept ? { headers: { accept } } : {}),
      });
    } catch (err) {
      const e = err as Error & { cause?: { code?: string; message?: string } };
      const why =
        e.name === 'TimeoutError'
          ? `no answer within ${this.#timeoutMs} ms`
          : (e.cause?.code ?? e.cause?.message ?? e.message);
      throw new CheckFailure(code, `${target}: ${why}`);
    }
    if (res.status !== 200) {
      await res.body?.cancel();
      throw new CheckFailure(code, `${target} answered ${res.status}`);
    }
    if (Number(res.headers.get('content-length')) > MAX_DOCUMENT_BYTES) {
      await res.body?.cancel();
      throw new CheckFailure(code, `${target}: larger than ${MAX_DOCUMENT_BYTES} bytes`);
    }
    const bytes = Buffer.from(await res.arrayBuffer());
    if (bytes.length > MAX_DOCUMENT_BYTES)
      throw new CheckFailure(code, `${target}: larger than ${MAX_DOCUMENT_BYTES} bytes`);
    return {
      url: target,
      bytes,
      text: bytes.toString('utf8'),
      contentType: res.headers.get('content-type') ?? '',
    };
  }

  async json(url: string, code = 'FETCH_FAILED'): Promise<unknown> {
    const doc = await this.get(url, code);
    try {
      return JSON.parse(doc.text);
    } catch {
      throw new CheckFailure(code, `${doc.url} answered 200 without JSON`);
    }
  }
}
