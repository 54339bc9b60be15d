import { readFileSync } from 'node:fs';
import { parseEnv } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { parseBatchCsv } from '../../../src/cli/batch-csv.js';
import { readClaimsFile } from '../../../src/cli/claims-import.js';
import { loadConfig } from '../../../src/config/config.js';
import { ConfigError, EnvSchema } from '../../../src/config/env.js';

// The files under examples/ a newcomer copies: they must parse, and production.env must name
// everything production requires while none of its placeholders passes for a real value.

const problemsOf = (env: Record<string, string>): string[] => {
  try {
    loadConfig(env);
    return [];
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
};
const variableOf = (problem: string) => problem.slice(0, problem.indexOf(':'));

describe('examples/production.env', () => {
  const text = readFileSync('examples/production.env', 'utf8');
  const set = parseEnv(text) as Record<string, string>;
  // Set or shown commented out (`# NAME=`).
  const named = new Set([...text.matchAll(/^#? ?([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1]!));

  it('names every variable production requires, on SQLite and on PostgreSQL', () => {
    for (const DATABASE_URL of ['sqlite:./data/production.db', 'postgres://issuer@127.0.0.1:5432/issuer']) {
      const required = problemsOf({ NODE_ENV: 'production', DATABASE_URL })
        .filter((p) => /required/.test(p))
        .map(variableOf);
      expect(required.length).toBeGreaterThan(3);
      for (const name of required) expect(named, name).toContain(name);
    }
  });

  it('names only variables the server reads', () => {
    const known = new Set(Object.keys(EnvSchema.shape));
    expect([...named].filter((name) => !known.has(name))).toEqual([]);
  });

  it('is refused as it stands: every placeholder is named', () => {
    expect(set.NODE_ENV).toBe('production');
    const refused = new Set(problemsOf(set).map(variableOf));
    for (const [name, value] of Object.entries(set))
      if (value.includes('<')) expect(refused, name).toContain(name);
  });

  it('with the placeholders filled in, it is a configuration production starts with', () => {
    const filled: Record<string, string> = {
      ...set,
      ISSUER_ORIGIN: 'https://issuer.example.com',
      API_KEY: 'q8Zr1VfN4yT0c+Lk7wXb2HdM9sJe5uPg3RnA6oYiQ1E=',
      ADMIN_API_KEY: 'Jd3Wm9Rk0tYv6BzXq2Lf8NsH1cGp5eUa7iOw4KrT0nM=',
      METRICS_TOKEN: 'Xv2Lq8Nc5Tw0Rb7Yk3Hs9Jd1Fm6Pz4Ga8Ue2Io5Wr7K=',
      PARTNER_ID: '6f1c3a52-8d0e-4c55-9a57-2f6f0e1b9c11',
      SERVICE_V1_BASE_URL: 'https://service.example.com/v1',
    };
    expect(Object.values(filled).filter((v) => v.includes('<'))).toEqual([]);
    expect(problemsOf(filled)).toEqual([]);
  });
});

// docs/configuration.md `OID4VCI`: off in production; both templates show the line that opens it.
describe.each(['examples/production.env', 'examples/compose.env'])('%s and the OpenID4VCI door', (file) => {
  it('shows OID4VCI=on commented out, leaving the production default (off)', () => {
    const text = readFileSync(file, 'utf8');
    expect(text).toMatch(/^# OID4VCI=on$/m);
    expect((parseEnv(text) as Record<string, string>).OID4VCI).toBeUndefined();
  });
});

describe('examples/compose.env', () => {
  const text = readFileSync('examples/compose.env', 'utf8');
  const set = parseEnv(text) as Record<string, string>;
  const named = new Set([...text.matchAll(/^#? ?([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1]!));
  // What compose.yaml's issuer services set themselves, read from the file (with a password
  // exported, as its header says); the schemas folder is the checkout's, not the image's.
  const fromCompose = { ...issuerEnvironment(), SCHEMAS_DIR: './schemas' };

  it('names only variables the server reads', () => {
    const known = new Set(Object.keys(EnvSchema.shape));
    expect([...named].filter((name) => !known.has(name))).toEqual([]);
  });

  it('is refused as it stands: every placeholder is named', () => {
    const refused = new Set(problemsOf({ ...set, ...fromCompose }).map(variableOf));
    for (const [name, value] of Object.entries(set))
      if (value.includes('<')) expect(refused, name).toContain(name);
  });

  it('with the placeholders filled in, the compose issuers start with it (PostgreSQL, Redis)', () => {
    const filled: Record<string, string> = {
      ...set,
      ...fromCompose,
      ISSUER_ORIGIN: 'https://issuer.example.com',
      API_KEY: 'q8Zr1VfN4yT0c+Lk7wXb2HdM9sJe5uPg3RnA6oYiQ1E=',
      ADMIN_API_KEY: 'Jd3Wm9Rk0tYv6BzXq2Lf8NsH1cGp5eUa7iOw4KrT0nM=',
      METRICS_TOKEN: 'Xv2Lq8Nc5Tw0Rb7Yk3Hs9Jd1Fm6Pz4Ga8Ue2Io5Wr7K=',
      KEY_ENCRYPTION_KEY: '1r55W5rWXmTWZg93rs19DteZA7s0bVxU6JFf/5Mv138=',
      PARTNER_ID: '6f1c3a52-8d0e-4c55-9a57-2f6f0e1b9c11',
      SERVICE_V1_BASE_URL: 'https://service.example.com/v1',
    };
    expect(Object.values(filled).filter((v) => v.includes('<'))).toEqual([]);
    expect(problemsOf(filled)).toEqual([]);
  });
});

describe('examples/*.csv', () => {
  it('claims-import.csv reads without a problem, every cell where the schema expects it', () => {
    const { records, problems } = readClaimsFile('examples/claims-import.csv', undefined);
    expect(problems).toEqual([]);
    expect(records.map((r) => r.userId)).toEqual(['sample-user-1', 'sample-user-2', 'sample-user-3']);
    expect(records[0]).toMatchObject({
      schemaId: 'membership-v1',
      expiresAt: '2030-12-31T00:00:00Z',
      claims: { givenName: 'Chloé', tier: 'platinum', memberNumber: 3107 },
    });
    expect(records[1]!.expiresAt).toBeUndefined();
    expect(records[1]!.claims).not.toHaveProperty('email');
    expect(records[2]!.claims.givenName).toBe('Émile "Mil"');
  });

  it('batch-issue.csv reads without a problem', () => {
    const { rows, problems } = parseBatchCsv(readFileSync('examples/batch-issue.csv', 'utf8'), {
      onDuplicate: 'allow',
    });
    expect(problems).toEqual([]);
    expect(rows.map((r) => r.email)).toEqual(['chloe.dubois@example.com', 'daan.jansen@example.com']);
    expect(rows[0]!.body.credentialSubject).toMatchObject({ familyName: 'Dubois', memberNumber: 3107 });
  });

  it('batch-issue-users.csv reads without a problem: a user column, the schema from --schema', () => {
    const { rows, problems } = parseBatchCsv(readFileSync('examples/batch-issue-users.csv', 'utf8'), {
      schema: 'membership-v1',
      onDuplicate: 'allow',
    });
    expect(problems).toEqual([]);
    expect(rows.map((r) => [r.email, r.body.claimsUserId])).toEqual([
      ['alice.martin@example.com', 'demo-user-1'],
      ['bram.devries@example.com', 'demo-user-2'],
    ]);
  });
});

interface ComposeService {
  image?: string;
  profiles?: string[];
  environment?: Record<string, string>;
  env_file?: string;
  read_only?: boolean;
  init?: boolean;
  ports?: string[];
  volumes?: string[];
  healthcheck?: { test: unknown };
  depends_on?: Record<string, { condition: string }>;
  command?: string[];
}

/** compose.yaml as Compose reads it: `${VAR:?…}` and `${VAR:-default}` interpolated, `<<` merged. */
function composeFile(vars: Record<string, string> = { POSTGRES_PASSWORD: 'Hq7Lm2Xw9Rt4Kb8Nz3Vs' }) {
  const text = readFileSync('compose.yaml', 'utf8').replace(
    /\$\{([A-Z][A-Z0-9_]*)(?::([?-])([^}]*))?\}/g,
    (_m, name: string, kind: string | undefined, rest: string) => {
      const value = vars[name];
      if (value !== undefined) return value;
      if (kind === '-') return rest;
      throw new Error(`compose.yaml needs ${name}: ${rest}`);
    },
  );
  return parseYaml(text, { merge: true }) as {
    services: Record<string, ComposeService>;
    volumes: Record<string, unknown>;
  };
}

function issuerEnvironment(): Record<string, string> {
  return composeFile().services['issuer-1']!.environment!;
}

// docs/deployment.md "Compose": the stack the compose file describes, checked by parsing it (no
// compose tool runs here).
describe('compose.yaml', () => {
  const { services, volumes } = composeFile();

  it('names its images and host ports by variables, defaulting to the official images and 3001, 3002, 4000', () => {
    expect(services['issuer-1']?.image).toBe('issuer-kit:latest');
    expect(services.postgres?.image).toBe('postgres:16-bookworm');
    expect(services.redis?.image).toBe('redis:7-bookworm');
    expect(services['issuer-1']?.ports).toEqual(['127.0.0.1:3001:3000']);
    const mine = composeFile({
      POSTGRES_PASSWORD: 'x',
      ISSUER_IMAGE: 'registry.example/issuer-kit:1',
      POSTGRES_IMAGE: 'registry.example/postgres:16',
      REDIS_IMAGE: 'registry.example/redis:7',
      ISSUER_1_HOST_PORT: '8001',
      ISSUER_2_HOST_PORT: '8002',
      EMULATOR_HOST_PORT: '8004',
    }).services;
    expect(mine['issuer-2']?.image).toBe('registry.example/issuer-kit:1');
    expect(mine.emulator?.image).toBe('registry.example/issuer-kit:1');
    expect(mine.postgres?.image).toBe('registry.example/postgres:16');
    expect(mine.redis?.image).toBe('registry.example/redis:7');
    expect([mine['issuer-1'], mine['issuer-2'], mine.emulator].map((s) => s?.ports?.[0])).toEqual([
      '127.0.0.1:8001:3000',
      '127.0.0.1:8002:3000',
      '127.0.0.1:8004:4000',
    ]);
  });

  it('refuses to start without POSTGRES_PASSWORD, as its header says', () => {
    expect(() => composeFile({})).toThrow(/POSTGRES_PASSWORD/);
  });

  it('two issuer instances, each on its own host port, read-only, with an init, sharing the keys volume', () => {
    const issuers = ['issuer-1', 'issuer-2'].map((name) => services[name]!);
    const hostPorts = issuers.map((s) => s.ports?.[0]?.split(':').slice(0, -1).join(':'));
    expect(new Set(hostPorts).size).toBe(2);
    for (const issuer of issuers) {
      expect(issuer).toMatchObject({ read_only: true, init: true, env_file: 'compose.env' });
      expect(issuer.volumes).toContain('keys:/var/lib/issuer-kit/keys');
      // The image ships no schema: the checkout's schemas/ is mounted, read-only, at SCHEMAS_DIR.
      expect(issuer.volumes).toContain('./schemas:/app/schemas:ro');
      expect(issuer.environment?.SCHEMAS_DIR).toBe('/app/schemas');
      expect(issuer.environment).toMatchObject({
        NODE_ENV: 'production',
        KEYS_DIR: '/var/lib/issuer-kit/keys',
      });
      expect(issuer.environment?.DATABASE_URL).toMatch(/^postgres:\/\/issuer:[^@]+@postgres:5432\/issuer$/);
      expect(issuer.depends_on).toMatchObject({
        postgres: { condition: 'service_healthy' },
        redis: { condition: 'service_healthy' },
      });
    }
    expect(services['issuer-2']!.depends_on).toMatchObject({ 'issuer-1': { condition: 'service_healthy' } });
    expect(Object.keys(volumes)).toContain('keys');
  });

  it('PostgreSQL, Redis and the issuers have healthchecks; the emulator runs only in the development profile', () => {
    expect(services.postgres?.healthcheck?.test).toBeDefined();
    expect(services.redis?.healthcheck?.test).toBeDefined();
    // The issuers' own, in the compose file: an image podman built in OCI format has no HEALTHCHECK.
    for (const name of ['issuer-1', 'issuer-2']) {
      const test = services[name]?.healthcheck?.test as string[];
      expect(test[0], name).toBe('CMD-SHELL');
      expect(test[1], name).toMatch(
        /fetch\('http:\/\/127\.0\.0\.1:'\+\(process\.env\.PORT\|\|3000\)\+'\/healthz'\)/,
      );
    }
    expect(services.emulator).toMatchObject({ profiles: ['development'] });
    for (const [name, service] of Object.entries(services))
      if (name !== 'emulator') expect(service.profiles, name).toBeUndefined();
  });

  it('the issuers set only variables the server reads', () => {
    const known = new Set(Object.keys(EnvSchema.shape));
    expect(Object.keys(issuerEnvironment()).filter((name) => !known.has(name))).toEqual([]);
  });
});
