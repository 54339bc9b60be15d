import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/config.js';
import { ConfigError } from '../../../src/config/env.js';
import { DEVELOPMENT_KEY_ENCRYPTION_KEY } from '../../../src/config/key-encryption-key.js';

// Production secrets must look random: these are what `openssl rand -base64 32` prints.
const SECRETS = {
  a: 'q8Zr1VfN4yT0c+Lk7wXb2HdM9sJe5uPg3RnA6oYiQ1E=',
  b: 'Jd3Wm9Rk0tYv6BzXq2Lf8NsH1cGp5eUa7iOw4KrT0nM=',
  c: 'Pn4Xs8Kq2Dv6Hb0Rz3Wf7Jm1Tc5Ly9Ge4Ua8Ni2Oh6E=',
  d: 'Fk7Bt1Mx5Qr9Zj3Vw6Cn0Hp4Ls8Ed2Yg7Ka1Ui5Ro9A=',
  e: 'Wc2Nh6Tr0Xk4Bm8Fq3Jz7Ls1Pd5Gv9Ye2Ha6Ko0Ui4Q=',
} as const;
const secret = (c: keyof typeof SECRETS) => SECRETS[c];
/** A random key, as `openssl rand -hex 32` gives. */
const KEK_HEX = '5f0c9e2a7b41d3386e1fa9c04d72b5e8193a6cf0e2d4b7185c3f9a60d1e7b24c';

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

