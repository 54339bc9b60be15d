import { json } from '../output.js';
import type { RegisterCommand } from './command.js';

export const didCommand: RegisterCommand = (program, act) => {
  program
    .command('did')
    .description('the issuer DIDs: did:web, and the Iden3 DID when that back-end is on')
    .action(
      act(async (run) => {
        const { body } = await run.client.call<{ id: string; alsoKnownAs?: string[] }>(
          'GET',
          '/.well-known/did.json',
          { admin: false },
        );
        const iden3 = body.alsoKnownAs?.find(
          (d) => d.startsWith('did:iden3:') || d.startsWith('did:polygonid:'),
        );
        const out = {
          didWeb: body.id,
          iden3: iden3 ?? body.alsoKnownAs?.[0] ?? null,
          alsoKnownAs: body.alsoKnownAs ?? [],
        };
        if (run.json) run.io.out(json(out));
        else {
          run.io.out(`did:web  ${out.didWeb}`);
          run.io.out(`iden3    ${out.iden3 ?? '-'}`);
        }
        return 0;
      }),
    );
};
