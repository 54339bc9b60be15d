import type { CredentialSchema } from '../../schemas/schema-file.js';
import { elementNames } from './elements.js';

/** COSE algorithm ES256 (RFC 9053 §2.1), the MSO signature's. */
export const COSE_ES256 = -7;

/**
 * One credential configuration (OpenID4VCI 1.0 Appendix A.2.2, ISO mdoc) from a schema: its
 * docType, the COSE algorithm of the issuer signature, the holder key as a COSE_Key, and each
 * claim as `[namespace, element]` with its display name.
 */
export function mdocConfiguration(
  schema: CredentialSchema,
  signingAlgs: readonly string[],
): Record<string, unknown> {
  const block = schema.mdoc!;
  const namespace = block.namespace ?? block.docType;
  const title = schema.title ?? schema.schemaId;
  const locale = schema.sdJwt.display?.[0]?.locale ?? 'en';
  const properties = (schema.credentialSubject.properties ?? {}) as Record<string, { title?: unknown }>;
  const required = new Set(
    Array.isArray(schema.credentialSubject.required) ? (schema.credentialSubject.required as string[]) : [],
  );
  return {
    format: 'mso_mdoc',
    doctype: block.docType,
    scope: `${schema.schemaId}.mdoc`,
    cryptographic_binding_methods_supported: ['cose_key'],
    credential_signing_alg_values_supported: [COSE_ES256],
    proof_types_supported: { jwt: { proof_signing_alg_values_supported: signingAlgs } },
    credential_metadata: {
      display: [{ name: title, locale, ...(schema.description ? { description: schema.description } : {}) }],
      claims: elementNames(schema).map(({ claim, element }) => ({
        path: [namespace, element],
        mandatory: required.has(claim),
        display: [
          { name: typeof properties[claim]?.title === 'string' ? properties[claim].title : claim, locale },
        ],
      })),
    },
  };
}
