import { documentSignerCertificates } from '../../../formats/mso-mdoc/document-signer.js';
import { MSO_MDOC } from '../../../formats/mso-mdoc/names.js';
import { loadSchemas } from '../../../formats/schema-file.js';
import { certificateStanding } from '../../../keys/certificates.js';
import type { DoctorCheck } from '../doctor-context.js';
import { type DoctorLine, line } from '../line.js';

const item = 'mdoc certificates';

/**
 * The certificates ISO mdocs are signed under (docs/schemas-and-claims.md "ISO mdoc"), while a
 * schema lists MSO_MDOC: the document signer (the signing key's chain) and the IACA root, each
 * with its expiry; in production a signing key without a chain cannot sign mdocs.
 */
export const mdocCertificates: DoctorCheck = {
  items: [item],
  async run(ctx) {
    const { config } = ctx;
    let needed = false;
    try {
      needed = loadSchemas(config.schemasDir, ctx.identity.urls)
        .all()
        .some((s) => s.proofTypes.includes(MSO_MDOC));
    } catch {
      return []; // The schemas line reports it.
    }
    // Nothing to say without an mdoc schema: the report stays as it was.
    if (!needed) return [];
    const ring = await ctx.ring();
    if (ring instanceof Error) return []; // The keys line reports it.
    const key = ring.signing;
    const certificates = documentSignerCertificates({
      keysDir: config.keysDir,
      origin: ctx.origin,
      development: !config.production,
    });
    const described = certificates.describe(key);
    if (!key.x5c && config.production)
      return [
        line(
          item,
          'FAIL',
          `signing key ${key.kid} has no certificate chain, so no document signer: run npm run admin -- keys prepare --csr <file>, have it certified under your IACA root, attach the chain with keys certificate, then rotate`,
        ),
      ];
    if (described.length === 0)
      return [
        line(item, 'PASS', 'the development IACA (KEYS_DIR/mdoc-iaca.json) is created at the first start'),
      ];
    const now = Date.now();
    const lines: DoctorLine[] = described.map((c) => {
      const { days, standing } = certificateStanding(c.notAfter, now);
      const what = `${c.role === 'iaca' ? 'IACA root' : 'document signer'} ${c.subject.replaceAll('\n', ', ')}`;
      if (standing === 'expired')
        return line(item, 'FAIL', `${what}: expired on ${c.notAfter.toISOString()}`);
      if (standing === 'expiring')
        return line(item, 'WARN', `${what}: expires on ${c.notAfter.toISOString()} (${days} days)`);
      return line(item, 'PASS', `${what}: valid until ${c.notAfter.toISOString()} (${days} days)`);
    });
    if (!key.x5c)
      lines.push(
        line(
          item,
          'PASS',
          `document signer: issued by the development IACA for key ${key.kid} at each start`,
        ),
      );
    return lines;
  },
};
