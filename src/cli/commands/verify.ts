import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { json } from '../output.js';
import { type RegisterCommand, UsageError } from './command.js';

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export const verifyCommand: RegisterCommand = (program, act) => {
  program
    .command('verify')
    .description(
      'verify a credential as a relying party would, from the issuer public documents only: one PASS/FAIL line per check; exit 1 on any FAIL',
    )
    .argument(
      '<credential>',
      'a compact SD-JWT VC, a file holding one or an Iden3 credential JSON, or - for stdin',
    )
    .option(
      '--origin <url>',
      "fetch the issuer's documents from this URL instead of the credential's (staging, tests)",
    )
    .option(
      '--trust <ca.pem>',
      'trust anchor(s) for an x5c header chain; without it the issuer metadata names the key',
    )
    .option('--nonce <nonce>', 'the nonce the key binding JWT must carry')
    .option('--aud <audience>', 'the audience the key binding JWT must name')
    .option('--at <time>', 'verify as of this ISO 8601 time instead of now (expiry, key binding freshness)')
    .option('--schemas <dir>', 'where Iden3 JSON-LD context files are (default SCHEMAS_DIR or ./schemas)')
    .action(
      act(
        async (
          run,
          input: string,
          opts: {
            origin?: string;
            trust?: string;
            nonce?: string;
            aud?: string;
            schemas?: string;
            at?: string;
          },
        ) => {
          const { cwd, env } = run.settings;
          let text: string;
          if (input === '-') text = await readStdin();
          else if (existsSync(resolve(cwd, input))) text = readFileSync(resolve(cwd, input), 'utf8');
          else text = input;
          if (opts.origin !== undefined && !URL.canParse(opts.origin))
            throw new UsageError('--origin: not a URL');
          const now = opts.at === undefined ? undefined : new Date(opts.at);
          if (now !== undefined && Number.isNaN(now.getTime()))
            throw new UsageError('--at: not an ISO 8601 time');
          const { DocumentFetcher, trustAnchorsFromPem, verifyCredential } = await import(
            '../../formats/verify.js'
          );
          let trustAnchors: ReturnType<typeof trustAnchorsFromPem> | undefined;
          if (opts.trust !== undefined) {
            const file = resolve(cwd, opts.trust);
            if (!existsSync(file)) throw new UsageError(`--trust: no file ${opts.trust}`);
            try {
              trustAnchors = trustAnchorsFromPem(readFileSync(file, 'utf8'));
            } catch (err) {
              throw new UsageError(`--trust: ${(err as Error).message}`);
            }
          }
          const result = await verifyCredential(text, {
            fetcher: new DocumentFetcher({ origin: opts.origin }),
            trustAnchors,
            now,
            nonce: opts.nonce,
            aud: opts.aud,
            schemasDir: resolve(cwd, opts.schemas ?? env.SCHEMAS_DIR ?? './schemas'),
          });
          if (run.json) run.io.out(json(result));
          else {
            const width = Math.max(...result.checks.map((c) => c.check.length));
            for (const c of result.checks)
              run.io.out(
                `${c.ok ? 'PASS' : 'FAIL'}  ${c.check.padEnd(width)}  ${c.ok ? '' : `${c.code}: `}${c.detail}`,
              );
            if (result.claims) run.io.out(`claims: ${JSON.stringify(result.claims)}`);
            run.io.out(result.ok ? 'verified' : 'NOT verified');
          }
          return result.ok ? 0 : 1;
        },
      ),
    );
};
