import { createHash } from 'node:crypto';
import pino, { type DestinationStream } from 'pino';
import type { LogLevel } from '../config/config.js';
import type { Logger } from '../model.js';
import { currentRequestId } from '../request-context.js';

// Members of a JWK that are private (RFC 7518 §6.2.2, §6.3.2, §6.4.1).
const PRIVATE_JWK_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k'];
// Envelope ciphertext fields (docs/security.md), tokens, keys, claim values.
const SECRET_FIELDS = [
  ...PRIVATE_JWK_MEMBERS,
  'data',
  'iv',
  'authTag',
  'encryptedKey',
  'token',
  'jwt',
  'partnerJwt',
  'apiKey',
  'adminApiKey',
  'metricsToken',
  'databaseUrl',
  'keyEncryptionKey',
  'redisUrl',
  'password',
  'secret',
  'claims',
  'credentialSubject',
  'credential',
  'privateKey',
];
const SECRET_HEADERS = [
  'authorization',
  'x-api-key',
  'x-admin-api-key',
  'cookie',
  'set-cookie',
  'x-partner-auth',
];

/** A field is redacted at the top of a line and up to two objects deep. */
const deep = (field: string): string[] => {
  const key = /^[A-Za-z_$][\w$]*$/.test(field) ? field : `["${field}"]`;
  const dot = key.startsWith('[') ? '' : '.';
  return [key, `*${dot}${key}`, `*.*${dot}${key}`];
};

/** Every path pino's `redact` censors (exported for the tests that prove it). */
export const REDACT_PATHS = [
  ...SECRET_FIELDS.flatMap(deep),
  ...SECRET_HEADERS.flatMap((h) => [`req.headers["${h}"]`, `res.headers["${h}"]`, `headers["${h}"]`]),
  ...deep('email'),
];

/** Holder emails are logged as a short hash: lines about one holder can be matched, not read. */
export function emailHash(email: string): string {
  return `sha256:${createHash('sha256').update(email.trim().toLowerCase(), 'utf8').digest('hex').slice(0, 12)}`;
}

function censor(value: unknown, path: string[]): unknown {
  if (path[path.length - 1] === 'email' && typeof value === 'string') return emailHash(value);
  return '[redacted]';
}

/** ISO time and the level's name: the same on every line the process writes. */
const LINE_FORMAT = {
  timestamp: pino.stdTimeFunctions.isoTime,
  formatters: { level: (label: string) => ({ level: label }) },
} satisfies pino.LoggerOptions;

export interface LoggerOptions {
  level: LogLevel;
  format: 'json' | 'pretty';
}

/**
 * The process's one logger (LOG_LEVEL, LOG_FORMAT). `destination` is for tests (a capturing
 * stream); `pretty` runs pino-pretty in pino's worker thread, a runtime dependency.
 */
export function createLogger(options: LoggerOptions, destination?: DestinationStream): Logger {
  const config: pino.LoggerOptions = {
    level: options.level,
    base: { service: 'issuer-kit' },
    redact: { paths: REDACT_PATHS, censor },
    // Lines written while serving a request carry its id, however deep the code that writes them.
    mixin: (_object, _level, logger) => {
      const reqId = currentRequestId();
      if (reqId !== undefined && (logger as Logger).bindings().reqId !== undefined) return {};
      return reqId === undefined ? {} : { reqId };
    },
    ...LINE_FORMAT,
  };
  if (destination) return pino(config, destination);
  if (options.format === 'pretty') {
    return pino(config, pino.transport({ target: 'pino-pretty', options: { colorize: true } }));
  }
  return pino(config);
}

/**
 * The logger of the one line per HTTP request: `log`'s stream, level and bindings, without the
 * redaction pass and the mixin. Only for lines whose fields are picked one by one and cannot carry
 * a secret (method, route pattern, status, time, request id): redacting ~100 paths cost more CPU
 * per request than writing the line. Everything else logs through `log`.
 */
export function requestLineLogger(log: Logger): Logger {
  const stream = (log as unknown as Record<symbol, DestinationStream>)[pino.symbols.streamSym];
  return pino(
    {
      level: log.level,
      base: log.bindings(),
      ...LINE_FORMAT,
    },
    stream,
  );
}

/** A logger that writes nothing (tests, scripts). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
