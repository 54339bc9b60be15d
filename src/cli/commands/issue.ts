import { writeFileSync } from 'node:fs';
import { AdminApiError } from '../admin-client.js';
import { json } from '../output.js';
import { jsonOption, onDuplicateOption, type RegisterCommand, UsageError, withFlags } from './command.js';

/** The server's field names as this command's flags, so that an error names what to fix. */
export function issueFlag(field: string): string {
  const [head, ...rest] = field.split('.');
  const flag =
    {
      userId: '--email',
      claimsUserId: '--user',
      schemaId: '--schema',
      vct: '--vct',
      expiration: '--expiration',
      proofType: '--proof-type',
      holderKey: '--holder-key',
    }[head ?? ''] ??
    (head === 'credentialSubject' ? '--subject' : head === 'disclosureFrame' ? '--disclosure-frame' : field);
  return flag === field || rest.length === 0 ? flag : `${flag} ${rest.join('.')}`;
}

export const issueCommand: RegisterCommand = (program, act) => {
  program
    .command('issue')
    .description(
      'issue one credential to a holder by email (POST /admin/issue-vc); with --proof-type MSO_MDOC, an ISO mdoc to --holder-key',
    )
    .requiredOption('--email <email>', "(required) the holder's own email")
    .requiredOption('--schema <schemaId>', '(required) schema to issue')
    .option('--subject <json|@file>', 'credentialSubject claims (or --user)')
    .option('--claims <json|@file>', 'the same as --subject (the name `offer` gives it)')
    .option(
      '--user <userId>',
      "the claims provider's user id: its claims for --schema are issued (or --subject)",
    )
    .option('--vct <vct>', "SD-JWT vct (default: the schema's sdJwt.vct)")
    .option(
      '--proof-type <type>',
      'SD_JWT_VC (default) or MSO_MDOC: an ISO mdoc bound to --holder-key, not uploaded',
    )
    .option('--holder-key <json|@file>', "MSO_MDOC: the holder's public key as a JWK, the mdoc's device key")
    .option('--out <file>', 'MSO_MDOC: write the mdoc (base64url IssuerSigned) to this file')
    .option(
      '--expiration <date>',
      "expiry: ISO 8601 date-time with an offset, or a date (default: now + the schema's expiresInSeconds)",
    )
    .option(
      '--disclosure-frame <json|@file>',
      'selectively disclosable claims (default: every top-level claim)',
    )
    .addOption(onDuplicateOption())
    .option('--idempotency-key <key>', 'replay-safe retries: the same key and body answer the first result')
    .option('--reason <text>', 'why (kept in the audit log)')
    .action(
      act(async (run, opts: Record<string, string | undefined>) => {
        if (opts.subject !== undefined && opts.claims !== undefined)
          throw new UsageError('give the claims once: --subject or --claims (the same option)');
        const subject = opts.subject ?? opts.claims;
        const subjectFlag = opts.subject !== undefined ? '--subject' : '--claims';
        if ((subject === undefined) === (opts.user === undefined))
          throw new UsageError(
            "give one of --subject (the claims) or --user (the claims provider's user id)",
          );
        // Exactly one source of claims: the given ones, or the claims provider's for --user.
        const claims =
          subject !== undefined
            ? { credentialSubject: jsonOption(subject, subjectFlag) }
            : { claimsUserId: opts.user! };
        const mdoc = opts.proofType === 'MSO_MDOC';
        if (mdoc && opts.holderKey === undefined)
          throw new UsageError("--proof-type MSO_MDOC needs --holder-key (the holder's public JWK)");
        if (!mdoc && (opts.holderKey !== undefined || opts.out !== undefined))
          throw new UsageError('--holder-key and --out go with --proof-type MSO_MDOC');
        const disclosureFrame = opts.disclosureFrame
          ? jsonOption(opts.disclosureFrame, '--disclosure-frame')
          : undefined;
        // The server's own checks first; its answer also names the schema's vct and lifetime.
        const { body: check } = await run.client.call<{
          problems: Array<{ field: string; message: string }>;
          vct: Record<string, string>;
          expiresInSeconds?: Record<string, number>;
        }>('POST', '/admin/issue-vc/validate', {
          body: {
            rows: [
              {
                schemaId: opts.schema,
                ...(opts.vct ? { vct: opts.vct } : {}),
                ...claims,
                ...(disclosureFrame ? { disclosureFrame } : {}),
              },
            ],
          },
        });
        // An unknown schema gives no defaults: say so (naming --schema) rather than "expiration required".
        const known = opts.schema! in check.vct;
        if (!known && check.problems.length > 0) {
          const problems = check.problems.map((p) => ({ field: issueFlag(p.field), message: p.message }));
          if (run.json) run.io.out(json({ ok: false, problems }));
          else for (const p of problems) run.io.err(`${p.field}: ${p.message}`);
          return 1;
        }
        const schemaVct = check.vct[opts.schema!];
        if (!mdoc && opts.vct && schemaVct && opts.vct !== schemaVct)
          run.io.err(
            `warning: --vct ${opts.vct} differs from the schema's vct ${schemaVct}; wallets and verifiers that know the schema expect the latter`,
          );
        const lifetime = check.expiresInSeconds?.[opts.schema!];
        // Loaded when run (with the batch code's CSV and zod): not at every command's start.
        const { defaultExpiration } = await import('../batch-csv.js');
        const expiration = opts.expiration ?? (lifetime ? defaultExpiration(lifetime) : undefined);
        const body = {
          userId: opts.email,
          schemaId: opts.schema,
          ...(mdoc
            ? { proofType: 'MSO_MDOC', holderKey: jsonOption(opts.holderKey!, '--holder-key') }
            : { ...(opts.proofType ? { proofType: opts.proofType } : {}), vct: opts.vct ?? schemaVct }),
          expiration,
          ...claims,
          ...(disclosureFrame ? { disclosureFrame } : {}),
          onDuplicate: opts.onDuplicate,
          ...(opts.reason ? { reason: opts.reason } : {}),
        };
        let answered: { status: number; body: Record<string, unknown> };
        try {
          answered = await run.client.call<Record<string, unknown>>('POST', '/admin/issue-vc', {
            body,
            headers: opts.idempotencyKey ? { 'idempotency-key': opts.idempotencyKey } : {},
          });
        } catch (err) {
          throw err instanceof AdminApiError ? withFlags(err, issueFlag) : err;
        }
        const { status, body: answer } = answered;
        const outcome = status === 200 ? 'existing' : status === 202 ? 'pending' : 'issued';
        if (opts.out !== undefined && typeof answer.credential === 'string')
          writeFileSync(opts.out, `${answer.credential}\n`, { mode: 0o600 });
        if (run.json) run.io.out(json({ outcome, ...answer }));
        else {
          run.io.out(`${outcome}: credential ${String(answer.credentialId)}`);
          for (const k of ['revocationNonce', 'holderDid', 'schemaId', 'uploadState', 'storagePath'])
            run.io.out(`  ${k.padEnd(16)}${String(answer[k] ?? '-')}`);
          if (typeof answer.credential === 'string')
            run.io.out(
              opts.out !== undefined
                ? `  ${'credential'.padEnd(16)}written to ${opts.out}`
                : `  ${'credential'.padEnd(16)}${answer.credential}`,
            );
        }
        return 0;
      }),
    );
};
