// Bundles the CLI/daemon (Node ESM), the extension (CommonJS for VS Code) and the webviews (browser).
// Entries that do not exist yet are skipped, so the build stays green while folders fill in.
import { existsSync } from 'node:fs';
import * as esbuild from 'esbuild';

const watch = process.argv.includes('--watch');
const targets = [
  {
    entryPoints: { cli: 'daemon/cli/main.ts' },
    platform: 'node',
    format: 'esm',
    packages: 'external',
    banner: {
      js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
    },
  },
  {
    entryPoints: { extension: 'extension/src/main.ts' },
    platform: 'node',
    format: 'cjs',
    external: ['vscode'],
  },
  {
    entryPoints: {
      'webview/trajectory': 'webview/src/trajectory.ts',
      'webview/dashboard': 'webview/src/dashboard.ts',
    },
    platform: 'browser',
    format: 'iife',
    loader: { '.css': 'css' },
  },
];

for (const target of targets) {
  const entryPoints = Object.fromEntries(
    Object.entries(target.entryPoints).filter(([, file]) => existsSync(file)),
  );
  if (Object.keys(entryPoints).length === 0) continue;
  const options = {
    bundle: true,
    sourcemap: true,
    target: 'node20',
    outdir: 'dist',
    logLevel: 'warning',
    ...target,
    entryPoints,
  };
  if (target.platform === 'browser') options.target = 'es2022';
  if (watch) await (await esbuild.context(options)).watch();
  else await esbuild.build(options);
}
