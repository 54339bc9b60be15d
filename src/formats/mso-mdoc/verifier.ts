import { X509Certificate } from 'node:crypto';
import {
  cborDecode,
  type IssuerSignedDocument,
  parseIssuerSigned,
  type VerificationAssessment,
  Verifier,
} from '@animo-id/mdoc';
import { type StatusBits, StatusList, StatusValue } from '../../status/status-list.js';
import { Checks, refuse, type VerifyResult } from '../../verify/check.js';
import type { VerifyOptions } from '../format.js';
import { mdocContext, x509Context } from './mdoc-context.js';
import { decodeStatusListCwt, STATUS_LIST_CWT_MEDIA_TYPE } from './status-list-cwt.js';

const SKEW_MS = 60_000;
const BASE64URL = /^[A-Za-z0-9_-]+$/;
const isMap = (v: unknown): v is Map<unknown, unknown> => v instanceof Map;

/** Whether `input` is a base64url `IssuerSigned` structure (OpenID4VCI's mso_mdoc credential). */
export function isIssuerSigned(input: unknown): boolean {
  if (typeof input !== 'string' || input.length < 64 || !BASE64URL.test(input)) return false;
  try {
    const decoded = cborDecode(Buffer.from(input, 'base64url'));
    return isMap(decoded)
      ? decoded.has('issuerAuth')
      : typeof decoded === 'object' && 'issuerAuth' in decoded;
  } catch {
    return false;
  }
}

/**
 * Verifies an mdoc's issuer-signed part as a reader does (ISO/IEC 18013-5 §9.3.1) with
 * @animo-id/mdoc's verifier: the issuer signature and its `x5chain` up to a trusted IACA
 * certificate (`--trust`, else the issuer's `/.well-known/mdoc-iaca.pem`, fetched from the origin
 * of the MSO's status list), the value digests, the MSO's validity, and its token status list
 * entry read from the CWT Status List Token.
 */
