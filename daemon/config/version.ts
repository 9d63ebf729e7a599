import { readFileSync } from 'node:fs';

/** The package version (daemon/*.ts and the bundled dist/cli.js both sit one folder below package.json). */
export const VERSION: string = (() => {
  try {
    return JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
})();
