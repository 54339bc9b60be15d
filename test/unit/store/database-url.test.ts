import { describe, expect, it } from 'vitest';
import { redactDatabaseUrl } from '../../../src/store/database-url.js';

// A DATABASE_URL is shown (doctor, CLI, logs) with every password masked, wherever libpq reads one.
describe('redactDatabaseUrl', () => {
  it.each([
    ['postgres://app:s3cret@db:5432/issuer', 'postgres://app:***@db:5432/issuer'],
    [
      'postgres://db/issuer?password=s3cret&sslmode=require',
      'postgres://db/issuer?password=***&sslmode=require',
    ],
    ['postgres://db/issuer?PASSWORD=s3cret', 'postgres://db/issuer?PASSWORD=***'],
    ['sqlite:./data/issuer.db', 'sqlite:./data/issuer.db'],
  ])('%s', (url, shown) => {
    expect(redactDatabaseUrl(url)).toBe(shown);
    expect(redactDatabaseUrl(url)).not.toContain('s3cret');
  });
});
