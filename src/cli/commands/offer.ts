import { AdminApiError } from '../admin-client.js';
import { json } from '../output.js';
import { jsonOption, positiveInt, type RegisterCommand, UsageError, withFlags } from './command.js';

/** The server's field names as this command's flags, so that an error names what to fix. */
function offerFlag(field: string): string {
  const [head, ...rest] = field.split('.');
  const flag =
    {
      schemaId: '--schema',
      userId: '--user',
      email: '--email',
      claims: '--claims',
      txCode: '--tx-code',
      expiresInSeconds: '--expires-in',
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
    .requiredOption('--schema <schemaId>', '(required) schema to offer (issued as SD_JWT_VC)')
    .option(
      '--user <userId>',
      "the claims provider's user id: its claims are offered (or --email with --claims)",
    )
    .option(
      '--email <email>',
      'the holder by email (with --claims); kept only as a keyed hash for history --email',
    )
    .option('--claims <json|@file>', "the claims, instead of the claims provider's")
    .option('--tx-code', 'also require a six-digit transaction code, printed here for you to pass on')
    .option(
      '--expires-in <seconds>',
      'how long the offer can be taken (default 600)',
      positiveInt(7 * 24 * 3600),
    )
    .option('--no-qr', 'print the link only')
    .option('--reason <text>', 'why (kept in the audit log)')
    .action(
      act(async (run, opts: Record<string, string | boolean | number | undefined>) => {
        if ((opts.user === undefined) === (opts.email === undefined))
          throw new UsageError(
            "give one of --user (the claims provider's user id) or --email (with --claims)",
          );
        const body = {
          schemaId: opts.schema,
          ...(opts.user !== undefined ? { userId: opts.user } : { email: opts.email }),
          ...(typeof opts.claims === 'string' ? { claims: jsonOption(opts.claims, '--claims') } : {}),
          txCode: opts.txCode === true,
          ...(typeof opts.expiresIn === 'number' ? { expiresInSeconds: opts.expiresIn } : {}),
          ...(typeof opts.reason === 'string' ? { reason: opts.reason } : {}),
        };
        let answer: OfferAnswer;
        try {
          answer = (await run.client.call<OfferAnswer>('POST', '/admin/credential-offers', { body })).body;
        } catch (err) {
          throw err instanceof AdminApiError ? withFlags(err, offerFlag) : err;
        }
        if (run.json) {
          run.io.out(json(answer));
          return 0;
        }
        if (opts.qr !== false) {
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
