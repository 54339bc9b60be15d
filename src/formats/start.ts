import type { ProofType } from '../model.js';
import type { CredentialSchema } from '../schemas/schema-file.js';
import type { CredentialFormat, FormatRevoker, FormatStartDeps, StartedFormat } from './format.js';
import type { Issuer } from './issuer.js';

/** The formats as started for one schema set: what the context wires into the other parts. */
export interface StartedFormats {
  /** Every format, with its started parts when on. */
  readonly all: ReadonlyArray<{ format: CredentialFormat; started: StartedFormat | undefined }>;
  readonly started: ReadonlyMap<ProofType, StartedFormat>;
  /** The issuer of each started format (the issuance core picks one by proof type). */
  readonly issuers: Map<ProofType, Issuer>;
  /** One of each started revoker's functions by proof type; `undefined` when no format has one. */
  revokers<T>(pick: (revoker: FormatRevoker) => T): Map<string, T> | undefined;
  /** The identifiers the started formats give this issuer (the did:web document's `alsoKnownAs`). */
  alsoKnownAs(): string[];
  close(): Promise<void>;
}

/**
 * Starts each format in list order; a start that fails closes those already started. A format
 * that stays off for these schemas is listed without parts.
 */
export async function startFormats(
  formats: readonly CredentialFormat[],
  deps: FormatStartDeps,
  schemas: readonly CredentialSchema[],
): Promise<StartedFormats> {
  const all: Array<{ format: CredentialFormat; started: StartedFormat | undefined }> = [];
  const close = async () => {
    for (const { started } of all.reverse()) await started?.close();
  };
  try {
    for (const format of formats) all.push({ format, started: await format.start(deps, schemas) });
  } catch (err) {
    await close().catch(() => undefined);
    throw err;
  }
  const started = new Map<ProofType, StartedFormat>();
  for (const entry of all) if (entry.started) started.set(entry.format.proofType, entry.started);
  const issuers = new Map([...started].map(([proofType, s]) => [proofType, s.issuer] as const));
  return {
    all: [...all],
    started,
    issuers,
    revokers(pick) {
      const map = new Map<string, ReturnType<typeof pick>>();
      for (const [proofType, s] of started) if (s.revoker) map.set(proofType, pick(s.revoker));
      return map.size > 0 ? map : undefined;
    },
    alsoKnownAs: () => [...started.values()].flatMap((s) => (s.alsoKnownAs ? [s.alsoKnownAs] : [])),
    close,
  };
}
