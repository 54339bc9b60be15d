import { readFileSync } from 'node:fs';
import { isDeepStrictEqual } from 'node:util';
import { apiCompare } from 'api-smart-diff';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  breakingChanges,
  contractDocument,
  major,
  SNAPSHOT_FILE,
  UPDATE_COMMAND,
  unreleasedHasBreakingEntry,
} from '../../scripts/openapi-contract.js';

// docs/operations.md "API contract and docs page": the committed snapshot of /openapi.json only
// grows, unless CHANGELOG.md says "Breaking" and the major version rises.

type Doc = Record<string, any>;
const clone = (doc: Doc): Doc => JSON.parse(JSON.stringify(doc)) as Doc;

describe('the OpenAPI contract snapshot', () => {
  let current: Doc;
  let snapshot: Doc;
  beforeAll(async () => {
    current = await contractDocument();
    snapshot = JSON.parse(readFileSync(SNAPSHOT_FILE, 'utf8')) as Doc;
  });

  it('has no breaking change unless CHANGELOG.md has a "Breaking" entry and the major version rose', () => {
    if (isDeepStrictEqual(current, snapshot)) return;
    const breaking = breakingChanges(snapshot, current);
    if (breaking.length === 0) return;
    const version = JSON.parse(readFileSync('package.json', 'utf8')).version as string;
    const allowed =
      unreleasedHasBreakingEntry(readFileSync('CHANGELOG.md', 'utf8')) &&
      major(version) > major(String(snapshot.info.version));
    expect(
      allowed,
      `breaking changes to the API (${SNAPSHOT_FILE} → now):\n${breaking
        .map((c) => `  ${c.path}: ${c.description}`)
        .join(
          '\n',
        )}\nRestore them, or: add a "Breaking" entry under "## Unreleased" in CHANGELOG.md saying what ` +
        `breaks and how to upgrade, raise the major version in package.json (now ${version}, snapshot ` +
        `${String(snapshot.info.version)}), then run \`${UPDATE_COMMAND}\` and commit ${SNAPSHOT_FILE}.`,
    ).toBe(true);
  });

  it(`is the document of the route table as it is now (an additive change: \`${UPDATE_COMMAND}\`)`, () => {
    if (isDeepStrictEqual(current, snapshot)) return;
    const { diffs } = apiCompare(snapshot, current);
    const listed = diffs
      .slice(0, 30)
      .map((d) => `  ${d.type} ${d.action} ${d.path.join('/')}`)
      .join('\n');
    expect.fail(
      `/openapi.json differs from ${SNAPSHOT_FILE}:\n${listed}\n` +
        `If the change is intended and additive, update the snapshot: run \`${UPDATE_COMMAND}\` and ` +
        `commit ${SNAPSHOT_FILE} with your change.`,
    );
  });

  it('the snapshot is written by a fixed configuration: every optional route is in it', () => {
    const paths = Object.keys(snapshot.paths);
    for (const path of [
      '/oid4vci/token',
      '/credential-status/{nonce}',
      '/vct/membership-v1',
      '/admin/issuance-history',
    ])
      expect(paths).toContain(path);
    expect(snapshot.servers).toEqual([{ url: 'https://issuer.example' }]);
  });
});

