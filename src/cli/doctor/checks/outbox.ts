import type { DoctorCheck } from '../doctor-context.js';
import { type DoctorLine, line } from '../line.js';

/** Uploads to the hosting service: none pending too long, none given up. */
export const outbox: DoctorCheck = {
  items: ['outbox'],
  async run(ctx) {
    const store = await ctx.store();
    if (!store) return [];
    const minutes = Math.round(ctx.maxUploadAgeMs / 60_000);
    const lines: DoctorLine[] = [];
    const pending = await store.issuances.countPendingUploads();
    const oldest = await store.issuances.oldestPendingUpload();
    if (oldest && ctx.now.getTime() - oldest.getTime() > ctx.maxUploadAgeMs)
      lines.push(
        line(
          'outbox',
          'FAIL',
          `${pending} upload(s) pending, the oldest since ${oldest.toISOString()} (over ${minutes} min): is SERVICE_V1_BASE_URL reachable?`,
        ),
      );
    else
      lines.push(
        line(
          'outbox',
          'PASS',
          pending === 0 ? 'no upload pending' : `${pending} upload(s) pending, none over ${minutes} min`,
        ),
      );
    // A failed upload is a credential its holder never received, and the outbox will not try it
    // again by itself: a FAIL (not a WARN), so that the check does not pass while deliveries are stranded.
    const failed = await store.issuances.countFailedUploads();
    if (failed > 0)
      lines.push(
        line(
          'outbox',
          'FAIL',
          `${failed} upload(s) failed (given up after UPLOAD_MAX_ATTEMPTS; npm run admin -- history --status upload_failed lists them); once the cause is fixed: npm run admin -- uploads retry --all-failed`,
        ),
      );
    return lines;
  },
};
