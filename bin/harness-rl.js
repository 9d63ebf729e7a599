#!/usr/bin/env -S node --max-semi-space-size=128
// The flags above are daemon/cli/node-flags.ts DAEMON_NODE_FLAGS (a shebang cannot import them;
// package.json's demo script repeats them, as `node bin/harness-rl.js` ignores the shebang).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const cli = fileURLToPath(new URL('../dist/cli.js', import.meta.url));
if (!existsSync(cli)) {
  process.stderr.write('harness-rl is not built yet: run `npm run build` in its folder first.\n');
  process.exit(1);
}
await import(cli);
