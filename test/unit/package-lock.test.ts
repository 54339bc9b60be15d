import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

interface Lock {
  packages: Record<string, { hasInstallScript?: boolean }>;
}

const lockText = readFileSync('package-lock.json', 'utf8');
const lock = JSON.parse(lockText) as Lock;
const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { allowScripts?: Record<string, boolean> };

describe('package-lock.json', () => {
  it('installs no install-time telemetry (@scarf/scarf)', () => {
    expect(lockText).not.toContain('@scarf/scarf');
  });

  it('every package with an install script is approved or denied in allowScripts, so npm ci warns of none', () => {
    const withScripts = Object.entries(lock.packages)
      .filter(([, entry]) => entry.hasInstallScript)
      .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length));
    expect(withScripts).toContain('better-sqlite3');
    const unreviewed = withScripts.filter((name) => pkg.allowScripts?.[name] === undefined);
    expect(unreviewed).toEqual([]);
    expect(pkg.allowScripts?.['better-sqlite3']).toBe(true);
    expect(pkg.allowScripts?.esbuild).toBe(true);
  });
});
