import { DateOnly } from '@animo-id/mdoc';
import type { CredentialSchema } from '../../schemas/schema-file.js';

/**
 * The data elements of one credential (ISO/IEC 18013-5 §7.2.1): each top-level claim is one
 * element of the schema's namespace, named by the `mdoc.elements` map or as the claim. Values keep
 * their JSON type, except those the claim's JSON Schema marks as ISO 18013-5 types:
 * `format: "date"` is a `full-date` (CBOR tag 1004), `format: "date-time"` a `tdate` (tag 0) and
 * `contentEncoding: "base64"` (or `base64url`) a byte string.
 */
export interface MdocElements {
  docType: string;
  namespace: string;
  values: Record<string, unknown>;
}

interface PropertySchema {
  format?: unknown;
  contentEncoding?: unknown;
}

function encodeValue(value: unknown, property: PropertySchema | undefined): unknown {
  if (typeof value !== 'string' || !property) return value;
  if (property.format === 'date') return new DateOnly(value);
  if (property.format === 'date-time') return new Date(value);
  if (property.contentEncoding === 'base64' || property.contentEncoding === 'base64url')
    return new Uint8Array(Buffer.from(value, property.contentEncoding));
  return value;
}

/** The schema's docType, namespace and element names applied to validated claims. */
export function mdocElements(schema: CredentialSchema, claims: Record<string, unknown>): MdocElements {
  const block = schema.mdoc;
  if (!block) throw new Error(`schema ${schema.schemaId} has no mdoc block`);
  const properties = ((schema.credentialSubject as { properties?: Record<string, PropertySchema> })
    .properties ?? {}) as Record<string, PropertySchema>;
  const values: Record<string, unknown> = {};
  for (const [claim, value] of Object.entries(claims)) {
    values[block.elements?.[claim] ?? claim] = encodeValue(value, properties[claim]);
  }
  return { docType: block.docType, namespace: block.namespace ?? block.docType, values };
}

/** The element identifiers a schema's claims become, in claim order (the OpenID4VCI claims display). */
export function elementNames(schema: CredentialSchema): Array<{ claim: string; element: string }> {
  const properties = (schema.credentialSubject as { properties?: Record<string, unknown> }).properties ?? {};
  return Object.keys(properties)
    .filter((claim) => claim !== 'id')
    .map((claim) => ({ claim, element: schema.mdoc?.elements?.[claim] ?? claim }));
}
