// Before and at activation: the palette lists the commands lazily, a daemon that cannot start says
// why, one started outside is picked up, a command that needs one offers to start it, activation time.
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { children, ctx, figures, findFiles, log, page, root, shot, step, waitFor } from '../lib/harness.mjs';
import { palette, toast } from '../lib/workbench.mjs';

export async function activationAndDaemonStart() {
  await step('the palette lists the Harness RL commands (before activation: lazy)', paletteListsCommands);
  await step(
    'Start Daemon with a harness-rl that is not there fails at once; Open Settings leads to the path, fixed there',
    badCliPathFixedInSettings,
  );
  await step(
    'a daemon started outside VS Code is picked up without a click, and let go when it stops',
    outsideDaemonPickedUp,
  );
  await step(
    'a command that needs the daemon says so once, with a Start Daemon button that starts it',
    needsDaemonOffersStart,
  );
  await step('activation is lazy and fast (measured in the extension host)', activationIsLazyAndFast);
}

async function paletteListsCommands() {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const hidden = new Set(
    (pkg.contributes.menus.commandPalette ?? []).filter((m) => m.when === 'false').map((m) => m.command),
  );
  const titles = new Set(
    pkg.contributes.commands.filter((c) => !hidden.has(c.command)).map((c) => `Harness RL: ${c.title}`),
  );
  await palette('Harness RL: ', { accept: false });
  const rows = (await page.locator('.quick-input-list .monaco-list-row .label-name').allTextContents()).map(
    (t) => t.trim(),
  );
  const ours = rows.filter((r) => titles.has(r));
  if (ours.length < Math.min(8, titles.size)) throw new Error(`too few of our commands: ${rows.join(' | ')}`);
  for (const c of pkg.contributes.commands.filter((c) => hidden.has(c.command))) {
    if (rows.includes(`Harness RL: ${c.title}`))
      throw new Error(`internal command ${c.title} is in the palette`);
  }
  figures.palette_commands_seen = ours.length;
  // what cannot apply now stays out: nothing to stop yet
  for (const title of ['Stop Daemon', 'Restart Daemon', 'Stop Recording'])
    if (rows.includes(`Harness RL: ${title}`)) throw new Error(`${title} is offered with nothing to stop`);
  await page.keyboard.press('Escape');
}

async function badCliPathFixedInSettings() {
  await palette('Harness RL: Start Daemon');
  const started = Date.now();
  const error = toast('did not start').first();
  await error.waitFor({ timeout: 15_000 });
  figures.bad_cli_fail_ms = Date.now() - started;
  const text = ((await error.textContent()) ?? '').replace(/\s+/g, ' ');
  if (!text.includes('ENOENT')) throw new Error(`the error does not say why: ${text}`);
  if (figures.bad_cli_fail_ms > 5_000) throw new Error(`took ${figures.bad_cli_fail_ms} ms to fail`);
  await shot('02a-bad-cli-path');
  await error.getByRole('button', { name: 'Open Settings' }).click();
  const setting = page.locator('.settings-editor .setting-item-contents', { hasText: 'Cli Path' }).first();
  await setting.waitFor({ timeout: 20_000 });
  await shot('02b-cli-path-setting');
  const good = join(root, 'bin', 'harness-rl.js');
  await setting.locator('input').first().fill(good);
  await waitFor(
    'the fixed path in the user settings',
    () => readFileSync(join(ctx.ud, 'User', 'settings.json'), 'utf8').includes(JSON.stringify(good)),
    15_000,
  );
  await palette('View: Close All Editors');
}

