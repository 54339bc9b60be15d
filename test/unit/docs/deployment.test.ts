import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

// docs/deployment.md "The image": a reader whose build cannot pull the Node base (offline, no
// Docker Hub) meets the engine's registry error; the section that introduces the image names that
// error and the stand-in base script, before any later section.
describe('docs/deployment.md "The image"', () => {
  const page = readFileSync('docs/deployment.md', 'utf8');
  const start = page.indexOf('## The image');
  const section = page.slice(start, page.indexOf('\n## ', start + 1));

  it('names the registry error of an offline build and the stand-in base image script', () => {
    expect(start).toBeGreaterThanOrEqual(0);
    expect(section).toContain('pinging container registry');
    expect(section).toContain('scripts/container/base-image.sh');
    expect(existsSync('scripts/container/base-image.sh')).toBe(true);
  });
});
