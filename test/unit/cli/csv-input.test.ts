import { describe, expect, it } from 'vitest';
import {
  buildSubject,
  decodeCell,
  InputFileError,
  readCsv,
  stringCell,
  subjectColumns,
} from '../../../src/cli/csv-input.js';

describe('CSV cells (admin CLI)', () => {
  it('are JSON, and a cell that is not JSON is the plain string; empty is absent', () => {
    expect(decodeCell('"gold"')).toBe('gold');
    expect(decodeCell('gold')).toBe('gold');
    expect(decodeCell('1042')).toBe(1042);
    expect(decodeCell('"1042"')).toBe('1042');
    expect(decodeCell('true')).toBe(true);
    expect(decodeCell('null')).toBeNull();
    expect(decodeCell('{"a":[1,2]}')).toEqual({ a: [1, 2] });
    expect(decodeCell('2021-04-12')).toBe('2021-04-12');
    expect(decodeCell('{not json')).toBe('{not json');
    expect(decodeCell('')).toBeUndefined();
    expect(decodeCell('  ')).toBeUndefined();
  });

  it('string cells unquote JSON strings and keep anything else as written', () => {
    expect(stringCell('"a@example.org"')).toBe('a@example.org');
    expect(stringCell('a@example.org')).toBe('a@example.org');
    expect(stringCell('2030')).toBe('2030');
    expect(stringCell('')).toBeUndefined();
  });

  it('reads records with the line each starts on, across blank lines, CRLF and multi-line cells', () => {
    const text =
      '\uFEFFemail,credentialSubject.note\r\na@x.org,one\r\n\r\nb@x.org,"two\nlines"\nc@x.org,three';
    const { header, records } = readCsv(text);
    expect(header).toEqual(['email', 'credentialSubject.note']);
    expect(records).toEqual([
      { line: 2, cells: ['a@x.org', 'one'] },
      { line: 4, cells: ['b@x.org', 'two\nlines'] },
      { line: 6, cells: ['c@x.org', 'three'] },
    ]);
  });

  it('a malformed file is an InputFileError with a line', () => {
    expect(() => readCsv('a,b\n1,"open\n')).toThrow(InputFileError);
    expect(() => readCsv('')).toThrow(InputFileError);
  });

  it('claim columns build nested subjects and refuse reserved, duplicate and clashing names', () => {
    const header = [
      'email',
      'credentialSubject.name',
      'credentialSubject.address.city',
      'credentialSubject.address.zip',
    ];
    const { columns, problems } = subjectColumns(header);
    expect(problems).toEqual([]);
    expect(buildSubject(['x', '"Ann"', 'Delft', '2611'], columns)).toEqual({
      name: 'Ann',
      address: { city: 'Delft', zip: 2611 },
    });
    expect(buildSubject(['x', 'Ann', '', ''], columns)).toEqual({ name: 'Ann' });
    const bad = subjectColumns([
      'credentialSubject.sub',
      'credentialSubject.a',
      'credentialSubject.a',
      'credentialSubject.b',
      'credentialSubject.b.c',
      'credentialSubject.',
    ]);
    expect(bad.problems.map((p) => [p.line, p.field])).toEqual([
      [1, 'credentialSubject.sub'],
      [1, 'credentialSubject.'],
      [1, 'credentialSubject.a'],
      [1, 'credentialSubject.b'],
    ]);
    expect(subjectColumns(['email']).problems.map((p) => p.field)).toEqual(['header']);
  });
});
