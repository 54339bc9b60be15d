import { loadSchemas } from '../../../formats/schema-file.js';
import { countSealedRecipients } from '../../../keys/reseal.js';
import type { DoctorCheck } from '../doctor-context.js';
import { type DoctorLine, line } from '../line.js';

const item = 'renewal';

/**
 * Renewal's recipient emails (docs/security.md "What renewal keeps"): in production a schema that
 * declares `renewal` needs KEY_ENCRYPTION_KEY, without which no email is sealed and none of its
 * credentials can be renewed; while KEY_ENCRYPTION_KEY_PREVIOUS is set, the emails still sealed
 * under it (a `keys reseal` still to run). Silent when neither applies.
 */
export const renewal: DoctorCheck = {
  items: [item],
  async run(ctx) {
    const { config, secrets } = ctx;
    const { given, current, previous } = secrets.keyEncryption;
    const lines: DoctorLine[] = [];
    let renewing: string[] = [];
    try {
      renewing = loadSchemas(config.schemasDir, ctx.identity.urls)
        .all()
        .filter((s) => s.renewal !== undefined)
        .map((s) => s.schemaId);
    } catch {
      // The schemas line reports it.
    }
    if (renewing.length > 0) {
      const names = renewing.join(', ');
      if (config.production && !given)
        lines.push(
          line(
            item,
            'WARN',
            `${names} declare(s) renewal, but KEY_ENCRYPTION_KEY is unset: direct issuance keeps no sealed recipient email, so none of their credentials can be renewed (the sweep records them not renewable); set KEY_ENCRYPTION_KEY (openssl rand -hex 32) on every instance and restart (credentials issued before stay not renewable: re-issue them)`,
          ),
        );
      else
        lines.push(
          line(
            item,
            'PASS',
            `${names} renew(s) direct credentials; recipient emails are sealed under ${given ? 'KEY_ENCRYPTION_KEY' : 'the development KEY_ENCRYPTION_KEY (KEY_ENCRYPTION_KEY is unset)'}`,
          ),
        );
    }
    if (!(previous instanceof Buffer)) return lines;
    const store = await ctx.store();
    if (!store) return lines;
    try {
      const counted = await countSealedRecipients(store.renewals, current, previous);
      const neither =
        counted.neither > 0 ? `; ${counted.neither} open(s) with neither key (not renewable)` : '';
      lines.push(
        counted.previous > 0
          ? line(
              item,
              'FAIL',
              `${counted.previous} of the ${counted.current + counted.previous + counted.neither} recipient email(s) kept for renewal are still sealed under KEY_ENCRYPTION_KEY_PREVIOUS, not KEY_ENCRYPTION_KEY: their credentials cannot be renewed until npm run admin -- keys reseal${neither}`,
            )
          : line(
              item,
              'PASS',
              `none of the ${counted.current + counted.neither} recipient email(s) kept for renewal is left under KEY_ENCRYPTION_KEY_PREVIOUS${neither}`,
            ),
      );
    } catch (err) {
      lines.push(
        line(item, 'FAIL', `the recipient emails kept for renewal do not read: ${(err as Error).message}`),
      );
    }
    return lines;
  },
};
