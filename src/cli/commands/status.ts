import { json } from '../output.js';
import { NONCE, type RegisterCommand, UsageError } from './command.js';
import { addStatusBulkCommands } from './status-bulk.js';

export const statusCommand: RegisterCommand = (program, act) => {
  const status = program
    .command('status')
    .description(
      'public revocation status of a credential (GET /revocation-status/:nonce); `status bulk` and `status job` for many',
    )
    .argument('<nonce>', 'revocation nonce (decimal)')
    .action(
      act(async (run, nonce: string) => {
        if (!NONCE.test(nonce)) throw new UsageError('nonce: not a decimal revocation nonce');
        const { body } = await run.client.call<{ isRevoked: boolean; status?: string }>(
          'GET',
          `/revocation-status/${nonce}`,
          { admin: false },
        );
        if (run.json) run.io.out(json({ revocationNonce: nonce, ...body }));
        else run.io.out(`${nonce}: ${body.status ?? (body.isRevoked ? 'revoked' : 'not revoked')}`);
        return 0;
      }),
    );
  addStatusBulkCommands(status, act);
};
