import { SD_JWT_VC } from '../../formats/sd-jwt-vc/names.js';
import { AdminApiError } from '../admin-client.js';
import { json } from '../output.js';
import { jsonOption, positiveInt, type RegisterCommand, UsageError, withFlags } from './command.js';

/**
 * The server's field names as this command's flags, so that an error names what to fix; `claims`
 * is the flag the claims came in (`--claims`, or `--subject` as `issue` calls it).
 */
function offerFlag(field: string, claims = '--claims'): string {
  const [head, ...rest] = field.split('.');
  const flag =
    {
      schemaId: '--schema',
      userId: '--user',
      email: '--email',
      claims,
      txCode: '--tx-code',
      expiresInSeconds: '--expires-in',
      proofType: '--proof-type',
    }[head ?? ''] ?? field;
  return flag === field || rest.length === 0 ? flag : `${flag} ${rest.join('.')}`;
}

interface OfferAnswer {
  offerId: string;
  offerUri: string;
  credentialOffer: Record<string, unknown>;
  txCode?: string;
  expiresAt: string;
}

/**
 * `offer`: an OpenID4VCI credential offer (POST /admin/credential-offers) for a standards wallet,
 * printed as its `openid-credential-offer://` link and as a QR code the wallet scans
 * (docs/interface.md "OpenID4VCI: the wallet door").
 */
export const offerCommand: RegisterCommand = (program, act) => {
  program
    .command('offer')
    .description(
      'offer a credential to an OpenID4VCI wallet: a link and a QR code (POST /admin/credential-offers)',
    )
    .requiredOption('--schema <schemaId>', '(required) schema to offer')
    .option(
      '--user <userId>',
      "the claims provider's user id: its claims are offered (or --email with --claims)",
    )
    .option(
      '--email <email>',
      'the holder by email (with --claims); kept only as a keyed hash for history --email',
    )
    .option('--claims <json|@file>', "the claims, instead of the claims provider's")
    .option('--subject <json|@file>', 'the same as --claims (the name `issue` gives it)')
    .option('--proof-type <type>', `${SD_JWT_VC} (default) or MSO_MDOC, an ISO mdoc`)
    .option('--tx-code', 'also require a six-digit transaction code, printed here for you to pass on')
    .option(
      '--expires-in <seconds>',
      'how long the offer can be taken (default 600)',
      positiveInt(7 * 24 * 3600),
    )
    .option('--no-qr', 'print the link only (the QR code is drawn only when stdout is a terminal)')
    .option('--reason <text>', 'why (kept in the audit log)')
    .action(
      act(async (run, opts: Record<string, string | boolean | number | undefined>) => {
        if ((opts.user === undefined) === (opts.email === undefined))
          throw new UsageError(
            "give one of --user (the claims provider's user id) or --email (with --claims)",
          );
        if (opts.claims !== undefined && opts.subject !== undefined)
          throw new UsageError('give the claims once: --claims or --subject (the same option)');
        const claimsFlag = opts.subject !== undefined ? '--subject' : '--claims';
        const claims = opts.subject ?? opts.claims;
        const body = {
          schemaId: opts.schema,
          ...(typeof opts.proofType === 'string' ? { proofType: opts.proofType } : {}),
          ...(opts.user !== undefined ? { userId: opts.user } : { email: opts.email }),
          ...(typeof claims === 'string' ? { claims: jsonOption(claims, claimsFlag) } : {}),
          txCode: opts.txCode === true,
          ...(typeof opts.expiresIn === 'number' ? { expiresInSeconds: opts.expiresIn } : {}),
          ...(typeof opts.reason === 'string' ? { reason: opts.reason } : {}),
        };
        let answer: OfferAnswer;
        try {
          answer = (await run.client.call<OfferAnswer>('POST', '/admin/credential-offers', { body })).body;
        } catch (err) {
          throw err instanceof AdminApiError ? withFlags(err, (f) => offerFlag(f, claimsFlag)) : err;
        }
        if (run.json) {
          run.io.out(json(answer));
          return 0;
        }
        // A QR code is for eyes: drawn on a terminal only, never into a file or a pipe.
        if (opts.qr !== false && run.io.outIsTTY === true) {
          // Loaded only for this command (the CLI's start stays short).
          const { default: QRCode } = await import('qrcode');
          run.io.out(await QRCode.toString(answer.offerUri, { type: 'terminal', small: true }));
        }
        run.io.out(answer.offerUri);
        run.io.out(`  expires         ${answer.expiresAt}`);
        if (answer.txCode)
          run.io.out(`  tx code         ${answer.txCode}  (give it to the holder apart from the QR code)`);
        return 0;
      }),
    );
};
