// The status bar follows a training run through Stop Run…, Restart Daemon, Stop Daemon and a
// validation pause.
import { api } from '../lib/daemon.mjs';
import { ctx, page, shot, step, waitFor } from '../lib/harness.mjs';
import { collapse, expand, runsPane, treeRow } from '../lib/sidebar.mjs';
import { hoverOf, palette, quickPick, webview } from '../lib/workbench.mjs';

export async function statusBarAndDaemonLifecycle() {
  await step(
    "the status bar follows the training run: a click opens its dashboard, which counts the step's rollouts",
    statusBarFollowsRun,
  );
  await step(
    "the status bar's Stop Run… asks first and leaves the run running when cancelled",
    stopRunCancelled,
  );
  await step(
    'after Restart Daemon the run resumes and the status bar says so, not "no worker"',
    runResumesAfterRestart,
  );
  await step(
    'the dashboard after the daemon stops says so, with Start Daemon, not "running"',
    dashboardAfterDaemonStops,
  );
  await step(
    "Stop Run… from the status bar stops the run; its step's group says cancelled",
    stopRunFromStatusBar,
  );
  await step(
    'a run that a validation threshold pauses shows in the status bar; Resume Run goes on',
    validationPause,
  );
}

// The status bar item of the run that trains now (its text is the run's name and step).
const runItem = (name) => page.locator('.statusbar-item', { hasText: name }).first();

const statusHover = (name, text) => hoverOf(runItem(name), text, 'the status bar hover');

async function statusBarFollowsRun() {
  await palette('View: Close All Editors');
  // a run whose rollouts take long (the daemon's own workers run `sleep`): it trains on step 0
  ctx.longRun = await api('POST', '/api/runs', {
    base_dir: ctx.ws,
    config: {
      name: 'vscode-long',
      tasks: { file: 'tasks.jsonl', limit: 2 },
      harness: { command: ['sleep', '600'], concurrency: 2, timeout_s: 600 },
      algorithm: { n: 2, max_response_tokens: 4 },
      schedule: { groups_per_step: 1, steps: 3 },
    },
  });
  const item = runItem('vscode-long');
  await waitFor(
    'the status bar to show the run',
    async () => /step 0\/3/.test(await item.innerText()),
    30_000,
  );
  await item.click();
  const frame = webview();
  await frame.locator('h1', { hasText: 'vscode-long' }).waitFor({ timeout: 20_000 });
  // the rollouts of the current step, live: both start running in the daemon's workers
  await waitFor(
    'the step progress',
    async () =>
      /step 0: 0 of 2 rollouts finished · 2 running/.test(await frame.locator('#step-progress').innerText()),
    30_000,
  ).catch(async (e) => {
    throw new Error(`${e.message}; the header says: ${await frame.locator('header').innerText()}`);
  });
  await shot('15-status-bar-dashboard-progress');
}

async function stopRunCancelled() {
  const hover = await statusHover('vscode-long', 'Stop Run');
  await shot('15b-status-bar-tooltip');
  const text = (await hover.textContent()) ?? '';
  if (!/Stop Daemon/.test(text))
    throw new Error(`the tooltip does not tell the daemon's Stop apart: ${text}`);
  await hover.locator('a', { hasText: 'Stop Run' }).first().click();
  const dialog = page.locator('.monaco-dialog-box', { hasText: 'vscode-long' });
  await dialog.waitFor({ timeout: 10_000 });
  await shot('15c-stop-run-confirm');
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  await page.waitForTimeout(1000);
  const run = await api('GET', `/api/runs/${ctx.longRun.id}`);
  if (run.status !== 'running') throw new Error(`the run is ${run.status} after Cancel`);
}

async function runResumesAfterRestart() {
  await palette('Harness RL: Restart Daemon');
  await waitFor(
    'the restarted daemon',
    async () => (await fetch(`http://127.0.0.1:${ctx.daemonPort}/api/health`)).ok,
    60_000,
  );
  const item = runItem('vscode-long');
  await waitFor(
    'the run back in the status bar',
    async () => /step 0\/3/.test(await item.innerText()),
    30_000,
  );
  // its workers start again with the resumed run: the bar must not keep the old daemon's "no worker"
  await waitFor(
    'the bar to show the run training',
    async () => (await item.innerHTML()).includes('codicon-sync') && !/worker/.test(await item.innerText()),
    20_000,
  ).catch(async (e) => {
    throw new Error(`${e.message}; it says "${await item.innerText()}"`);
  });
  await shot('15d-status-bar-after-restart');
}

