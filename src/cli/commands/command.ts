import { existsSync, readFileSync } from 'node:fs';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { AdminApiError, type AdminClient, type CallOptions } from '../admin-client.js';
import { type CliIo, json } from '../output.js';
import type { CliSettings } from '../settings.js';

/** What every command's action gets: settings from the environment and a client for the server. */
export interface Run {
  json: boolean;
  settings: CliSettings;
  client: AdminClient;
  io: CliIo;
}

/** Wraps a command's action: builds the `Run`, and turns a failure into exit code 1. */
export type Act = <A extends unknown[]>(
  fn: (run: Run, ...args: A) => Promise<number | undefined>,
) => (...args: unknown[]) => Promise<void>;

/** Each file of `commands/` adds its command(s) to the program. */
export type RegisterCommand = (program: Command, act: Act) => void;

/**
 * Calls the admin API and prints its answer: the answer's JSON with `--json`, otherwise what `say`
 * makes of it for a person (a line, or lines). Resolves to the answer.
 */
export async function callAndPrint<T>(
  run: Run,
  method: 'GET' | 'POST' | 'DELETE',
  path: string,
  say: (body: T) => string | readonly string[],
  options?: CallOptions,
): Promise<T> {
  const { body } = await run.client.call<T>(method, path, options);
  if (run.json) run.io.out(json(body));
  else for (const line of [say(body)].flat()) run.io.out(line);
  return body;
}

export class UsageError extends Error {
  override name = 'UsageError';
}

/** `--subject '{"a":1}'` or `--subject @subject.json`. */
export function jsonOption(value: string, name: string): Record<string, unknown> {
  let text = value;
  if (value.startsWith('@')) {
    const file = value.slice(1);
    if (!existsSync(file)) throw new UsageError(`${name}: no file ${file}`);
    text = readFileSync(file, 'utf8');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${name}: not valid JSON (${(err as Error).message})`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new UsageError(`${name}: must be a JSON object`);
  return parsed as Record<string, unknown>;
}

export const positiveInt = (max: number) => (value: string) => {
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > max)
    throw new InvalidArgumentError(`a whole number from 1 to ${max}`);
  return Number(value);
};

export const NONCE = /^\d{1,16}$/;
export const onDuplicateOption = () =>
  new Option(
    '--on-duplicate <mode>',
    'when the holder already has a valid credential of the schema: allow issues another, ignore answers the existing one, revoke replaces it',
  )
    .choices(['allow', 'ignore', 'revoke'])
    .default('allow');

type Issue = { field: string; message: string };

/** An API error whose field names are rewritten as the command's flags (`flagOf`). */
export function withFlags(err: AdminApiError, flagOf: (field: string) => string): AdminApiError {
  const details = err.details as
    | { issues?: Issue[]; field?: string; claims?: Array<{ claim: string; message: string }> }
    | undefined;
  // 422 CLAIMS_INVALID names claims: each becomes `--subject <claim>`.
  if (details?.claims) {
    const issues = details.claims.map((c) => ({ field: `--subject ${c.claim}`, message: c.message }));
    const message =
      issues.length === 1
        ? `${issues[0]!.field}: ${issues[0]!.message}`
        : `${issues.length} claims do not fit the schema`;
    return new AdminApiError(err.status, err.code, message, { ...details, issues });
  }
  const issues = details?.issues?.map((i) => ({ ...i, field: flagOf(i.field) }));
  let message = err.message;
  const fields = [...(details?.issues ?? []).map((i) => i.field), ...(details?.field ? [details.field] : [])];
  for (const field of fields)
    if (message.startsWith(`${field}:`)) message = `${flagOf(field)}${message.slice(field.length)}`;
  return new AdminApiError(err.status, err.code, message, issues ? { ...details, issues } : err.details);
}
