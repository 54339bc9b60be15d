import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONFIGURATION_DOC, renderConfiguration, variableDocs } from '../../../scripts/docs/configuration.js';
import { EnvSchema } from '../../../src/config/env.js';
import { ToolEnvSchema } from '../../../src/config/tool-env.js';

// docs/configuration.md is generated from the schemas' `.meta()`; these checks keep the schemas,
// the code that reads the environment, the generated page and .env.example in step.

const sourceFiles = (dir: string): string[] =>
  (readdirSync(dir, { recursive: true }) as string[])
    .filter((f) => /\.(ts|mts|js|mjs)$/.test(f))
    .map((f) => join(dir, f));

// process.env.X, env.X, source['X'], settings.env.X, merged.X (the admin CLI's merged environment).
const READ = /\b(?:env|source|merged)(?:\.|\[['"])([A-Z][A-Z0-9_]*)\b/g;
const readIn = (dirs: string[]): Map<string, string> => {
  const found = new Map<string, string>();
  for (const file of dirs.flatMap(sourceFiles))
    for (const m of readFileSync(file, 'utf8').matchAll(READ))
      if (m[1] && !found.has(m[1])) found.set(m[1], file);
  return found;
};

const server = Object.keys(EnvSchema.shape);
const tools = Object.keys(ToolEnvSchema.shape);
const documented = new Set([...server, ...tools]);
// Set by the operating system, not by us.
const SYSTEM = new Set(['HOME', 'PATH']);

describe('docs/configuration.md', () => {
  it('documents every variable src/ and scripts/ read', () => {
    const undocumented = [...readIn(['src', 'scripts'])]
      .filter(([name]) => !documented.has(name) && !SYSTEM.has(name))
      .map(([name, file]) => `${name} (read in ${file})`);
    expect(undocumented).toEqual([]);
  });

  it('documents no variable that nothing reads', () => {
    const read = readIn(['src', 'scripts', 'test']);
    expect([...documented].filter((name) => !read.has(name))).toEqual([]);
  });

  it('gives every variable a description and a default', () => {
    expect(variableDocs(EnvSchema).map(([name]) => name)).toEqual(server);
    expect(variableDocs(ToolEnvSchema).map(([name]) => name)).toEqual(tools);
  });

  it('is what `npm run docs` generates', () => {
    expect(readFileSync(CONFIGURATION_DOC, 'utf8')).toBe(renderConfiguration());
  });

  it('.env.example lists exactly the server variables', () => {
    const listed = [...readFileSync('.env.example', 'utf8').matchAll(/^#? ?([A-Z][A-Z0-9_]*)=/gm)].map(
      (m) => m[1],
    );
    expect([...new Set(listed)].sort()).toEqual([...server].sort());
  });
});
