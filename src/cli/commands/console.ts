import { table } from '../output.js';
import { callAndPrint, type RegisterCommand } from './command.js';

type ConsoleSession = {
  id: string;
  actor: string;
  createdAt: string;
  lastSeenAt: string;
  endsAt: string;
};

/** `npm run admin -- console sessions list|end <id>` (docs/operations.md "The admin console"). */
export const consoleCommand: RegisterCommand = (program, act) => {
  const sessions = program
    .command('console')
    .description('the admin console')
    .command('sessions')
    .description('the signed-in console sessions');
  sessions
    .command('list')
    .description('the live console sessions (GET /admin/console/sessions)')
    .action(
      act(async (run) => {
        await callAndPrint<{ sessions: ConsoleSession[] }>(run, 'GET', '/admin/console/sessions', (body) =>
          body.sessions.length === 0
            ? 'no console sessions'
            : table(body.sessions, ['id', 'actor', 'createdAt', 'lastSeenAt', 'endsAt']),
        );
        return 0;
      }),
    );
  sessions
    .command('end')
    .description('end a console session now, on every instance (DELETE /admin/console/sessions/:id)')
    .argument('<id>', 'the session id, as `console sessions list` shows it')
    .action(
      act(async (run, id: string) => {
        await callAndPrint<{ ended: string }>(
          run,
          'DELETE',
          `/admin/console/sessions/${encodeURIComponent(id)}`,
          (body) => `${body.ended}: ended`,
        );
        return 0;
      }),
    );
};
