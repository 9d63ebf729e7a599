import { readFileSync } from 'node:fs';

/** The package version, read from package.json (two folders up from this source file, one from dist/cli.js). */
export const VERSION: string = (() => {
  for (const candidate of ['../../package.json', '../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(candidate, import.meta.url), 'utf8'));
      if (pkg.name === 'harness-rl' && typeof pkg.version === 'string') return pkg.version;
    } catch {
      // try the next place
    }
  }
  return '0.0.0';
})();
