import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** W3C VC Data Model 1.1 context (ships with the kit). */
export const VC_2018_CONTEXT_URL = 'https://www.w3.org/2018/credentials/v1';
/** Iden3 proof and status types (`BJJSignature2021`, `SparseMerkleTreeProof`, `JsonSchema2023`). */
export const IDEN3_PROOFS_CONTEXT_URL = 'https://schema.iden3.io/core/jsonld/iden3proofs.jsonld';

/** What a JSON-LD document loader answers (jsonld.js `RemoteDocument`). */
export interface LoadedDocument {
  contextUrl?: string | undefined;
  documentUrl: string;
  document: unknown;
}

export type LocalDocumentLoaderFn = (url: string) => Promise<LoadedDocument>;

const CONTEXTS_DIR = join(dirname(fileURLToPath(import.meta.url)), 'contexts');

// The two shipped contexts are the documents @0xpolygonid/js-sdk 1.45 embeds for the same URLs
// (VerifiableConstants.JSONLD_SCHEMA), pretty-printed; a unit test keeps them equal.
const BUNDLED: ReadonlyArray<readonly [string, string]> = [
  [VC_2018_CONTEXT_URL, 'credentials-v1.json'],
  [IDEN3_PROOFS_CONTEXT_URL, 'iden3proofs.json'],
];

function readJson(file: string, what: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`${file}: cannot read ${what} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`${file}: ${what} is not valid JSON`);
  }
}

/**
 * The JSON-LD document loader of the Iden3 back-end (docs/schemas-and-claims.md): nothing is fetched at run time.
 * It knows the two shipped contexts and, per schema, `contextUrl` → `SCHEMAS_DIR/<contextFile>`;
 * any other URL is an error.
 */
export class LocalDocumentLoader {
  readonly #docs = new Map<string, LoadedDocument>();
  readonly #sources = new Map<string, string>();

  constructor() {
    for (const [url, file] of BUNDLED) {
      this.#add(url, join(CONTEXTS_DIR, file), 'bundled JSON-LD context');
    }
  }

  #add(url: string, file: string, what: string): unknown {
    const document = readJson(file, what);
    this.#docs.set(url, { contextUrl: undefined, documentUrl: url, document });
    this.#sources.set(url, file);
    return document;
  }

  /**
   * Maps a schema's `contextUrl` to its local copy `schemasDir/contextFile` and returns the parsed
   * document. Registering the same URL again with the same file is a no-op; with another file, an error.
   */
  registerContext(contextUrl: string, schemasDir: string, contextFile: string): unknown {
    const root = resolve(schemasDir);
    const file = resolve(root, contextFile);
    const rel = relative(root, file);
    if (rel.startsWith('..') || isAbsolute(rel)) {
      throw new Error(`${contextFile}: iden3.contextFile must be inside SCHEMAS_DIR (${root})`);
    }
    const known = this.#sources.get(contextUrl);
    if (known !== undefined) {
      if (known !== file) {
        throw new Error(`${file}: ${contextUrl} is already served from ${known}; one context URL, one file`);
      }
      return this.#docs.get(contextUrl)?.document;
    }
    return this.#add(contextUrl, file, `the JSON-LD context for ${contextUrl}`);
  }

  /** The document served for `url`, if any (a schema reload compares a context file with it). */
  documentFor(url: string): unknown {
    return this.#docs.get(url)?.document;
  }

  /** The loader to hand to `@iden3/js-jsonld-merklization` / jsonld.js. */
  readonly load: LocalDocumentLoaderFn = async (url: string) => {
    const doc = this.#docs.get(url);
    if (!doc) {
      throw new Error(`JSON-LD document ${url} is not available locally (nothing is fetched at run time)`);
    }
    return doc;
  };
}
