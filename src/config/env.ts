import { z } from 'zod';
import { deploymentVariables } from './env-deployment.js';
import { operationVariables } from './env-operation.js';

/** Every server variable, each with its rule and its `.meta` for docs/configuration.md. */
export const EnvSchema = z.object({ ...deploymentVariables, ...operationVariables });
export type Env = z.infer<typeof EnvSchema>;

/**
 * Parses the environment variable by variable, so that every bad one is reported in one run: the
 * variables that parse are returned in `env`, one line per bad one in `problems` (which `loadConfig`
 * extends with its own rules). This is the only module that reads `process.env`.
 * Secrets are returned apart from the config object so that logging the config can never print them.
 */
export function parseEnv(source: NodeJS.ProcessEnv): { env: Env; problems: string[]; invalid: Set<string> } {
  const env: Record<string, unknown> = {};
  const problems: string[] = [];
  const invalid = new Set<string>();
  for (const [name, schema] of Object.entries(EnvSchema.shape)) {
    // Empty strings mean "unset", as in most .env tooling.
    const raw = source[name] === '' ? undefined : source[name];
    const parsed = (schema as z.ZodType).safeParse(raw);
    if (parsed.success) {
      if (parsed.data !== undefined) env[name] = parsed.data;
    } else {
      invalid.add(name);
      // The first message of a variable is enough: the later ones restate it for the same value.
      problems.push(`${name}: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    }
  }
  return { env: env as Env, problems, invalid };
}

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(problems.join('\n'));
    this.name = 'ConfigError';
    this.problems = problems;
  }
}