async function outsideDaemonPickedUp() {
  const statusItem = page.locator('.statusbar-item', { hasText: 'Harness RL' }).first();
  const icon = async (name) => (await statusItem.innerHTML()).includes(`codicon-${name}`);
  if (!(await icon('error'))) throw new Error('the status bar does not show the failed start');
  const daemonOutside = (data) => {
    const child = spawn(
      'node',
      [join(root, 'bin', 'harness-rl.js'), 'daemon', '--port', String(ctx.daemonPort), '--data', data],
      { cwd: root, stdio: 'ignore', detached: true },
    );
    children.push(child);
    return {
      stop() {
        process.kill(-child.pid, 'SIGTERM');
        children.splice(children.indexOf(child), 1);
      },
    };
  };
  // one with another data folder, whose token this window cannot know: a key and Set Token…
  const stranger = daemonOutside(join(ctx.tmp, 'other-data'));
  await waitFor('the status bar to show a daemon that refuses our tokens', () => icon('key'), 30_000);
  await shot('02c-outside-daemon-other-token');
  stranger.stop();
  await waitFor('the status bar to show no daemon', () => icon('circle-slash'), 30_000);
  // one with this window's data folder: its token file lets the window in
  const outside = daemonOutside(ctx.data);
  const started = Date.now();
  await waitFor(
    'the status bar to show the daemon idle',
    async () => (await statusItem.innerHTML()).includes('codicon-pulse'),
    30_000,
  );
  figures.outside_daemon_pickup_ms = Date.now() - started;
  await shot('02d-outside-daemon-connected');
  outside.stop();
  await waitFor(
    'the status bar to show the daemon stopped',
    async () => (await statusItem.innerHTML()).includes('codicon-circle-slash'),
    30_000,
  );
}

async function needsDaemonOffersStart() {
  await palette('Harness RL: Open Run Dashboard');
  await toast('daemon is not running').first().waitFor({ timeout: 30_000 });
  if ((await toast('daemon is not running').count()) !== 1)
    throw new Error('more than one "not running" message');
  await shot('02-daemon-down');
  await toast('daemon is not running').getByRole('button', { name: 'Start Daemon' }).click();
  await waitFor(
    'the daemon to answer',
    async () => (await fetch(`http://127.0.0.1:${ctx.daemonPort}/api/health`)).ok,
    60_000,
  );
  await waitFor(
    'the status bar to show the daemon idle',
    async () => {
      const text = await page.locator('.statusbar-item', { hasText: 'Harness RL' }).first().innerText();
      return (
        !/loading|error/.test(
          await page.locator('.statusbar-item', { hasText: 'Harness RL' }).first().innerHTML(),
        ) && text.includes('Harness RL')
      );
    },
    30_000,
  );
  await shot('03-daemon-started');
}

async function activationIsLazyAndFast() {
  const logs = findFiles(join(ctx.ud, 'logs'), (p) => /Harness RL\.log$/.test(p));
  const text = logs.map((f) => readFileSync(f, 'utf8')).join('\n');
  const m = /activated in ([\d.]+) ms/.exec(text);
  if (!m)
    throw new Error(`no activation time in the output channel logs (${logs.join(', ') || 'none found'})`);
  figures.activate_ms = Number(m[1]);
  // code-server 4.100.3 is VS Code 1.100: the chat models are not offered, and the log says why
  if (!/chat models .*need VS Code 1\.104/.test(text))
    throw new Error('the log does not say why no chat models');
  // module load time of the bundle itself (outside VS Code, with a stub vscode module)
  const loadMs = execFileSync(
    'node',
    [
      '-e',
      `const M=require('module');const o=M._load;M._load=function(r,...a){if(r==='vscode'){return new Proxy(function(){},{get:(t,k)=>k==='__esModule'?false:new Proxy(function(){},{get:()=>function(){}})})}return o.call(this,r,...a)};const t=performance.now();require(${JSON.stringify(join(root, 'dist/extension.cjs'))});process.stdout.write(String(performance.now()-t))`,
    ],
    { encoding: 'utf8' },
  );
  figures.bundle_load_ms = Math.round(Number(loadMs) * 10) / 10;
  figures.activation_total_ms = Math.round((figures.activate_ms + figures.bundle_load_ms) * 10) / 10;
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  if (pkg.activationEvents.includes('*') || pkg.activationEvents.includes('onStartupFinished'))
    throw new Error('activation is not lazy');
  log(`activation: activate() ${figures.activate_ms} ms + bundle load ${figures.bundle_load_ms} ms`);
}
