import type { Channel, ProofType } from '../model.js';
import type { CredentialFormat } from './format.js';
import { iden3Bjj } from './iden3-bjj/format.js';
import { msoMdoc } from './mso-mdoc/format.js';
import { sdJwtVc } from './sd-jwt-vc/format.js';

export type { CredentialFormat, FormatStartDeps, StartedFormat, VerifyOptions } from './format.js';

/**
 * The credential formats, one line each (docs/architecture.md "How to add a credential format").
 * Their order is `PROOF_TYPES`' (src/formats/names.ts): the first that serves a channel
 * is the one it issues by default.
 */
export const FORMATS: readonly CredentialFormat[] = [sdJwtVc, iden3Bjj, msoMdoc];

/** The formats a channel issues, in list order. */
export function formatsServing(channel: Channel): readonly CredentialFormat[] {
  return FORMATS.filter((f) => f.channels.includes(channel));
}

/**
 * The format a channel issues when the request names none: the hosted default, and the only one
 * of the direct channel (renewal re-issues those) and of OpenID4VCI.
 */
export function channelFormat(channel: Channel): ProofType {
  const first = formatsServing(channel)[0];
  if (!first) throw new Error(`no credential format serves the ${channel} channel`);
  return first.proofType;
}

/** The format of a proof type. */
export function formatOf(proofType: ProofType): CredentialFormat {
  const format = FORMATS.find((f) => f.proofType === proofType);
  if (!format) throw new Error(`no credential format ${proofType}`);
  return format;
}
