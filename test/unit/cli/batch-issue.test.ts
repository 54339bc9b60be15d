import { describe, expect, it } from 'vitest';
import { parseBatchCsv } from '../../../src/cli/batch-csv.js';
import { readResultFile, rowIdempotencyKey } from '../../../src/cli/batch-results.js';

const HEADER = 'email,expiration,credentialSubject.tier,credentialSubject.memberNumber';
const defaults = { schema: 'membership-v1', vct: 'urn:vct:m', onDuplicate: 'allow' as const };

describe('batch CSV (admin batch-issue)', () => {
  it('turns rows into issue-vc bodies, options standing in for missing columns', () => {
    const { rows, problems } = parseBatchCsv(
      `${HEADER}\na@example.org,2099-01-01T00:00:00Z,gold,7\n`,
      defaults,
    );
    expect(problems).toEqual([]);
    expect(rows).toEqual([
      {
        line: 2,
        email: 'a@example.org',
        body: {
          userId: 'a@example.org',
          schemaId: 'membership-v1',
          vct: 'urn:vct:m',
          expiration: '2099-01-01T00:00:00Z',
          credentialSubject: { tier: 'gold', memberNumber: 7 },
          onDuplicate: 'allow',
        },
      },
    ]);
    const withColumns = parseBatchCsv(
      'email,schemaId,vct,credentialSubject.tier\n"b@example.org","other-v1",urn:vct:o,basic\n',
      { expiration: '2099-01-01', onDuplicate: 'revoke' },
    );
    expect(withColumns.rows[0]!.body).toMatchObject({
      schemaId: 'other-v1',
      vct: 'urn:vct:o',
      expiration: '2099-01-01',
      onDuplicate: 'revoke',
    });
  });

  it('reports every bad row with its line, and header problems on line 1', () => {
    const text = [
      HEADER,
      'ok@example.org,2099-01-01,gold,1',
      'noreply@example.org,2099-01-01,gold,2',
      'not-an-email,2001-01-01,gold,3',
      ',,,',
      'short@example.org,2099-01-01',
    ].join('\n');
    const { rows, problems } = parseBatchCsv(text, defaults);
    expect(rows.map((r) => r.line)).toEqual([2]);
    expect(problems.map((p) => [p.line, p.field])).toEqual([
      [3, 'email'],
      [4, 'email'],
      [4, 'expiration'],
      [5, 'email'],
      [5, 'credentialSubject'],
      [6, 'row'],
    ]);
    const header = parseBatchCsv('mail,credentialSubject.cnf,credentialSubject.tier\n', {
      onDuplicate: 'allow',
    });
    expect(header.problems.map((p) => p.field).sort()).toEqual(
      ['credentialSubject.cnf', 'email', 'mail', 'schemaId'].sort(),
    );
  });

  it('a user column takes the claims from the claims provider; the expiration may be left to the schema', () => {
    const { rows, problems } = parseBatchCsv(
      'email,user\na@example.org,demo-user-1\nb@example.org,\n',
      defaults,
    );
    expect(rows.map((r) => r.body)).toEqual([
      {
        userId: 'a@example.org',
        schemaId: 'membership-v1',
        vct: 'urn:vct:m',
        expiration: '',
        claimsUserId: 'demo-user-1',
        onDuplicate: 'allow',
      },
    ]);
    expect(problems.map((p) => [p.line, p.field])).toEqual([[3, 'user']]);
    const both = parseBatchCsv('email,user,credentialSubject.tier\na@example.org,u,gold\n', defaults);
    expect(both.problems.map((p) => [p.line, p.field])).toEqual([[1, 'user']]);
  });

  it('result files: last report per row wins; a truncated last line is ignored', () => {
    const text = [
      'row,email,credentialId,revocationNonce,status,error',
      '2,a@example.org,,,failed,502 UPSTREAM_UNAVAILABLE: down',
      '2,a@example.org,c-1,11,issued,',
      '3,b@example.org,c-2,12,pend',
    ].join('\n');
    const results = readResultFile(text);
    expect([...results.values()]).toEqual([
      {
        row: 2,
        email: 'a@example.org',
        credentialId: 'c-1',
        revocationNonce: '11',
        status: 'issued',
        error: '',
      },
    ]);
    expect(() => readResultFile('row,email\n')).toThrow();
  });

  it('derives one stable Idempotency-Key per input file, result file and row', () => {
    const a = rowIdempotencyKey('in.csv', 'out.csv', 2);
    expect(a).toMatch(/^batch-[0-9a-f]{64}$/);
    expect(rowIdempotencyKey('in.csv', 'out.csv', 2)).toBe(a);
    expect(rowIdempotencyKey('in.csv', 'out.csv', 3)).not.toBe(a);
    expect(rowIdempotencyKey('in.csv', 'other.csv', 2)).not.toBe(a);
  });
});
