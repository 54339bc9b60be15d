import { createHash } from 'node:crypto';
import type { CredentialSchema } from '../../schemas/schema-file.js';
import type { ServedTypeMetadata, TypeMetadataRegistry } from '../../schemas/type-metadata.js';
import { SD_JWT_VC } from './names.js';
import type { TypeDisplay } from './schema-block.js';

interface ClaimMetadata {
  path: string[];
  display: Array<{ locale: string; label: string; description?: string }>;
  sd: 'always' | 'never';
}

const SERVABLE_PATH = /^(\/[A-Za-z0-9._~-]+)+$/;

/** The served type metadata of a schema set (src/schemas/type-metadata.ts says which schemas get one). */
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
