// `npm run docs:agents`: writes the per-agent sections of docs/agents.md from settings.ts, with the
// CLI versions pinned in test/agents-cli/package.json.
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { agentSections, withSections } from './doc';

export const DOC = new URL('../../docs/agents.md', import.meta.url);
const PINS = new URL('../../test/agents-cli/package.json', import.meta.url);

export function pinnedVersions(): Record<string, string> {
  return JSON.parse(readFileSync(PINS, 'utf8')).devDependencies;
}

/** docs/agents.md as it should be. */
export function expectedDoc(): string {
  return withSections(readFileSync(DOC, 'utf8'), agentSections(pinnedVersions()));
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  writeFileSync(DOC, expectedDoc());
  process.stdout.write('docs/agents.md: agent settings written\n');
}
