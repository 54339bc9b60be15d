import { Option } from 'commander';
import { json } from '../output.js';
import type { RegisterCommand } from './command.js';

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
        const { body } = await run.client.call<Renewed>('POST', '/admin/renew', {
          body: { credentialId, reason: opts.reason },
        });
        if (run.json) run.io.out(json(body));
        else
          run.io.out(
            `${body.renewedFrom} renewed by ${body.credentialId} (expires ${body.expiresAt}, upload ${body.uploadState}${
              body.previousRevoked ? '; the previous one is revoked' : ''
            })`,
          );
        return 0;
      }),
    );
};
