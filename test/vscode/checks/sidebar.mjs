// The sidebar's views: Runs and Recordings laid out, the Nodes view with a node agent and Ray workers.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { api } from '../lib/daemon.mjs';
import { children, ctx, figures, freePort, page, root, shot, step, waitFor } from '../lib/harness.mjs';
import { expand, runsPane } from '../lib/sidebar.mjs';
import { hoverOf } from '../lib/workbench.mjs';

export async function sidebarAndNodes() {
  await step(
    'the sidebar shows the Runs and Recordings views; an empty Runs view offers Start Run…',
    sidebarViews,
  );
  await step(
    'the Nodes view says how to add GPU nodes, then shows the node agent a run connects to',
    nodesViewShowsNodeAgent,
  );
  await step(
    "the Nodes view shows a run's Ray workers by node, live, and a worker's attempt opens its output",
    nodesViewShowsRayWorkers,
  );
}

async function sidebarViews() {
  await page
    .locator(
      '.activitybar .action-item a[aria-label*="Harness RL"], .activitybar .action-item [aria-label*="Harness RL"]',
    )
    .first()
    .click();
  await page.locator('.pane-header', { hasText: 'Runs' }).first().waitFor();
  await page.locator('.pane-header', { hasText: 'Recordings' }).first().waitFor();
  // the Runs view gets most of the sidebar, the Nodes view a fifth (not a third)
  const heightOf = async (name) =>
    (
      await page
        .locator('.pane', { has: page.locator('.pane-header', { hasText: name }) })
        .first()
        .boundingBox()
    )?.height ?? 0;
  const [runsH, recH, nodesH] = [
    await heightOf('Runs'),
    await heightOf('Recordings'),
    await heightOf('Nodes'),
  ];
  figures.sidebar_nodes_share = Math.round((100 * nodesH) / (runsH + recH + nodesH)) / 100;
  if (figures.sidebar_nodes_share > 0.27 || runsH < 2 * nodesH)
    throw new Error(`Runs ${runsH} px, Recordings ${recH} px, Nodes ${nodesH} px`);
  // connected, no runs yet: the Runs view keeps a Start Run… button
  await runsPane()
    .locator('.welcome-view-content', { hasText: 'No runs yet' })
    .getByRole('button', { name: 'Start Run…' })
    .waitFor({ timeout: 20_000 });
  await shot('04-sidebar');
}

async function nodesViewShowsNodeAgent() {
  const pane = page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'Nodes' }) }).first();
  await pane.locator('.welcome-view-content', { hasText: 'No GPU nodes yet' }).waitFor({ timeout: 20_000 });
  // a node agent in front of the reference engine (what `harness-rl node` is on a GPU machine)
  const nodePort = await freePort();
  const tokenFile = join(ctx.tmp, 'node-token');
  const agent = spawn(
    'node',
    [
      join(root, 'bin', 'harness-rl.js'),
      'node',
      '--role',
      'inference',
      '--engine',
      'reference',
      '--listen',
      `127.0.0.1:${nodePort}`,
      '--token-file',
      tokenFile,
      '--data',
      join(ctx.tmp, 'node-data'),
    ],
    { cwd: root, stdio: 'ignore', detached: true },
  );
  children.push(agent);
  const token = await waitFor(
    'the node token',
    () => existsSync(tokenFile) && readFileSync(tokenFile, 'utf8').trim(),
    20_000,
  );
  const url = `ws://127.0.0.1:${nodePort}`;
  const nodeRun = await waitFor(
    'a run that uses the node',
    () =>
      api('POST', '/api/runs', {
        base_dir: ctx.ws,
        config: {
          name: 'vscode-nodes',
          inference: { endpoints: [url], token },
          tasks: { file: 'tasks.jsonl', limit: 2 },
          // No worker attaches: the run stays on its first step, connected to the node.
          harness: { command: ['true'], workers: 'external' },
          algorithm: { n: 2, max_response_tokens: 4 },
          schedule: { groups_per_step: 1, steps: 1 },
        },
      }),
    20_000,
    500,
  );
  const row = pane.locator('.monaco-list-row', { hasText: url }).first();
  await waitFor('the node row, ready', async () => /ready/.test((await row.textContent()) ?? ''), 30_000);
  const hover = await hoverOf(row, 'inference node', "the node's hover");
  const text = (await hover.textContent()) ?? '';
  if (!text.includes(nodeRun.id)) throw new Error(`the hover does not name the run:\n${text}`);
  await shot('04b-nodes');
  await page.mouse.move(0, 0);
  await api('POST', `/api/runs/${nodeRun.id}/stop`, {});
}

