// Bundles the CLI/daemon (Node ESM), the extension (CommonJS for VS Code) and the webviews (browser).
// Entries that do not exist yet are skipped, so the build stays green while folders fill in.
import { existsSync, rmSync } from 'node:fs';
import * as esbuild from 'esbuild';

const watch = process.argv.includes('--watch');
// `--only=extension,webview` builds just those targets (the VS Code tests use it).
const only = process.argv
  .find((a) => a.startsWith('--only='))
  ?.slice(7)
  .split(',');
const targets = [
  {
    name: 'cli',
    // import-worker: the thread that reads and tokenizes imported sessions (daemon/import/thread.ts)
    entryPoints: { cli: 'daemon/cli/main.ts', 'import-worker': 'daemon/import/worker.ts' },
    platform: 'node',
    format: 'esm',
    packages: 'external',
    // what a command reaches only through import() is its own chunk, with the packages it imports:
    // the daemon does not load the tokenizer, the demo's agents or their OpenAI SDK until used
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    banner: {
      js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
    },
  },
  {
    name: 'extension',
    // extension.cjs activates; core.cjs (zod, yaml, ws, the client) loads lazily
    entryPoints: { extension: 'extension/src/main.ts', core: 'extension/src/core.ts' },
    platform: 'node',
    format: 'cjs',
    // the root package is "type": "module", so VS Code needs the CommonJS bundle named .cjs
    outExtension: { '.js': '.cjs' },
    // ws's optional native helpers are not shipped; ws falls back to JS
    external: ['vscode', 'bufferutil', 'utf-8-validate', './core.cjs'],
    minify: true,
  },
  {
    name: 'webview',
    entryPoints: {
      'webview/trajectory': 'webview/src/trajectory.ts',
      'webview/dashboard': 'webview/src/dashboard.ts',
      'webview/snippets': 'webview/src/snippets.ts',
      'webview/evaluation': 'webview/src/evaluation.ts',
    },
    platform: 'browser',
    format: 'iife',
    loader: { '.css': 'css' },
    minify: true,
  },
];

for (const { name, ...target } of targets) {
  if (only && !only.includes(name)) continue;
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
  // chunk names carry a hash: the last build's would pile up beside this one's
  if (target.splitting) rmSync('dist/chunks', { recursive: true, force: true });
  if (watch) await (await esbuild.context(options)).watch();
  else await esbuild.build(options);
}
