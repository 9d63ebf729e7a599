// Set-up: builds and packages the extension, installs it into code-server 4.100.3 with a workspace to
// test on, starts code-server and opens the workbench in Chromium.
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import {
  artifacts,
  children,
  ctx,
  figures,
  freePort,
  options,
  page,
  root,
  run,
  setPage,
  shot,
  step,
  waitFor,
} from './harness.mjs';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const csDir = process.env.HARNESS_RL_CODE_SERVER_DIR ?? join(root, '.cache', 'code-server');
const codeServer = join(csDir, 'node_modules', '.bin', 'code-server');

export async function setup() {
  await step('build the extension, webviews and CLI', buildExtension);
  await step('package the extension with vsce (dist/, media/, package.json only)', packageExtension);
  await step('code-server 4.100.3 is set up and the extension installs into it', installIntoCodeServer);
  await step('code-server starts and the workbench loads in Chromium', startWorkbench);
}

async function buildExtension() {
  const full = spawnSync('node', ['scripts/build.mjs'], { cwd: root, encoding: 'utf8' });
  if (full.status !== 0) throw new Error(`npm run build failed:\n${full.stderr}`);
}

async function packageExtension() {
  ctx.vsix = join(artifacts, 'harness-rl.vsix');
  rmSync(ctx.vsix, { force: true });
  run('npx', [
    'vsce',
    'package',
    '--no-dependencies',
    '--skip-license',
    '--readme-path',
    'extension/README.md',
    '-o',
    ctx.vsix,
  ]);
  const listing = run('python3', [
    '-c',
    'import sys,zipfile;print("\\n".join(n[10:] for n in zipfile.ZipFile(sys.argv[1]).namelist() if n.startswith("extension/")))',
    ctx.vsix,
  ]);
  const files = listing.trim().split('\n');
  const unexpected = files.filter(
    (f) =>
      !/^(dist\/(extension|core)\.cjs|dist\/webview\/\w+\.(js|css)|media\/.*|package\.json|readme\.md|license(\.md|\.txt)?)$/i.test(
        f,
      ),
  );
  if (unexpected.length) throw new Error(`the vsix would hold unexpected files: ${unexpected.join(', ')}`);
  figures.vsix_kb = Math.round(statSync(ctx.vsix).size / 1024);
  // the Marketplace page is the extension's own README (how to use it in VS Code), not the repository's
  const readme = run('python3', [
    '-c',
    'import sys,zipfile;z=zipfile.ZipFile(sys.argv[1]);print(z.read(next(n for n in z.namelist() if n.lower()=="extension/readme.md")).decode())',
    ctx.vsix,
  ]);
  if (!readme.startsWith('# Harness RL for VS Code'))
    throw new Error(`the vsix README is not the extension's: ${readme.slice(0, 80)}`);
}

async function installIntoCodeServer() {
  if (!existsSync(codeServer)) run(join(root, 'scripts', 'setup-code-server.sh'), [], { stdio: 'inherit' });
  ctx.tmp = mkdtempSync(join(tmpdir(), 'harness-rl-vscode-'));
  ctx.ext = join(ctx.tmp, 'extensions');
  ctx.ud = join(ctx.tmp, 'user-data');
  ctx.data = join(ctx.tmp, 'data');
  ctx.ws = join(ctx.tmp, 'workspace');
  for (const d of [ctx.ext, join(ctx.ud, 'User'), ctx.ws]) mkdirSync(d, { recursive: true });
  // a past Claude Code session for Import Past Sessions… (the extension host reads CLAUDE_CONFIG_DIR)
  ctx.claude = join(ctx.tmp, 'claude');
  const project = join(ctx.claude, 'projects', '-home-ana-src-shop');
  mkdirSync(project, { recursive: true });
  copyFileSync(
    join(root, 'test', 'fixtures', 'imports', 'claude-code-session.jsonl'),
    join(project, '5f0c2a1e-7d3b-4c9a-9e1f-2b6d8a4c0e11.jsonl'),
  );
  run(codeServer, ['--extensions-dir', ctx.ext, '--install-extension', ctx.vsix]);
  ctx.daemonPort = await freePort();
  ctx.port = await freePort();
  writeWorkspace();
  writeUserSettings();
}