async function dashboardAfterDaemonStops() {
  await runItem('vscode-long').click();
  const frame = webview();
  await frame.locator('h1', { hasText: 'vscode-long' }).waitFor({ timeout: 20_000 });
  await palette('Harness RL: Stop Daemon');
  const dialog = page.locator('.monaco-dialog-box', { hasText: 'vscode-long' });
  await dialog.waitFor({ timeout: 10_000 });
  await dialog.getByRole('button', { name: 'Stop Daemon' }).click();
  await waitFor(
    'the dashboard to say the daemon stopped',
    async () => /daemon stopped/.test(await frame.locator('#run-status').innerText()),
    20_000,
  );
  const text = await frame.locator('#root').innerText();
  if (/Waiting for a worker|Stop run/.test(text))
    throw new Error(`stale advice on a stopped daemon: ${text}`);
  await shot('15e-dashboard-daemon-stopped');
  await frame.locator('#daemon-stopped').getByRole('button', { name: 'Start Daemon' }).click();
  await waitFor(
    'the dashboard to show the run again',
    async () => (await frame.locator('#run-status').innerText()) === 'running',
    60_000,
  );
}

async function stopRunFromStatusBar() {
  const hover = await statusHover('vscode-long', 'Stop Run');
  await hover.locator('a', { hasText: 'Stop Run' }).first().click();
  const dialog = page.locator('.monaco-dialog-box', { hasText: 'vscode-long' });
  await dialog.waitFor({ timeout: 10_000 });
  await dialog.getByRole('button', { name: 'Stop Run' }).click();
  await waitFor(
    'the run stopped',
    async () => (await api('GET', `/api/runs/${ctx.longRun.id}`)).status === 'stopped',
    30_000,
  );
  await palette('View: Close All Editors');
  const tree = runsPane();
  if (!(await tree.isVisible()))
    await page.locator('.activitybar [aria-label*="Harness RL"]').first().click();
  const math = tree.locator('.monaco-list-row', { hasText: 'vscode-math' }).first();
  if (await math.count()) await collapse(math);
  await expand(tree.locator('.monaco-list-row', { hasText: 'vscode-long' }).first());
  const stepRow = treeRow(tree, 'step 0');
  await waitFor(
    'step 0 to say cancelled',
    async () => /cancelled/.test((await stepRow.textContent()) ?? ''),
    20_000,
  );
  await shot('15f-tree-stopped-run');
  await collapse(tree.locator('.monaco-list-row', { hasText: 'vscode-long' }).first());
}

async function validationPause() {
  // tis_cap 0.5 caps every token where trainer and rollout agree: the capped share 1 is past 0.2
  const base = ctx.run.config;
  const created = await api('POST', '/api/runs', {
    config: {
      ...base,
      name: 'vscode-paused',
      algorithm: { ...base.algorithm, tis_cap: 0.5 },
      validation: { tis_capped_fraction_max: 0.2 },
    },
    base_dir: ctx.run.base_dir,
  });
  const statusItem = page.locator('.statusbar-item', { hasText: 'vscode-paused' }).first();
  const pausedAt = (n) =>
    waitFor(
      `the status bar to show the run paused at step ${n}`,
      async () =>
        (await statusItem.innerText().catch(() => '')).includes(`paused at step ${n}`) &&
        (await statusItem.innerHTML()).includes('codicon-debug-pause'),
      240_000,
      1000,
    );
  await pausedAt(1);
  const paused = await api('GET', `/api/runs/${created.id}`);
  if (!/step 0: tis_capped_fraction 1 > 0.2/.test(paused.error ?? ''))
    throw new Error(`the pause does not name the step and figure: ${paused.error}`);
  await shot('15-status-paused');
  await page.keyboard.press('Escape'); // the pause's notification
  await palette('Harness RL: Resume Run');
  await quickPick('vscode-paused');
  await pausedAt(2); // step 1 is past the threshold too
  await api('POST', `/api/runs/${created.id}/stop`, {});
  await waitFor(
    'the status bar to leave the stopped run',
    async () => (await page.locator('.statusbar-item', { hasText: 'vscode-paused' }).count()) === 0,
    30_000,
  );
}
