import type { ClaimsProvider } from '../claims/claims-provider.js';
import { IssuerUrls, type SdJwtIssuerMode } from '../issuer-urls.js';
import type { KeyHolder } from '../keys/key-holder.js';
import type { SchemaRegistry } from '../schemas/schema-registry.js';
import type { TypeMetadataRegistry } from '../schemas/type-metadata.js';
import { IssuerIdentification } from './issuer-identification.js';

export { didWebFromOrigin, IssuerUrls, type SdJwtIssuerMode } from '../issuer-urls.js';

/**
 * One issuer as the world sees it (docs/architecture.md "Issuer identity"): its public origin,
 * how verifiers find its signing key, the keys it signs with, its status-list space, its partner
 * registration with the hosting service, and every public URL under that origin. Whatever is per
 * issuer hangs off this object; today a deployment has one, built by the context, and the services
 * take it instead of origin strings, key getters or settings of their own.
 */
export interface IssuerIdentity extends IssuerFace {
  /** The key ring this issuer signs with (credentials, status list tokens, partner JWTs) and its backend. */
  readonly keys: KeyHolder;
  /** The schemas it issues, with their claims sources and served type metadata (reloadable). */
  readonly catalog: IssuerCatalog;
}

/**
 * An issuer's schema set as the services read it: views of the current set, which a reload swaps
 * whole (src/catalog/schema-catalog.ts builds and reloads it).
 */
export interface IssuerCatalog {
  readonly schemas: SchemaRegistry;
  /** SD-JWT VC type metadata served at `vct` URLs under the origin, by vct. */
  readonly typeMetadata: TypeMetadataRegistry;
  /** One claims source per schema, by schemaId. */
  readonly claimsProviders: ReadonlyMap<string, ClaimsProvider>;
}

/**
 * An identity while its schema set is being built: the formats start with it, and the set is
 * prepared by the started formats (Iden3's contexts), so the catalogue comes after them.
 */
export type IssuerIdentityBeforeCatalog = Omit<IssuerIdentity, 'catalog'>;

/** What a signer reads of an identity: how verifiers find the key, and the current key ring. */
export type SigningIdentity = Pick<IssuerIdentity, 'identification'> & {
  readonly keys: Pick<KeyHolder, 'current'>;
};

/** An identity before its keys are opened: who it is, not yet what it signs with (the doctor reads this). */
export interface IssuerFace {
  /** ISSUER_ORIGIN: scheme://host[:port], no trailing slash. */
  readonly origin: string;
  /** SD_JWT_ISSUER (docs/security.md "Issuer identification (SD_JWT_ISSUER)"). */
  readonly mode: SdJwtIssuerMode;
  /** What `mode` means for a signed token: its `iss`, its JOSE header, the key check. */
  readonly identification: IssuerIdentification;
  /** PARTNER_ID and PARTNER_INFO_SERVICE: who this issuer is to the hosting service. */
  readonly partner: { readonly id: string | undefined; readonly infoService: string };
  /** The token status lists this issuer publishes (`/statuslist/:partition` under its origin). */
  readonly statusLists: StatusListSpace;
  /** Every public URL of this issuer. */
  readonly urls: IssuerUrls;
}

/** STATUS_LIST_*: the shape of an issuer's token status lists. */
export interface StatusListSpace {
  /** Slots in one partition (one published list). */
  readonly partitionSize: number;
  /** Bits per status (1: valid/revoked; 2: also suspended). */
  readonly bits: 1 | 2;
  /** How long a published list token is fresh (its `ttl`). */
  readonly ttlSeconds: number;
}

/** The settings an identity is made of (the config's, for the one identity of today). */
export interface IssuerIdentitySettings {
  /** ISSUER_ORIGIN. */
  publicOrigin: string;
  sdJwtIssuer: SdJwtIssuerMode;
  partnerId: string | undefined;
  partnerInfoService: string;
  statusList: StatusListSpace;
}

/** The face of ISSUER_ORIGIN, SD_JWT_ISSUER, STATUS_LIST_*, PARTNER_ID and PARTNER_INFO_SERVICE. */
export function issuerFace(config: IssuerIdentitySettings): IssuerFace {
  const urls = new IssuerUrls(config.publicOrigin);
  return {
    origin: urls.origin,
    mode: config.sdJwtIssuer,
    identification: new IssuerIdentification(config.sdJwtIssuer, urls.origin),
    partner: { id: config.partnerId, infoService: config.partnerInfoService },
    statusLists: {
      partitionSize: config.statusList.partitionSize,
      bits: config.statusList.bits,
      ttlSeconds: config.statusList.ttlSeconds,
    },
    urls,
  };
}

/** The identity of `face`, signing with `keys` (opened with `face.identification`'s check), issuing `catalog`. */
export function issuerIdentity(face: IssuerFace, keys: KeyHolder, catalog: IssuerCatalog): IssuerIdentity {
  return { ...face, keys, catalog };
}
