import { json, table } from '../output.js';
import type { RegisterCommand } from './command.js';

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
        const { body } = await run.client.call<{ sessions: ConsoleSession[] }>(
          'GET',
          '/admin/console/sessions',
        );
        if (run.json) run.io.out(json(body));
        else if (body.sessions.length === 0) run.io.out('no console sessions');
        else run.io.out(table(body.sessions, ['id', 'actor', 'createdAt', 'lastSeenAt', 'endsAt']));
        return 0;
      }),
    );
  sessions
    .command('end')
    .description('end a console session now, on every instance (DELETE /admin/console/sessions/:id)')
    .argument('<id>', 'the session id, as `console sessions list` shows it')
    .action(
      act(async (run, id: string) => {
        const { body } = await run.client.call<{ ended: string }>(
          'DELETE',
          `/admin/console/sessions/${encodeURIComponent(id)}`,
        );
        run.io.out(run.json ? json(body) : `${body.ended}: ended`);
        return 0;
      }),
    );
};