// The workspace: the example run config (short) and configs with mistakes.
function writeWorkspace() {
  const tsx = join(root, 'node_modules', '.bin', 'tsx');
  copyFileSync(join(root, 'examples/math-agent/tasks.jsonl'), join(ctx.ws, 'tasks.jsonl'));
  writeFileSync(
    join(ctx.ws, 'math.run.yaml'),
    `run:
  name: vscode-math
  tasks:
    file: tasks.jsonl
    limit: 8
  harness:
    command: [${JSON.stringify(tsx)}, ${JSON.stringify(join(root, 'examples/math-agent/main.ts'))}]
    concurrency: 4
    timeout_s: 60
  algorithm:
    n: 2
    learning_rate: 0.02
    max_response_tokens: 4
  schedule:
    groups_per_step: 1
    steps: 2
`,
  );
  // a config whose tasks file is not there, and the JSON Schema (not a run config) beside them
  writeFileSync(join(ctx.ws, 'missing.run.yaml'), 'run:\n  name: missing\n  tasks:\n    file: nope.jsonl\n');
  copyFileSync(join(root, 'harness-rl.schema.json'), join(ctx.ws, 'harness-rl.schema.json'));
  writeFileSync(
    join(ctx.ws, 'bad.run.yaml'),
    `run:
  name: broken
  tasks:
    file: tasks.jsonl
  algorithm:
    n: zero
    advantage: magic
  shedule:
    steps: 3
`,
  );
}

function writeUserSettings() {
  writeFileSync(
    join(ctx.ud, 'User', 'settings.json'),
    JSON.stringify(
      {
        'security.workspace.trust.enabled': false,
        'workbench.startupEditor': 'none',
        'workbench.tips.enabled': false,
        // rows pinned at the top of a scrolled tree would take the clicks meant for the rows under them
        'workbench.tree.enableStickyScroll': false,
        'telemetry.telemetryLevel': 'off',
        'extensions.autoCheckUpdates': false,
        'extensions.autoUpdate': false,
        'terminal.integrated.defaultProfile.linux': 'bash',
        'harnessRl.daemonUrl': `http://127.0.0.1:${ctx.daemonPort}`,
        'harnessRl.dataFolder': ctx.data,
        // a harness-rl that is not there: the first Start Daemon fails, and the person fixes it
        'harnessRl.cliPath': join(ctx.tmp, 'no-such-dir', 'harness-rl'),
      },
      null,
      2,
    ),
  );
}

async function startWorkbench() {
  const cs = spawn(
    codeServer,
    [
      '--auth',
      'none',
      '--bind-addr',
      `127.0.0.1:${ctx.port}`,
      '--disable-telemetry',
      '--disable-workspace-trust',
      '--disable-getting-started-override',
      '--ignore-last-opened',
      '--disable-update-check',
      '--user-data-dir',
      ctx.ud,
      '--extensions-dir',
      ctx.ext,
      ctx.ws,
    ],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
      env: { ...process.env, CLAUDE_CONFIG_DIR: ctx.claude },
    },
  );
  children.push(cs);
  const out = [];
  cs.stdout.on('data', (d) => out.push(String(d)));
  cs.stderr.on('data', (d) => out.push(String(d)));
  await waitFor(
    'code-server to listen',
    async () => (await fetch(`http://127.0.0.1:${ctx.port}/healthz`)).ok,
    60_000,
  ).catch((e) => {
    throw new Error(`${e.message}\n${out.join('')}`);
  });
  ctx.browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: !options.headed,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
  const context = await ctx.browser.newContext({ viewport: { width: 1400, height: 900 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], {
    origin: `http://127.0.0.1:${ctx.port}`,
  });
  setPage(await context.newPage());
  await page.goto(`http://127.0.0.1:${ctx.port}/?folder=${encodeURIComponent(ctx.ws)}`);
  await page.locator('.monaco-workbench').waitFor({ timeout: 90_000 });
  await page.locator('.statusbar').waitFor();
  // our view container in the activity bar: the extension's contributions are registered
  await page.locator('.activitybar [aria-label*="Harness RL"]').first().waitFor({ timeout: 60_000 });
  await page.waitForTimeout(1500);
  await shot('01-workbench');
}
