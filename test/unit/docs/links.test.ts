import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';

// Every relative link in the README, the changelog and docs/ reaches a file (and its heading, for
// an anchor); every repository path a page names in backticks exists; every
// `docs/<file>.md "<heading>"` cited in code names a file and a heading it has.

const pages = [
  'README.md',
  'CHANGELOG.md',
  ...readdirSync('docs')
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  const body = markdown.replace(/^```[\s\S]*?^```/gm, '');
  for (const m of body.matchAll(/^#{1,6} (.+)$/gm)) {
    const base = (m[1] ?? '')
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replaceAll(' ', '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

const headings = (markdown: string): string[] =>
  [...markdown.replace(/^```[\s\S]*?^```/gm, '').matchAll(/^#{1,6} (.+)$/gm)].map((m) =>
    (m[1] ?? '').replaceAll('`', '').toLowerCase(),
  );

describe('documentation links', () => {
  it('every relative link reaches a file and heading', () => {
    const broken: string[] = [];
    for (const page of pages) {
      const text = readFileSync(page, 'utf8').replace(/^```[\s\S]*?^```/gm, '');
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1] ?? '';
        if (/^[a-z]+:/.test(target)) continue;
        const [path = '', anchor] = target.split('#');
        const file = path === '' ? page : normalize(join(dirname(page), path));
        if (!existsSync(file)) broken.push(`${page}: ${target} (no ${file})`);
        else if (anchor && file.endsWith('.md') && !anchors(readFileSync(file, 'utf8')).has(anchor))
          broken.push(`${page}: ${target} (no heading #${anchor})`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('every repository path named in backticks exists (the changelog names past paths, so not there)', () => {
    const missing: string[] = [];
    for (const page of pages.filter((p) => p !== 'CHANGELOG.md')) {
      for (const m of readFileSync(page, 'utf8').matchAll(
        /`((?:src|test|scripts|ops|schemas|examples)\/[\w./-]*)`/g,
      )) {
        const path = (m[1] ?? '').replace(/\/$/, '');
        if (!existsSync(path)) missing.push(`${page}: ${path}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('every docs/ citation in code names a file and one of its headings', () => {
    const broken: string[] = [];
    for (const dir of ['src', 'scripts', 'test']) {
      for (const f of readdirSync(dir, { recursive: true }) as string[]) {
        if (!/\.(ts|sql|mjs)$/.test(f)) continue;
        const text = readFileSync(join(dir, f), 'utf8');
        for (const m of text.matchAll(/\bdocs\/([a-z-]+\.md)(?: "([^"]+)")?/g)) {
          const doc = `docs/${m[1]}`;
          if (!existsSync(doc)) broken.push(`${dir}/${f}: ${doc}`);
          else if (
            m[2] &&
            !headings(readFileSync(doc, 'utf8')).some((h) => h.includes((m[2] ?? '').toLowerCase()))
          )
            broken.push(`${dir}/${f}: ${doc} "${m[2]}"`);
        }
      }
    }
    expect(broken).toEqual([]);
  });
});
