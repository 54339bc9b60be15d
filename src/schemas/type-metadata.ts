import { createHash } from 'node:crypto';
import { SD_JWT_VC } from '../formats/sd-jwt-vc/names.js';
import type { CredentialSchema, TypeDisplay } from './schema-file.js';

/**
 * draft-ietf-oauth-sd-jwt-vc "Type Metadata" for each schema whose `sdJwt.vct` is a URL under
 * ISSUER_ORIGIN (docs/schemas-and-claims.md). "Under" means the vct starts with `ISSUER_ORIGIN/`: production
 * already requires an https origin, so there the vct is https as the draft wants; development
 * serves it under its http loopback origin the same way (verifiers that fetch only https, like
 * Credo, then skip it). The document is serialized once; the served bytes are those bytes and
 * `vct#integrity` is their SRI digest ("Document Integrity": W3C SRI, `sha256-<base64>`).
 */
export interface ServedTypeMetadata {
  vct: string;
  /** The request path the document is served at (the vct URL's path). */
  path: string;
  body: Buffer;
  integrity: string;
}

export type TypeMetadataRegistry = ReadonlyMap<string, ServedTypeMetadata>;

interface ClaimMetadata {
  path: string[];
  display: Array<{ locale: string; label: string; description?: string }>;
  sd: 'always' | 'never';
}

const SERVABLE_PATH = /^(\/[A-Za-z0-9._~-]+)+$/;

export function buildTypeMetadata(
  schemas: readonly CredentialSchema[],
  origin: string,
): TypeMetadataRegistry {
  const served = new Map<string, ServedTypeMetadata>();
  for (const schema of schemas) {
    const vct = schema.sdJwt?.vct;
    if (!vct || !schema.proofTypes.includes(SD_JWT_VC) || !vct.startsWith(`${origin}/`)) continue;
    const url = new URL(vct);
    // A plain path only: a query, a fragment or route syntax (`:`, `*`) cannot be a route here.
    if (url.search || url.hash || !SERVABLE_PATH.test(url.pathname)) continue;
    const body = Buffer.from(JSON.stringify(typeMetadataDocument(schema, vct)));
    served.set(vct, {
      vct,
      path: url.pathname,
      body,
      integrity: `sha256-${createHash('sha256').update(body).digest('base64')}`,
    });
  }
  return served;
}

export function typeMetadataDocument(schema: CredentialSchema, vct: string): Record<string, unknown> {
  const title = schema.title ?? schema.schemaId;
  const display: TypeDisplay[] = schema.sdJwt?.display ?? [
    { locale: 'en', name: title, ...(schema.description ? { description: schema.description } : {}) },
  ];
  const locale = display[0]!.locale;
  const properties = (schema.credentialSubject.properties ?? {}) as Record<
    string,
    { title?: unknown; description?: unknown }
  >;
  // The frame decides disclosability: without one every top-level claim is disclosable (docs/schemas-and-claims.md).
  const frame = schema.sdJwt?.disclosureFrame as { _sd?: unknown } | undefined;
  const disclosable = new Set(
    frame === undefined ? Object.keys(properties) : Array.isArray(frame._sd) ? frame._sd.map(String) : [],
  );
  const claims: ClaimMetadata[] = Object.entries(properties).map(([name, property]) => ({
    path: [name],
    display: [
      {
        locale,
        label: typeof property.title === 'string' ? property.title : name,
        ...(typeof property.description === 'string' ? { description: property.description } : {}),
      },
    ],
    sd: disclosable.has(name) ? 'always' : 'never',
  }));
  return {
    vct,
    name: title,
    ...(schema.description ? { description: schema.description } : {}),
    display,
    claims,
    // The payload also carries iss, vct, status… at the top level, so a subject schema that
    // forbids other properties would reject every credential: the served schema allows them.
    schema: {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      ...schema.credentialSubject,
      additionalProperties: true,
    },
  };
}
