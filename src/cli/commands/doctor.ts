import type { RegisterCommand } from './command.js';

export const doctorCommand: RegisterCommand = (program, act) => {
  program
    .command('doctor')
    .description(
      'go-live check, run where the server runs with its environment: one PASS/WARN/FAIL line per item; exit 1 on any FAIL',
    )
    .option(
      '--origin <url>',
      'fetch the public documents from this URL instead of ISSUER_ORIGIN (staging, tests)',
    )
    .option('--allow-http', 'an http ISSUER_ORIGIN is a WARN, not a FAIL (staging, tests)')
    .action(
      act(async (run, opts: { origin?: string; allowHttp?: boolean }) => {
        // Loaded here: the check opens the database and loads schemas as the server does.
        const [{ loadConfig }, { ConfigError }, { runDoctor }] = await Promise.all([
          import('../../config/config.js'),
          import('../../config/env.js'),
          import('../doctor.js'),
        ]);
        let lines: Awaited<ReturnType<typeof runDoctor>>;
        try {
          const { config, secrets } = loadConfig(run.settings.env, run.settings.cwd);
          lines = await runDoctor(config, secrets, {
            origin: opts.origin,
            allowHttp: opts.allowHttp === true,
          });
        } catch (err) {
          if (!(err instanceof ConfigError)) throw err;
          lines = err.problems.map((detail) => ({ item: 'config', verdict: 'FAIL' as const, detail }));
        }
        const ok = !lines.some((l) => l.verdict === 'FAIL');
        if (run.json) run.io.out(JSON.stringify({ ok, items: lines }, null, 2));
        else {
          const width = Math.max(...lines.map((l) => l.item.length));
          for (const l of lines) run.io.out(`${l.verdict}  ${l.item.padEnd(width)}  ${l.detail}`);
          const count = (v: string) => lines.filter((l) => l.verdict === v).length;
          run.io.out(`${count('PASS')} pass, ${count('WARN')} warn, ${count('FAIL')} fail`);
        }
        return ok ? 0 : 1;
      }),
    );
};
