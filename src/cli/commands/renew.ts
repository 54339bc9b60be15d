import { Option } from 'commander';
import { callAndPrint, type RegisterCommand } from './command.js';

interface Renewed {
  credentialId: string;
  renewedFrom: string;
  previousRevoked: boolean;
  expiresAt: string;
  uploadState: string;
}

/** `renew <credentialId> --reason …`: re-issue one direct credential to its holder (POST /admin/renew). */
export const renewCommand: RegisterCommand = (program, act) => {
  program
    .command('renew')
    .description(
      're-issue a direct credential to the same holder, claims looked up again through the claims provider (POST /admin/renew)',
    )
    .argument('<credentialId>', 'the credential to renew (see history)')
    .addOption(new Option('--reason <text>', 'why (kept in the audit log)').makeOptionMandatory())
    .action(
      act(async (run, credentialId: string, opts: { reason: string }) => {
        await callAndPrint<Renewed>(
          run,
          'POST',
          '/admin/renew',
          (body) =>
            `${body.renewedFrom} renewed by ${body.credentialId} (expires ${body.expiresAt}, upload ${body.uploadState}${
              body.previousRevoked ? '; the previous one is revoked' : ''
            })`,
          { body: { credentialId, reason: opts.reason } },
        );
        return 0;
      }),
    );
};