// docs/configuration.md: defaults, validation with one line per problem naming the variable, production rules.
describe('config', () => {
  it('has the documented development defaults', () => {
    const { config, secrets } = loadConfig({}, '/srv/issuer');
    expect(config).toMatchObject({
      production: false,
      port: 3000,
      host: '127.0.0.1',
      publicOrigin: 'http://localhost:3000',
      database: { kind: 'sqlite', path: '/srv/issuer/data/issuer.db' },
      keysDir: '/srv/issuer/keys',
      schemasDir: '/srv/issuer/schemas',
      partnerId: undefined,
      serviceBaseUrl: undefined,
      statusList: { partitionSize: 131072, ttlSeconds: 300, bits: 1 },
      partnerInfoService: 'svc',
      iden3: { method: 'iden3', blockchain: 'privado', network: 'test' },
      rateLimits: { holder: 10000, admin: 1200, public: 6000 },
      rateLimitRedisPrefix: 'rl:',
    });
    expect(secrets).toEqual({
      apiKey: undefined,
      adminApiKey: undefined,
      adminApiKeys: [],
      databaseUrl: 'sqlite:./data/issuer.db',
      database: { kind: 'sqlite', path: '/srv/issuer/data/issuer.db' },
      keyEncryptionKey: undefined,
      // Outside production, unset: the development key, resolved here once.
      keyEncryption: { current: DEVELOPMENT_KEY_ENCRYPTION_KEY, given: false, previous: undefined },
      metricsToken: undefined,
      redisUrl: undefined,
    });
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

  // docs/several-issuers.md "The operator": a multi deployment's own variables; the issuer's are each tenant's.
  it('TENANCY=multi in production needs OPERATOR_API_KEY, not the variables of one issuer', () => {
    expect(problems({ NODE_ENV: 'production', TENANCY: 'multi' })).toEqual([
      'OPERATOR_API_KEY: required in production with TENANCY=multi',
    ]);
    const { config, secrets } = loadConfig(
      { NODE_ENV: 'production', TENANCY: 'multi', OPERATOR_API_KEY: secret('c') },
      '/srv/issuer',
    );
    expect(config.tenancy).toBe('multi');
    expect(secrets.operatorApiKey).toBe(secret('c'));
    expect(JSON.stringify(config)).not.toContain(secret('c'));
    expect(problems({ NODE_ENV: 'production', TENANCY: 'multi', OPERATOR_API_KEY: 'short' })).toEqual([
      expect.stringMatching(/^OPERATOR_API_KEY: .* in production$/),
    ]);
    expect(problems({ ...production, TENANCY: 'several' })).toEqual([
      'TENANCY: TENANCY must be single or multi',
    ]);
    expect(loadConfig(production, '/srv/issuer').config.tenancy).toBe('single');
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
    ['DATABASE_URL', 'postgres:db/issuer'],
    ['DATABASE_POOL_MAX', '0'],
    ['PARTNER_ID', 'not-a-uuid'],
    ['STATUS_LIST_PARTITION_SIZE', '100'],
    ['STATUS_LIST_PARTITION_SIZE', '0'],
    ['STATUS_LIST_BITS', '3'],
    ['STATUS_LIST_TTL_SECONDS', '-1'],
    ['RATE_LIMIT_HOLDER_PER_MIN', '1.5'],
    ['PARTNER_INFO_SERVICE', 'Bad Name'],
    ['SERVICE_V1_BASE_URL', 'not a url'],
    ['KEY_ENCRYPTION_KEY', 'too-short'],
    ['REDIS_URL', 'http://cache:6379'],
    ['RATE_LIMIT_REDIS_PREFIX', 'two words'],
    ['RATE_LIMIT_REDIS_PREFIX', 'x'.repeat(65)],
    ['UPLOAD_LEASE_MS', '10000'],
    ['OUTBOX_SWEEP_MS', '0'],
    ['RENEWAL_SWEEP_LEASE_MS', '999'],
    ['RENEWAL_FINISH_GRACE_DAYS', '-1'],
    ['RENEWAL_FINISH_GRACE_DAYS', '3651'],
  ])('%s=%s is rejected naming the variable', (name, value) => {
    const lines = problems({ [name]: value });
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.every((l) => l.startsWith(`${name}:`))).toBe(true);
  });

  it('the upload lease outlasts one upload attempt by default', () => {
    expect(loadConfig({}, '/srv/issuer').config).toMatchObject({
      uploadLeaseMs: 60_000,
      outboxSweepMs: 5000,
    });
    expect(loadConfig({ UPLOAD_TIMEOUT_MS: '90000' }, '/srv/issuer').config.uploadLeaseMs).toBe(91_000);
    expect(problems({ UPLOAD_TIMEOUT_MS: '2000', UPLOAD_LEASE_MS: '3000' })).toEqual([]);
  });

  it('the renewal sweep holds its lock 5 minutes unless RENEWAL_SWEEP_LEASE_MS says otherwise', () => {
    expect(loadConfig({}, '/srv/issuer').config.renewalSweepLeaseMs).toBe(300_000);
    expect(
      loadConfig({ RENEWAL_SWEEP_LEASE_MS: '4001', ADMIN_ISSUE_DEADLINE_MS: '2000' }, '/srv/issuer').config
        .renewalSweepLeaseMs,
    ).toBe(4001);
    // A deadline past half the default lease lengthens the default.
    expect(loadConfig({ ADMIN_ISSUE_DEADLINE_MS: '200000' }, '/srv/issuer').config.renewalSweepLeaseMs).toBe(
      401_000,
    );
  });

  it('the renewal sweep finishes renewals cut short up to 30 days after expiry unless RENEWAL_FINISH_GRACE_DAYS says otherwise', () => {
    expect(loadConfig({}, '/srv/issuer').config.renewalFinishGraceDays).toBe(30);
    expect(loadConfig({ RENEWAL_FINISH_GRACE_DAYS: '0' }, '/srv/issuer').config.renewalFinishGraceDays).toBe(
      0,
    );
    expect(loadConfig({ RENEWAL_FINISH_GRACE_DAYS: '90' }, '/srv/issuer').config.renewalFinishGraceDays).toBe(
      90,
    );
  });

  it.each([
    [{ RENEWAL_SWEEP_LEASE_MS: '30000' }],
    [{ RENEWAL_SWEEP_LEASE_MS: '4000', ADMIN_ISSUE_DEADLINE_MS: '2000' }],
    [{ RENEWAL_SWEEP_LEASE_MS: '300000', ADMIN_ISSUE_DEADLINE_MS: '150000' }],
  ])('a renewal sweep lease whose half does not outlast one renewal is refused: %o', (env) => {
    const lines = problems(env);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^RENEWAL_SWEEP_LEASE_MS: .*ADMIN_ISSUE_DEADLINE_MS/);
  });

  it('a renewal sweep lease whose half outlasts one renewal is accepted', () => {
    expect(problems({ RENEWAL_SWEEP_LEASE_MS: '30001' })).toEqual([]);
    expect(problems({ RENEWAL_SWEEP_LEASE_MS: '1000', ADMIN_ISSUE_DEADLINE_MS: '499' })).toEqual([]);
    // An invalid deadline is reported once, as itself.
    expect(problems({ RENEWAL_SWEEP_LEASE_MS: '1000', ADMIN_ISSUE_DEADLINE_MS: 'soon' })).toEqual([
      expect.stringMatching(/^ADMIN_ISSUE_DEADLINE_MS:/),
    ]);
  });

  it.each([
    ['sqlite:./x.db', '/srv/issuer/x.db'],
    ['sqlite:/var/lib/issuer.db', '/var/lib/issuer.db'],
    ['sqlite://./x.db', '/srv/issuer/x.db'],
    ['sqlite:///var/lib/issuer.db', '/var/lib/issuer.db'],
    ['sqlite::memory:', ':memory:'],
  ])('DATABASE_URL %s → %s', (url, path) => {
    expect(loadConfig({ DATABASE_URL: url }, '/srv/issuer').config.database).toEqual({
      kind: 'sqlite',
      path,
    });
  });

  it.each([
    ['postgres://issuer:pw@db:5432/issuer', 'postgres://issuer:***@db:5432/issuer'],
    ['postgresql://db/issuer', 'postgresql://db/issuer'],
  ])('DATABASE_URL %s selects PostgreSQL, its password kept off the config', (url, shown) => {
    const { config, secrets } = loadConfig({ DATABASE_URL: url, DATABASE_POOL_MAX: '4' }, '/srv/issuer');
    expect(config.database).toEqual({
      kind: 'postgres',
      url: shown,
      poolMax: 4,
      timeouts: { connectMs: 5000, queryMs: 10_000, acquireMs: 10_000 },
    });
    expect(secrets.databaseUrl).toBe(url);
    expect(JSON.stringify(config)).not.toContain(':pw@');
    expect(loadConfig({ DATABASE_URL: url }).config.database).toMatchObject({ poolMax: 10 });
  });

  it('DATABASE_*_TIMEOUT_MS bound the PostgreSQL waits; a bad value is one line naming it', () => {
    const env = {
      DATABASE_URL: 'postgres://db/issuer',
      DATABASE_CONNECT_TIMEOUT_MS: '800',
      DATABASE_QUERY_TIMEOUT_MS: '2500',
      DATABASE_ACQUIRE_TIMEOUT_MS: '3000',
    };
    expect(loadConfig(env).config.database).toMatchObject({
      timeouts: { connectMs: 800, queryMs: 2500, acquireMs: 3000 },
    });
    expect(() => loadConfig({ ...env, DATABASE_QUERY_TIMEOUT_MS: '0' })).toThrow(/DATABASE_QUERY_TIMEOUT_MS/);
    expect(() => loadConfig({ ...env, DATABASE_ACQUIRE_TIMEOUT_MS: 'soon' })).toThrow(
      /DATABASE_ACQUIRE_TIMEOUT_MS/,
    );
  });

  it('production on PostgreSQL needs KEY_ENCRYPTION_KEY, kept off the config', () => {
    const pgProduction = { ...production, DATABASE_URL: 'postgres://db/issuer' };
    expect(problems(pgProduction)).toEqual([
      expect.stringMatching(/^KEY_ENCRYPTION_KEY: required in production/),
    ]);
    const { config, secrets } = loadConfig({ ...pgProduction, KEY_ENCRYPTION_KEY: KEK_HEX });
    expect(secrets.keyEncryptionKey).toEqual(Buffer.from(KEK_HEX, 'hex'));
    expect(secrets.keyEncryption).toEqual({
      current: Buffer.from(KEK_HEX, 'hex'),
      given: true,
      previous: undefined,
    });
    // KEY_ENCRYPTION_KEY_PREVIOUS is resolved once too; a malformed one is kept as its problem
    // (only `keys reseal` and doctor use it), never refusing the server's start.
    const rotating = loadConfig({
      ...pgProduction,
      KEY_ENCRYPTION_KEY: KEK_HEX,
      KEY_ENCRYPTION_KEY_PREVIOUS: 'ab'.repeat(32),
    }).secrets.keyEncryption;
    expect(rotating.previous).toEqual(Buffer.alloc(32, 0xab));
    expect(
      loadConfig({ ...pgProduction, KEY_ENCRYPTION_KEY: KEK_HEX, KEY_ENCRYPTION_KEY_PREVIOUS: 'x' }).secrets
        .keyEncryption.previous,
    ).toMatch(/32 bytes/);
    expect(JSON.stringify(config)).not.toContain(KEK_HEX.slice(0, 16));
  });

  it.each([
    ['the public development key', DEVELOPMENT_KEY_ENCRYPTION_KEY.toString('hex')],
    ['all zeros', '00'.repeat(32)],
    ['one byte repeated', 'cd'.repeat(32)],
    ['two bytes repeated (base64)', Buffer.from('ab'.repeat(16)).toString('base64')],
  ])('production refuses a KEY_ENCRYPTION_KEY that protects nothing: %s', (_name, value) => {
    for (const database of ['postgres://db/issuer', 'sqlite:./data/issuer.db']) {
      const lines = problems({ ...production, DATABASE_URL: database, KEY_ENCRYPTION_KEY: value });
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^KEY_ENCRYPTION_KEY: .*random/);
    }
    // Development and tests may use any well-formed key.
    expect(problems({ KEY_ENCRYPTION_KEY: value })).toEqual([]);
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

  // Length alone let `aaaa…` and 34 spaces through.
  it.each([
    ['a run of one character', 'a'.repeat(40)],
    ['spaces', ' '.repeat(34)],
    ['a short repeated pattern', 'abcd'.repeat(10)],
    ['whitespace inside', `${SECRETS.a.slice(0, 20)} ${SECRETS.a.slice(20)}`],
    ['a control character', `${SECRETS.a}\u0001`],
    ['hex of 16 bytes with a long run', `${'0'.repeat(20)}9f3a4c7e1b2d`],
  ])('production refuses a low-entropy secret: %s', (_name, value) => {
    for (const name of ['API_KEY', 'ADMIN_API_KEY'] as const) {
      const lines = problems({ ...production, [name]: value });
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(new RegExp(`^${name}:`));
      expect(lines[0]).not.toContain(value);
    }
  });

  it.each([
    ['openssl rand -base64 32', 'Tz5Qm1Wc8Hr3Nf0Ky6Pb2Xd9Lg4Jv7Ss1Ea5Ru0Io3Ut='],
    ['openssl rand -hex 32', '5f0c9e2a7b41d3386e1fa9c04d72b5e8193a6cf0e2d4b7185c3f9a60d1e7b24c'],
    ['openssl rand -hex 16', 'c41e8f2a9d3b7065e1f4a8c2d9b06e37'],
    ['a base64url token', 'w3Ys-9Kd_Qp2Rt7Lm0Nx4Vb8Zc1Hf6Jg5TsEaUoIiP'],
  ])('production accepts a random secret: %s', (_name, value) => {
    expect(problems({ ...production, API_KEY: value })).toEqual([]);
  });

  describe('TRUST_PROXY', () => {
    const trust = (value: string, env: Record<string, string> = {}) =>
      loadConfig({ TRUST_PROXY: value, ...env }, '/srv').config.trustProxy;

    it.each([
      ['false', false],
      ['0', false],
      ['1', 1],
      ['2', 2],
      ['loopback', ['loopback']],
      ['10.0.0.0/8, 192.168.1.7', ['10.0.0.0/8', '192.168.1.7']],
      ['loopback,uniquelocal,linklocal', ['loopback', 'uniquelocal', 'linklocal']],
      ['::1/128,fd00::/8', ['::1/128', 'fd00::/8']],
    ])('%s → %j', (value, expected) => {
      expect(trust(value)).toEqual(expected);
      expect(trust(value, production)).toEqual(expected);
    });

    it('true is allowed in development only', () => {
      expect(trust('true')).toBe(true);
      const lines = problems({ ...production, TRUST_PROXY: 'true' });
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^TRUST_PROXY:/);
    });

    it.each(['6', '1000', '0005000'])(
      'a hop count of %s (more than the longest real chain) is refused in every environment',
      (value) => {
        for (const env of [{}, production]) {
          const lines = problems({ ...env, TRUST_PROXY: value });
          expect(lines).toHaveLength(1);
          expect(lines[0]).toMatch(/^TRUST_PROXY:/);
        }
      },
    );

    it('a hop count of 5 is the documented maximum', () => {
      expect(trust('5', production)).toBe(5);
    });

    it.each(['yes', '10.0.0.0/33', 'loopback,nonsense', '-1', '1.5', ''.padEnd(3, ',')])(
      '%j is one config line naming TRUST_PROXY, not a TypeError later',
      (value) => {
        const lines = problems({ TRUST_PROXY: value });
        expect(lines).toHaveLength(1);
        expect(lines[0]).toMatch(/^TRUST_PROXY:/);
      },
    );
  });

  it('development accepts any non-empty keys', () => {
    expect(problems({ API_KEY: 'test-key', ADMIN_API_KEY: 'test-key' })).toEqual([]);
  });

  // A malformed variable no longer hides the production rules behind it.
  it('production lists every problem in one run, one line per variable', () => {
    const lines = problems({
      NODE_ENV: 'production',
      PARTNER_ID: 'not-a-uuid',
      PORT: 'abc',
      SERVICE_V1_BASE_URL: 'http://sidecar:8080/v1',
    });
    expect(lines.map((l) => l.split(':')[0]).sort()).toEqual([
      'ADMIN_API_KEY',
      'API_KEY',
      'ISSUER_ORIGIN',
      'PARTNER_ID',
      'PORT',
      'SERVICE_V1_BASE_URL',
    ]);
  });

  it('ALLOW_INSECURE_UPSTREAM=1 lets production use an http SERVICE_V1_BASE_URL', () => {
    const env = { ...production, SERVICE_V1_BASE_URL: 'http://sidecar:8080/v1' };
    expect(problems(env).map((l) => l.split(':')[0])).toEqual(['SERVICE_V1_BASE_URL']);
    const { config } = loadConfig({ ...env, ALLOW_INSECURE_UPSTREAM: '1' }, '/srv/issuer');
    expect(config.insecureUpstream).toBe(true);
    expect(problems({ ...env, ALLOW_INSECURE_UPSTREAM: 'yes' })[0]).toMatch(/^ALLOW_INSECURE_UPSTREAM:/);
  });

  it('ADMIN_API_KEYS holds named keys beside ADMIN_API_KEY; problems name the entry, never the key', () => {
    const { secrets } = loadConfig(
      { ...production, ADMIN_API_KEYS: `ops:${secret('c')},ci-bot:${secret('d')}` },
      '/srv/issuer',
    );
    expect(secrets.adminApiKeys).toEqual([
      { name: 'ops', key: secret('c') },
      { name: 'ci-bot', key: secret('d') },
    ]);
    const { ADMIN_API_KEY: _, ...withoutSingle } = production;
    expect(problems({ ...withoutSingle, ADMIN_API_KEYS: `ops:${secret('c')}` })).toEqual([]);
    const bad = problems({ ...production, ADMIN_API_KEYS: `ops:short,no key here,admin:${secret('e')}` });
    expect(bad).toHaveLength(3);
    expect(bad.every((l) => l.startsWith('ADMIN_API_KEYS'))).toBe(true);
    expect(bad.join('\n')).not.toContain('short');
  });

  it('ADMIN_PORT and ADMIN_HOST configure a separate admin listener', () => {
    expect(loadConfig({}, '/srv/issuer').config.admin).toBeUndefined();
    expect(loadConfig({ ADMIN_PORT: '9100' }, '/srv/issuer').config.admin).toEqual({
      port: 9100,
      host: '127.0.0.1',
    });
    expect(problems({ ADMIN_PORT: 'x' })[0]).toMatch(/^ADMIN_PORT:/);
  });
});
