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