describe('what the contract test calls breaking', () => {
  // A few operations of the snapshot: the library compares every schema of the document it is given.
  let doc: Doc;
  beforeAll(() => {
    const whole = JSON.parse(readFileSync(SNAPSHOT_FILE, 'utf8')) as Doc;
    const kept = [
      '/admin/keys',
      '/admin/issuance-history',
      '/revocation-status/{nonce}',
      '/admin/status-changes',
    ].concat(['/issue-vc', '/admin/claims', '/available-vc', '/admin/renew']);
    doc = { ...whole, paths: Object.fromEntries(kept.map((p) => [p, whole.paths[p]])) };
  });
  /**
   * Both documents cut down to the paths the change touches: the library compares every schema it
   * is given, and a path alike in both yields no difference.
   */
  const touched = (before: Doc, after: Doc): [Doc, Doc] => {
    const paths = [...new Set([...Object.keys(before.paths), ...Object.keys(after.paths)])].filter(
      (p) => !isDeepStrictEqual(before.paths[p], after.paths[p]),
    );
    const cut = (d: Doc): Doc => ({
      ...d,
      paths: Object.fromEntries(paths.filter((p) => p in d.paths).map((p) => [p, d.paths[p]])),
    });
    return [cut(before), cut(after)];
  };
  const body = (d: Doc, path: string) => d.paths[path].post.requestBody.content['application/json'].schema;
  const answer = (d: Doc, path: string, method = 'get', status = '200') =>
    d.paths[path][method].responses[status].content['application/json'].schema;

  const breaking: Record<string, (d: Doc) => void> = {
    'a path removed': (d) => {
      delete d.paths['/admin/keys'];
    },
    'a path renamed': (d) => {
      d.paths['/admin/key-list'] = d.paths['/admin/keys'];
      delete d.paths['/admin/keys'];
    },
    'a query parameter removed': (d) => {
      d.paths['/admin/issuance-history'].get.parameters = d.paths[
        '/admin/issuance-history'
      ].get.parameters.filter((p: { name: string }) => p.name !== 'schemaId');
    },
    'a response field removed': (d) => {
      delete answer(d, '/revocation-status/{nonce}').properties.isRevoked;
    },
    'a response field renamed': (d) => {
      const s = answer(d, '/revocation-status/{nonce}');
      s.properties.revoked = s.properties.isRevoked;
      delete s.properties.isRevoked;
      s.required = s.required.map((f: string) => (f === 'isRevoked' ? 'revoked' : f));
    },
    'an enum value removed from an answer': (d) => {
      const s = answer(d, '/revocation-status/{nonce}').properties.status;
      s.enum = s.enum.filter((v: string) => v !== 'suspended');
    },
    'an enum value removed from a body': (d) => {
      const s = body(d, '/admin/status-changes').properties.change;
      s.enum = s.enum.filter((v: string) => v !== 'unsuspend');
    },
    'a default changed': (d) => {
      body(d, '/issue-vc').properties.proofType.default = 'BJJ_SIG_2021';
    },
    'a body field type changed': (d) => {
      body(d, '/issue-vc').properties.userId.type = 'number';
    },
    'an answer field type changed': (d) => {
      answer(d, '/admin/claims', 'post').properties.upserted.type = 'string';
    },
    'an optional body field made required': (d) => {
      body(d, '/available-vc').required.push('schemaId');
    },
    'an optional query parameter made required': (d) => {
      const p = d.paths['/admin/issuance-history'].get.parameters.find(
        (q: { name: string }) => q.name === 'schemaId',
      );
      p.required = true;
    },
    'a success status removed': (d) => {
      delete d.paths['/admin/renew'].post.responses['202'];
    },
  };
  for (const [change, mutate] of Object.entries(breaking))
    it(`${change}: breaking`, () => {
      const after = clone(doc);
      mutate(after);
      expect(breakingChanges(...touched(doc, after)).length, change).toBeGreaterThan(0);
    });

  const additive: Record<string, (d: Doc) => void> = {
    'a path added': (d) => {
      d.paths['/admin/new'] = { get: { responses: { 200: { description: 'new' } } } };
    },
    'an optional body field added': (d) => {
      body(d, '/available-vc').properties.note = { type: 'string' };
    },
    'an answer field added': (d) => {
      answer(d, '/revocation-status/{nonce}').properties.checkedAt = { type: 'string' };
    },
    'an enum value added to a body': (d) => {
      body(d, '/admin/status-changes').properties.change.enum.push('archive');
    },
    'a description changed': (d) => {
      d.paths['/admin/keys'].get.summary = 'Every key';
    },
  };
  for (const [change, mutate] of Object.entries(additive))
    it(`${change}: not breaking`, () => {
      const after = clone(doc);
      mutate(after);
      expect(breakingChanges(...touched(doc, after))).toEqual([]);
    });

  it('a "Breaking" entry counts only under ## Unreleased', () => {
    expect(
      unreleasedHasBreakingEntry('# Changelog\n\n## Unreleased\n\n### Breaking\n\n- x\n\n## 2026-01-01\n'),
    ).toBe(true);
    expect(unreleasedHasBreakingEntry('# Changelog\n\n## Unreleased\n\n- **Breaking**: x\n')).toBe(true);
    expect(
      unreleasedHasBreakingEntry('# Changelog\n\n## Unreleased\n\n- x\n\n## 2026-01-01\n\n### Breaking\n'),
    ).toBe(false);
    expect(unreleasedHasBreakingEntry('# Changelog\n\n## 2026-01-01\n\n### Breaking\n')).toBe(false);
    expect(major('2.0.0')).toBeGreaterThan(major('1.9.3'));
  });
});