async function nodesViewShowsRayWorkers() {
  const pane = page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'Nodes' }) }).first();
  const run = await api('POST', '/api/runs', {
    base_dir: ctx.ws,
    config: {
      name: 'vscode-workers',
      tasks: { file: 'tasks.jsonl', limit: 2 },
      harness: { command: ['true'], workers: 'external' },
      algorithm: { n: 2, max_response_tokens: 4 },
      schedule: { groups_per_step: 1, steps: 1 },
    },
  });
  const worker = 'ray:127.0.0.1:0123456789ab:w0';
  const claimed = await claimAsRayWorker(run, worker);
  const rowOf = (text) => pane.locator('.monaco-list-row', { hasText: text }).first();
  // no refresh: the run's 'workers' event brings its row
  await rowOf('Workers · vscode-workers').waitFor({ timeout: 20_000 });
  if (!/1 worker/.test((await rowOf('Workers · vscode-workers').textContent()) ?? ''))
    throw new Error(
      `the row does not count the worker: ${await rowOf('Workers · vscode-workers').textContent()}`,
    );
  await expand(rowOf('Workers · vscode-workers'));
  // the Ray node's row: its ip, then how many workers it holds
  const place = rowOf(/^127\.0\.0\.11 worker$/);
  await expand(place);
  const w0 = pane.locator('.monaco-list-row', { hasText: 'seen' }).filter({ hasText: /^w0/ }).first();
  await expand(w0);
  const attempt = rowOf(`${claimed.rollout.id} #1`);
  await attempt.waitFor({ timeout: 20_000 });
  await shot('04c-workers');
  await openAttemptOutput(attempt, claimed);
  await page.keyboard.press('Escape');
  // the worker claims the run's other rollout: its attempt shows under w0 without a refresh
  const second = await api('POST', `/api/runs/${run.id}/claim`, { worker, wait_ms: 5_000 });
  if (!second?.rollout || second.rollout.id === claimed.rollout.id)
    throw new Error(`no second rollout to claim: ${JSON.stringify(second)}`);
  const t0 = Date.now();
  await rowOf(`${second.rollout.id} #1`).waitFor({ timeout: 20_000 });
  figures.nodes_new_attempt_ms = Date.now() - t0;
  ctx.stopBeat();
  await api('POST', `/api/runs/${run.id}/stop`, {});
  await waitFor(
    'the stopped run to leave the Nodes view',
    async () => !(await rowOf('Workers · vscode-workers').isVisible()),
    20_000,
  );
}

// What a Ray worker actor does (workers/python): claim under its Ray name, stream its output.
async function claimAsRayWorker(run, worker) {
  const claimed = await waitFor(
    'a claimed rollout',
    () => api('POST', `/api/runs/${run.id}/claim`, { worker, wait_ms: 5_000 }),
    30_000,
    500,
  );
  await api('POST', `/api/attempts/${claimed.attempt.id}/output`, {
    rollout_id: claimed.rollout.id,
    chunk: 'harness says hello from w0\n',
  });
  // and its heartbeats (a worker silent for a while is gone, and leaves the view)
  const beat = setInterval(
    () =>
      api('POST', `/api/attempts/${claimed.attempt.id}/heartbeat`, {
        rollout_id: claimed.rollout.id,
      }).catch(() => {}),
    1_000,
  );
  ctx.stopBeat = () => clearInterval(beat);
  return claimed;
}

// A click on the attempt's row opens its output.
async function openAttemptOutput(attempt, claimed) {
  const output = page.locator('.editor-instance .view-lines', { hasText: 'harness says hello from w0' });
  await attempt.click();
  // the heartbeats redraw the tree: a click that lands as the row is replaced only selects it,
  // and Enter on the selected row runs the same command
  if (
    !(await output.waitFor({ timeout: 8_000 }).then(
      () => true,
      () => false,
    ))
  ) {
    await attempt.click();
    await page.keyboard.press('Enter');
    await output.waitFor({ timeout: 20_000 });
  }
  // a read-only document named after the attempt: closing it never asks to save (an untitled one did,
  // and its dialog blocked every later step)
  const tab = (await page.locator('.tabs-container .tab.active').first().textContent()) ?? '';
  if (!tab.includes(`${claimed.attempt.id}.log`) || /Untitled/.test(tab))
    throw new Error(`the output opened as "${tab}", not the attempt's read-only document`);
}
