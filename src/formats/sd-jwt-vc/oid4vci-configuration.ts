import type { CredentialSchema } from '../../schemas/schema-file.js';

/**
 * One credential configuration (OpenID4VCI 1.0 Appendix A.3.2, SD-JWT VC) from a schema, `display`
 * and `claims` from its type metadata.
 */
export function oid4vciConfiguration(
  schema: CredentialSchema,
  signingAlgs: readonly string[],
): Record<string, unknown> {
  const title = schema.title ?? schema.schemaId;
  const display = (
    schema.sdJwt.display ?? [
      { locale: 'en', name: title, ...(schema.description ? { description: schema.description } : {}) },
    ]
  ).map((d) => ({
    name: d.name,
    locale: d.locale,
    ...(d.description ? { description: d.description } : {}),
    ...(d.rendering?.simple?.logo ? { logo: d.rendering.simple.logo } : {}),
    ...(d.rendering?.simple?.background_color
      ? { background_color: d.rendering.simple.background_color }
      : {}),
    ...(d.rendering?.simple?.text_color ? { text_color: d.rendering.simple.text_color } : {}),
  }));
  const locale = display[0]!.locale;
  const properties = (schema.credentialSubject.properties ?? {}) as Record<string, { title?: unknown }>;
  const required = new Set(
    Array.isArray(schema.credentialSubject.required) ? (schema.credentialSubject.required as string[]) : [],
  );
  return {
    format: 'dc+sd-jwt',
    vct: schema.sdJwt.vct,
    scope: schema.schemaId,
    cryptographic_binding_methods_supported: ['jwk'],
    credential_signing_alg_values_supported: signingAlgs,
    proof_types_supported: { jwt: { proof_signing_alg_values_supported: signingAlgs } },
    credential_metadata: {
      display,
      claims: Object.entries(properties).map(([name, p]) => ({
        path: [name],
        mandatory: required.has(name),
        display: [{ name: typeof p.title === 'string' ? p.title : name, locale }],
      })),
    },
  };
}