export async function verifyMdoc(text: string, options: VerifyOptions): Promise<VerifyResult> {
  const checks = new Checks();
  const now = options.now ?? new Date();
  let document: IssuerSignedDocument | undefined;
  await checks.run(
    'format',
    () => {
      document = parseIssuerSigned(Buffer.from(text, 'base64url'));
      const mso = document.issuerSigned.issuerAuth.decodedPayload;
      return `ISO mdoc ${document.docType}, MSO ${mso.version}, ${document.issuerSignedNameSpaces.length} namespace(s)`;
    },
    'NOT_MDOC',
  );
  if (!document) return { ok: false, format: 'mso-mdoc', checks: checks.list };
  const doc = document;
  const issuerAuth = doc.issuerSigned.issuerAuth;
  const mso = issuerAuth.decodedPayload as typeof issuerAuth.decodedPayload & { status?: unknown };
  const statusRef = statusReference(mso.status);
  const verifier = new Verifier();
  const context = { ...mdocContext(), x509: x509Context };

  await checks.run(
    'signature',
    async () => {
      const { anchors, source } = await trustAnchors();
      const failed: string[] = [];
      await verifier.verifyIssuerSignature(
        {
          trustedCertificates: anchors.map((a) => new Uint8Array(a.raw)),
          issuerAuth,
          now,
          disableCertificateChainValidation: false,
          onCheckG: collect(failed),
        },
        context,
      );
      if (failed.length > 0) refuse('SIGNATURE_INVALID', failed.join('; '));
      const signer = new X509Certificate(issuerAuth.certificate);
      return `${issuerAuth.algName} by ${signer.subject.replaceAll('\n', ', ')}, chain to ${source}`;
    },
    'SIGNATURE_INVALID',
  );
  await checks.run(
    'digests',
    async () => {
      const failed: string[] = [];
      await verifier.verifyData({ mdoc: doc, onCheckG: collect(failed) }, context);
      if (failed.length > 0) refuse('DIGEST_MISMATCH', failed.join('; '));
      const count = doc.issuerSignedNameSpaces.reduce(
        (n, ns) => n + (doc.issuerSigned.nameSpaces.get(ns)?.length ?? 0),
        0,
      );
      return `${count} element(s), each matching its digest in the MSO`;
    },
    'DIGEST_MISMATCH',
  );
  await checks.run(
    'validity',
    () => {
      const { validFrom, validUntil } = mso.validityInfo;
      if (now.getTime() < validFrom.getTime() - SKEW_MS)
        refuse('NOT_YET_VALID', `not valid before ${validFrom.toISOString()}`);
      if (now.getTime() >= validUntil.getTime() + SKEW_MS)
        refuse('EXPIRED', `expired at ${validUntil.toISOString()}`);
      return `valid until ${validUntil.toISOString()}`;
    },
    'CLAIM_MALFORMED',
  );
  if (mso.status !== undefined) await checks.run('status', () => status(), 'STATUS_LIST_INVALID');
  const claims: Record<string, unknown> = {};
  for (const ns of doc.issuerSignedNameSpaces)
    for (const [name, value] of doc.getIssuerNameSpace(ns) ?? []) claims[name] = value;
  return { ok: checks.ok, format: 'mso-mdoc', checks: checks.list, claims };

  async function trustAnchors(): Promise<{ anchors: X509Certificate[]; source: string }> {
    if (options.trustAnchors && options.trustAnchors.length > 0)
      return { anchors: options.trustAnchors, source: 'a --trust certificate' };
    if (!statusRef)
      return refuse(
        'TRUST_ANCHOR_MISSING',
        'give --trust <iaca.pem>: the mdoc names no issuer origin to fetch its IACA certificate from',
      );
    const url = new URL('/.well-known/mdoc-iaca.pem', statusRef.uri).toString();
    const doc = await options.fetcher.get(url, 'TRUST_ANCHOR_MISSING');
    const blocks = doc.text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
    if (blocks.length === 0) return refuse('TRUST_ANCHOR_MISSING', `${doc.url} holds no PEM certificate`);
    return {
      anchors: blocks.map((b) => new X509Certificate(b)),
      source: `the IACA certificate of ${doc.url} (fetched, not pinned: pass --trust to pin it)`,
    };
  }

  // draft-ietf-oauth-status-list: the CWT Status List Token at the uri, signed by the document
  // signer of the mdoc, its sub the uri, not expired; then the entry.
  async function status(): Promise<string> {
    if (!statusRef) return refuse('STATUS_LIST_INVALID', 'status.status_list needs a uri and an idx');
    const { uri, idx } = statusRef;
    const doc = await options.fetcher.get(uri, 'STATUS_UNAVAILABLE', STATUS_LIST_CWT_MEDIA_TYPE);
    let token: ReturnType<typeof decodeStatusListCwt>;
    try {
      token = decodeStatusListCwt(new Uint8Array(doc.bytes));
    } catch (err) {
      return refuse('STATUS_LIST_INVALID', `${doc.url}: ${(err as Error).message}`);
    }
    const signer = new X509Certificate(issuerAuth.certificate);
    if (!token.verify(signer.publicKey))
      refuse('STATUS_LIST_SIGNATURE_INVALID', `${doc.url} is not signed by the mdoc's document signer`);
    if (token.sub !== uri) refuse('STATUS_LIST_INVALID', `${doc.url}: sub ${token.sub} is not ${uri}`);
    if (token.exp !== undefined && now.getTime() >= token.exp * 1000 + SKEW_MS)
      refuse('STATUS_LIST_INVALID', `${doc.url}: expired at ${new Date(token.exp * 1000).toISOString()}`);
    let value: number;
    try {
      value = StatusList.decode(token.lst, token.bits as StatusBits).get(idx);
    } catch (err) {
      return refuse('STATUS_LIST_INVALID', `${doc.url}: ${(err as Error).message}`);
    }
    if (value === StatusValue.INVALID) refuse('REVOKED', `revoked (entry ${idx} of ${uri})`);
    if (value === StatusValue.SUSPENDED) refuse('SUSPENDED', `suspended (entry ${idx} of ${uri})`);
    if (value !== StatusValue.VALID) refuse('STATUS_NOT_VALID', `status ${value} (entry ${idx} of ${uri})`);
    return `valid (entry ${idx} of ${uri}, a CWT Status List Token signed by the document signer)`;
  }
}

/** `status: { status_list: { idx, uri } }` of an MSO, when well-formed. */
function statusReference(status: unknown): { idx: number; uri: string } | undefined {
  const get = (m: unknown, k: string): unknown =>
    isMap(m) ? m.get(k) : typeof m === 'object' && m ? (m as Record<string, unknown>)[k] : undefined;
  const list = get(status, 'status_list');
  const idx = get(list, 'idx');
  const uri = get(list, 'uri');
  if (typeof uri !== 'string' || !Number.isSafeInteger(idx) || (idx as number) < 0) return undefined;
  return { idx: idx as number, uri };
}

/** A callback for the library's checks that keeps the failures' text. */
function collect(failed: string[]): (item: VerificationAssessment) => void {
  return (item) => {
    if (item.status === 'FAILED') failed.push(item.reason ? `${item.check}: ${item.reason}` : item.check);
  };
}
