import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/config.js';
import { ConfigError } from '../../../src/config/env.js';

const secret = (c: string) => c.repeat(40);
const production = {
  NODE_ENV: 'production',
  ISSUER_ORIGIN: 'https://issuer.example.com',
  API_KEY: secret('a'),
  ADMIN_API_KEY: secret('b'),
  PARTNER_ID: '6f1c3a52-8d0e-4c55-9a57-2f6f0e1b9c11',
  SERVICE_V1_BASE_URL: 'https://service.example.com/v1',
};

function problems(env: Record<string, string>): string[] {
  try {
    loadConfig(env, '/srv/issuer');
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  return [];
}

// DESIGN §7: defaults, validation with one line per problem naming the variable, production rules.
describe('config', () => {
  it('has the documented development defaults', () => {
    const { config, secrets } = loadConfig({}, '/srv/issuer');
    expect(config).toMatchObject({
      production: false,
      port: 3000,
      host: '127.0.0.1',
      issuerOrigin: 'http://localhost:3000',
      database: { kind: 'sqlite', path: '/srv/issuer/data/issuer.db' },
      keysDir: '/srv/issuer/keys',
      schemasDir: '/srv/issuer/schemas',
      partnerId: undefined,
      serviceBaseUrl: undefined,
      statusList: { partitionSize: 131072, ttlSeconds: 300, bits: 1 },
      partnerInfoService: 'svc',
      iden3: { method: 'iden3', blockchain: 'privado', network: 'test' },
      rateLimits: { holder: 10000, admin: 1200, public: 6000 },
    });
    expect(secrets).toEqual({ apiKey: undefined, adminApiKey: undefined });
  });

  it('keeps secrets off the config object', () => {
    const { config } = loadConfig(production, '/srv');
    expect(JSON.stringify(config)).not.toContain(secret('a'));
    expect(JSON.stringify(config)).not.toContain(secret('b'));
  });

  it('accepts a complete production environment', () => {
    expect(problems(production)).toEqual([]);
  });

  it('production refuses every dev default, one line per variable', () => {
    const lines = problems({ NODE_ENV: 'production' });
    for (const name of ['ISSUER_ORIGIN', 'API_KEY', 'ADMIN_API_KEY', 'PARTNER_ID', 'SERVICE_V1_BASE_URL']) {
      expect(lines.filter((l) => l.startsWith(`${name}:`))).toHaveLength(1);
    }
  });

  it('production refuses http origins', () => {
    expect(problems({ ...production, ISSUER_ORIGIN: 'http://issuer.example.com' })).toEqual([
      'ISSUER_ORIGIN: must be https in production',
    ]);
    expect(problems({ ...production, SERVICE_V1_BASE_URL: 'http://svc/v1' })[0]).toMatch(
      /^SERVICE_V1_BASE_URL:/,
    );
  });

  it.each([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['ISSUER_ORIGIN', 'https://issuer.example.com/'],
    ['ISSUER_ORIGIN', 'issuer.example.com'],
    ['DATABASE_URL', 'mysql://x'],
    ['DATABASE_URL', 'postgres://db/issuer'],
    ['PARTNER_ID', 'not-a-uuid'],
    ['STATUS_LIST_PARTITION_SIZE', '100'],
    ['STATUS_LIST_PARTITION_SIZE', '0'],
    ['STATUS_LIST_BITS', '3'],
    ['STATUS_LIST_TTL_SECONDS', '-1'],
    ['RATE_LIMIT_HOLDER_PER_MIN', '1.5'],
    ['PARTNER_INFO_SERVICE', 'Bad Name'],
    ['SERVICE_V1_BASE_URL', 'not a url'],
  ])('%s=%s is rejected naming the variable', (name, value) => {
    const lines = problems({ [name]: value });
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.every((l) => l.startsWith(`${name}:`))).toBe(true);
  });

  it.each([
    ['sqlite:./x.db', '/srv/issuer/x.db'],
    ['sqlite:/var/lib/issuer.db', '/var/lib/issuer.db'],
    ['sqlite://./x.db', '/srv/issuer/x.db'],
    ['sqlite:///var/lib/issuer.db', '/var/lib/issuer.db'],
    ['sqlite::memory:', ':memory:'],
  ])('DATABASE_URL %s → %s', (url, path) => {
    expect(loadConfig({ DATABASE_URL: url }, '/srv/issuer').config.database.path).toBe(path);
  });

  it('reports every problem at once', () => {
    expect(problems({ PORT: 'x', STATUS_LIST_BITS: '9', PARTNER_ID: 'y' })).toHaveLength(3);
  });

  it('accepts partition sizes that are multiples of 8 and 0 to turn a rate limit off', () => {
    const { config } = loadConfig({
      STATUS_LIST_PARTITION_SIZE: '8',
      RATE_LIMIT_ADMIN_PER_MIN: '0',
      STATUS_LIST_BITS: '2',
    });
    expect(config.statusList).toMatchObject({ partitionSize: 8, bits: 2 });
    expect(config.rateLimits.admin).toBe(0);
  });

  it('production requires strong, distinct keys and never prints a secret in a problem line', () => {
    const lines = problems({ ...production, API_KEY: 'tooshort-secret' });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^API_KEY:/);
    expect(lines.join('\n')).not.toContain('tooshort-secret');
    expect(problems({ ...production, ADMIN_API_KEY: production.API_KEY })[0]).toMatch(/^ADMIN_API_KEY:/);
  });

  it('development accepts any non-empty keys', () => {
    expect(problems({ API_KEY: 'test-key', ADMIN_API_KEY: 'test-key' })).toEqual([]);
  });
});
