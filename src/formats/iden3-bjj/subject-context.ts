import type { CredentialSchema } from '../../schemas/schema-file.js';
import { LocalDocumentLoader } from './document-loader.js';

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * The subject terms a context gives `type`: its type-scoped context plus the top-level terms.
 * JSON-LD silently drops keys a context does not define, and a dropped key would sit in the
 * credential unsigned, so `issue` refuses claims outside this set.
 */
export function subjectTerms(
  contextDoc: unknown,
  type: string,
  file: string,
): ReadonlySet<string> | undefined {
  const raw = isRecord(contextDoc) ? contextDoc['@context'] : undefined;
  const contexts = (Array.isArray(raw) ? raw : [raw]).filter(isRecord);
  const terms = new Set<string>();
  let typeDefined = false;
  let vocab = false;
  for (const ctx of contexts) {
    for (const [key, def] of Object.entries(ctx)) {
      if (key === '@vocab') vocab = true;
      if (key.startsWith('@')) continue;
      if (key !== type) {
        terms.add(key);
        continue;
      }
      typeDefined = true;
      const scoped = isRecord(def) ? def['@context'] : undefined;
      if (!isRecord(scoped)) continue;
      for (const k of Object.keys(scoped)) {
        if (k === '@vocab') vocab = true;
        if (!k.startsWith('@')) terms.add(k);
      }
    }
  }
  if (!typeDefined) throw new Error(`${file}: the JSON-LD context does not define the type "${type}"`);
  return vocab ? undefined : terms;
}

/**
 * The problems `prepareSchema` would meet with these schemas' `iden3` blocks, found offline (a
 * fresh loader: `admin schemas validate`, a schema reload): each context file loads from inside
 * SCHEMAS_DIR, defines the type, and one context URL is served from one file.
 */
export function iden3ContextProblems(
  schemas: ReadonlyArray<Pick<CredentialSchema, 'file' | 'iden3'>>,
  schemasDir: string,
  running?: { servedContext(url: string): unknown },
): Array<{ file: string; message: string }> {
  const loader = new LocalDocumentLoader();
  const problems: Array<{ file: string; message: string }> = [];
  for (const schema of schemas) {
    const block = schema.iden3;
    if (!block) continue;
    try {
      const doc = loader.registerContext(block.contextUrl, schemasDir, block.contextFile);
      subjectTerms(doc, block.type, block.contextFile);
      // The running loader keeps a URL's document: a changed file under the same URL would be ignored.
      const served = running?.servedContext(block.contextUrl);
      if (served !== undefined && JSON.stringify(served) !== JSON.stringify(doc))
        throw new Error(
          `${block.contextFile} changed since the server loaded ${block.contextUrl}; a changed context needs a restart or a new contextUrl`,
        );
    } catch (err) {
      problems.push({ file: schema.file, message: `iden3.contextFile: ${(err as Error).message}` });
    }
  }
  return problems;
}
