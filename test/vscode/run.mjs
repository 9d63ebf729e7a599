#!/usr/bin/env node
// The extension in a real VS Code: packages it (vsce), installs it into code-server 4.100.3
// (scripts/setup-code-server.sh), and drives the workbench in Chromium with playwright-core:
// commands from the palette, the sidebar, a short run on the reference engine, the trajectory
// webview's token view, a recording through an integrated terminal, config diagnostics.
// Screenshots: test/artifacts/vscode-*.png. Exits non-zero on the first failed step.
//   node test/vscode/run.mjs [--keep] [--headed] [--only REGEX]
// --only runs the set-up and, of the checks, those whose name matches REGEX (a focused run while
// iterating: name the steps a check needs too, e.g. --only 'Start Daemon|needs the daemon|Start Run').
// --keep-going (with --only) goes on after a failed check, to see every check fail on old code.
// The entry only: the harness and the workbench, sidebar and daemon helpers are in lib/, the checks in
// checks/ (one module per area, run in the order below).
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { activationAndDaemonStart } from './checks/activation.mjs';
import { configDiagnostics } from './checks/configs.mjs';
import { recordingsAndExports } from './checks/recordings.mjs';
import { runsAndTrajectories } from './checks/runs.mjs';
import { sidebarAndNodes } from './checks/sidebar.mjs';
import { setup } from './lib/code-server.mjs';
import { api, evolutionEnd, tinyEvolveConfig } from './lib/daemon.mjs';
import {
  artifacts,
  children,
  ctx,
  figures,
  log,
  markFailed,
  options,
  outcome,
  page,
  root,
  shot,
  startChecks,
  step,
  waitFor,
} from './lib/harness.mjs';
import { collapse, evolutionPane, expand, rolloutRow, runsPane, treeRow } from './lib/sidebar.mjs';
import { palette, pickerLabels, quickPick, toast, webview } from './lib/workbench.mjs';

// In this order: later checks use what earlier ones made (the run, its rollout, the recording, the
// evolution's workspace copy) and the daemon's state they left.
const checks = [
  activationAndDaemonStart,
  sidebarAndNodes,
  configDiagnostics,
  runsAndTrajectories,
  recordingsAndExports,
  remainingChecks,
];

async function cleanup() {
  await ctx.browser?.close().catch(() => {});
  for (const c of children.reverse()) {
    try {
      process.kill(-c.pid, 'SIGTERM');
    } catch {
      // gone
    }
  }
  // the daemon the extension started is the code-server's grandchild; stop it through its port owner
  if (ctx.tmp && !options.keep)
    setTimeout(() => rmSync(ctx.tmp, { recursive: true, force: true }), 500).unref();
}

try {
  await setup();
  startChecks();
  for (const group of checks) await group();
} catch {
  markFailed();
} finally {
  await cleanup();
}
const { failed, steps } = outcome();
log(`figures ${JSON.stringify(figures)}`);
writeFileSync(join(artifacts, 'vscode-figures.json'), `${JSON.stringify(figures, null, 2)}\n`);
log(failed ? 'FAILED' : `passed ${steps} steps`);
process.exit(failed ? 1 : 0);

async function remainingChecks() {
  await step(
    'the Evolution view shows the candidate tree; a click opens the diff; Adopt Candidate changes the file',
    async () => {
      // a small evolution of a copy of examples/evolve in the workspace: one proposal, one generation
      const { dir, config } = tinyEvolveConfig('vscode-evolve', 'evolve', ['node', 'propose-rules.mjs'], {
        limit: 12,
        test_fraction: 0.34,
      });
      const started = await api('POST', '/api/evolutions', { config, base_dir: dir });
      const evo = await evolutionEnd(started.id);
      if (evo.status !== 'finished') throw new Error(`the evolution ${evo.status}: ${evo.error}`);
      const child = evo.candidates.find((c) => c.parent !== null);
      const root_ = evo.candidates.find((c) => c.parent === null);
      const pane = await evolutionPane();
      await expand(treeRow(pane, 'evolve vscode-evolve'));
      await treeRow(pane, `${root_.hash.slice(0, 10)} (root)`).waitFor({ timeout: 30_000 });
      const row = treeRow(pane, child.hash.slice(0, 10));
      await row.waitFor({ timeout: 30_000 });
      await shot('08-evolution-tree');
      await row.click();
      await page.locator('.tab', { hasText: '↔' }).first().waitFor({ timeout: 30_000 });
      await page.locator('.editor .monaco-diff-editor').first().waitFor({ timeout: 30_000 });
      await shot('08b-candidate-diff');
      const file = join(dir, 'harness', 'agent.mjs');
      if (readFileSync(file, 'utf8').includes('MAX_TRIES = 4'))
        throw new Error('the harness had the edit already');
      await row.hover();
      await row.locator('.action-label[aria-label="Adopt Candidate"]').click();
      await waitFor(
        'the adopted edit in the harness folder',
        () => readFileSync(file, 'utf8').includes('MAX_TRIES = 4'),
        30_000,
      );
      figures.evolution_candidates = evo.candidates.length;
      // the pickers name the proposer's recording and the candidates' runs as the views do
      const proposer = await pickerLabels('Harness RL: Export Recording…', 'Recording', 'proposer');
      if (!proposer.includes('proposer · generation 1'))
        throw new Error(`the recording picker shows ${proposer.join(' | ')}`);
      const short = root_.hash.slice(0, 10); // the root is always evaluated
      const runs = await pickerLabels('Harness RL: Open Run Dashboard', 'Run', short);
      if (!runs.every((l) => l.startsWith(`candidate ${short} `)))
        throw new Error(`the run picker shows ${runs.join(' | ')}`);
    },
  );

  await step(
    'Evaluate Harness… on a tiny config opens the evaluation page; Compare Evaluations… and Compare with Parent open the comparison; a candidate links to its evaluation',
    async () => {
      // a tiny config beside the evolution's harness (the Evolution step copied it into the workspace)
      const dir = join(ctx.ws, 'evolve');
      writeFileSync(
        join(dir, 'tiny-eval.run.yaml'),
        `run:
  name: vscode-tiny-eval
  tasks:
    file: tasks.jsonl
    limit: 6
    test_fraction: 0.5
  harness:
    command: [node, agent.mjs]
    dir: harness
    concurrency: 4
    timeout_s: 60
    max_attempts: 1
    reward: verifier
    verifier: [node, verify.mjs]
  algorithm:
    max_response_tokens: 4
`,
      );
      await palette('View: Close All Editors');
      await palette('Harness RL: Evaluate Harness…');
      await quickPick('tiny-eval.run.yaml');
      await quickPick('test');
      // attempts per task: 2 (k of pass@k)
      const input = page.locator('.quick-input-widget input');
      await waitFor('the attempts box', async () => (await input.inputValue()) === '1', 10_000);
      await input.fill('2');
      await page.keyboard.press('Enter');
      await quickPick("The config's harness");
      const view = webview();
      // named after the config and the split ("eval vscode-tiny-eval test")
      await view.locator('h1', { hasText: /^Evaluation .*vscode-tiny-eval/ }).waitFor({ timeout: 30_000 });
      // it fills in by itself within a second of the daemon's finish (its `evaluation` event; it polled
      // every 2 s before): the figures are the stored ones
      const tiny = async () =>
        (await api('GET', '/api/evaluations')).items.find((e) => e.name.includes('vscode-tiny-eval'));
      const finishedAt = await waitFor(
        'the daemon to finish the evaluation',
        async () => (await tiny())?.status !== 'running' && Date.now(),
        120_000,
        25,
      );
      await view.locator('#summary').waitFor({ timeout: 1000 });
      figures.evaluation_page_finished_ms = Date.now() - finishedAt;
      const stored = await tiny();
      if (stored?.status !== 'finished') throw new Error(`the evaluation is ${stored?.status}`);
      const rows = await view.locator('#tasks tbody tr').count();
      if (rows !== stored.tasks.length) throw new Error(`${rows} task rows for ${stored.tasks.length} tasks`);
      const mean = await view.locator('#summary tr[data-key="mean_reward"] strong').innerText();
      if (Number(mean) !== Number(stored.summary.mean_reward.toPrecision(3)))
        throw new Error(`the page shows mean ${mean}, the daemon ${stored.summary.mean_reward}`);
      if ((await view.locator('#tasks tbody tr').first().locator('.reward').count()) !== 2)
        throw new Error('the first task does not show its 2 attempts');
      figures.evaluation_tasks = rows;
      await shot('08c-evaluation');
      // its run never trains: the Runs view keeps it (and the evolution's) under one row, apart
      // from the training runs
      const runs = runsPane();
      const evalRuns = treeRow(runs, 'Evaluation runs');
      await evalRuns.waitFor({ timeout: 10_000 });
      const counted = (await api('GET', '/api/runs?kind=evaluation&limit=1000')).items;
      const said = await evalRuns.locator('.label-description').textContent();
      if (said !== String(counted.length))
        throw new Error(`Evaluation runs says ${said}, not ${counted.length}`);
      if ((await treeRow(runs, stored.name).count()) > 0) throw new Error('the evaluation run is a top row');
      await expand(evalRuns);
      await treeRow(runs, stored.name).waitFor({ timeout: 10_000 });
      await shot('08c-evaluation-runs');
      await collapse(evalRuns);

      // Compare Evaluations…: the evolution's root (A) against its child (B), both picked by id
      const evo = (await api('GET', '/api/evolutions')).items.find((e) => e.name.includes('vscode-evolve'));
      const detail = await api('GET', `/api/evolutions/${evo.id}`);
      const child = detail.candidates.find((c) => c.parent !== null && c.train_evaluation);
      const parent = detail.candidates.find((c) => c.hash === child.parent);
      const expected = await api(
        'GET',
        `/api/evaluations/compare?a=${parent.train_evaluation}&b=${child.train_evaluation}`,
      );
      await palette('Harness RL: Compare Evaluations…');
      for (const [id, title] of [
        [parent.train_evaluation, 'the baseline (A)'],
        [child.train_evaluation, 'the other (B)'],
      ]) {
        // the pick itself, not the palette closing before it: keys typed then go to whatever had focus
        await waitFor(
          `the pick of ${title}`,
          async () =>
            (await input.isVisible()) && ((await input.getAttribute('aria-label')) ?? '').includes(title),
          10_000,
        );
        await input.fill(id);
        await quickPick(id);
      }
      const cmp = webview().locator('#verdict');
      await cmp.waitFor({ timeout: 30_000 });
      const wins = await webview().locator('#wins').innerText();
      if (wins !== `B better on ${expected.sign_test.wins}`) throw new Error(`the page says "${wins}"`);
      const paired = await webview().locator('#per-task tbody tr').count();
      if (paired !== expected.paired_tasks)
        throw new Error(`${paired} rows for ${expected.paired_tasks} paired tasks`);
      figures.comparison_paired_tasks = paired;
      await shot('08d-comparison');

      // the Evolution view: Compare with Parent on the child opens the same comparison
      await palette('View: Close All Editors');
      const pane = await evolutionPane();
      const row = treeRow(pane, child.hash.slice(0, 10));
      await row.waitFor({ timeout: 30_000 });
      await row.hover();
      await row.locator('.action-label[aria-label="Compare with Parent"]').click();
      await webview().locator('#verdict').waitFor({ timeout: 30_000 });
      const tab = (await page.locator('.tabs-container .tab.active').first().textContent()) ?? '';
      if (!tab.includes('Compare')) throw new Error(`the comparison opened as "${tab}"`);

      // the candidate's tooltip links to the page of its train evaluation
      await palette('View: Close All Editors');
      const hover = page.locator('.monaco-hover, .workbench-hover', { hasText: 'Train evaluation' }).first();
      await waitFor(
        "the candidate's hover",
        async () => {
          await page.mouse.move(0, 0);
          await row.hover();
          await hover.waitFor({ timeout: 3_000 });
          return true;
        },
        30_000,
      );
      await hover.locator('a', { hasText: 'Train evaluation' }).click();
      const train = await api('GET', `/api/evaluations/${child.train_evaluation}`);
      await webview()
        .locator('h1', { hasText: `Evaluation ${train.name}` })
        .waitFor({ timeout: 30_000 });
      await webview().locator('#summary').waitFor({ timeout: 10_000 });
    },
  );

  await step(
    'an evolution shows Stop Evolution while it runs; after Restart Daemon it shows interrupted with Resume Evolution, which runs it to the end',
    async () => {
      // examples/evolve with a proposer that hangs the first time it is asked (until the daemon stops)
      const { dir, config } = tinyEvolveConfig(
        'vscode-resume',
        'evolve-resume',
        ['node', 'propose-once.mjs'],
        {
          limit: 8,
          test_fraction: 0.25,
        },
      );
      const marker = join(dir, 'asked');
      writeFileSync(
        join(dir, 'propose-once.mjs'),
        `import { existsSync, writeFileSync } from 'node:fs';
if (!existsSync(${JSON.stringify(marker)})) {
  writeFileSync(${JSON.stringify(marker)}, '');
  await new Promise(() => setInterval(() => {}, 1000));
}
await import(${JSON.stringify(`file://${join(dir, 'propose-rules.mjs')}`)});
`,
      );
      const started = await api('POST', '/api/evolutions', { config, base_dir: dir });
      await waitFor('the proposer to be asked', () => existsSync(marker), 120_000);
      const pane = await evolutionPane();
      const row = treeRow(pane, 'evolve vscode-resume');
      await row.waitFor({ timeout: 30_000 });
      await row.hover();
      await row.locator('.action-label[aria-label="Stop Evolution"]').waitFor({ timeout: 10_000 });
      if (await row.locator('.action-label[aria-label="Resume Evolution"]').count())
        throw new Error('a running evolution offers Resume Evolution');

      await palette('Harness RL: Restart Daemon');
      // the old daemon answers until it stops; the new one shows the evolution interrupted
      await waitFor(
        'the restarted daemon to show the evolution interrupted',
        async () =>
          (await api('GET', `/api/evolutions/${started.id}`).catch(() => null))?.status === 'interrupted',
        90_000,
      );
      await waitFor(
        'the row to say interrupted',
        async () => /interrupted/.test((await row.textContent()) ?? ''),
        30_000,
      );
      await row.hover();
      const resume = row.locator('.action-label[aria-label="Resume Evolution"]');
      await resume.waitFor({ timeout: 10_000 });
      if (await row.locator('.action-label[aria-label="Stop Evolution"]').count())
        throw new Error('an interrupted evolution offers Stop Evolution');
      await shot('08e-evolution-interrupted');
      await resume.click();
      const evo = await evolutionEnd(started.id);
      if (evo.status !== 'finished') throw new Error(`the resumed evolution ${evo.status}: ${evo.error}`);
      if (!evo.candidates.some((c) => c.parent !== null))
        throw new Error('the resumed evolution has no child: its proposal was not asked for again');
      await waitFor(
        'the row to say finished',
        async () => /finished/.test((await row.textContent()) ?? ''),
        30_000,
      );
      await shot('08f-evolution-resumed');
      figures.resumed_evolution_candidates = evo.candidates.length;
    },
  );

  await step(
    'the Evolution view follows an evolution from its events: stopped, resumed from elsewhere, its child and finished show within 1.5 s (it polled every 3 s while one ran, and not at all after)',
    async () => {
      // a proposer that says it was asked, then waits for `go`
      const { dir, config } = tinyEvolveConfig('vscode-live', 'evolve-live', ['node', 'propose-gate.mjs'], {
        limit: 8,
        test_fraction: 0.25,
      });
      const [asked, go] = [join(dir, 'asked'), join(dir, 'go')];
      writeFileSync(
        join(dir, 'propose-gate.mjs'),
        `import { existsSync, writeFileSync } from 'node:fs';
writeFileSync(${JSON.stringify(asked)}, '');
while (!existsSync(${JSON.stringify(go)})) await new Promise((r) => setTimeout(r, 100));
await import(${JSON.stringify(`file://${join(dir, 'propose-rules.mjs')}`)});
`,
      );
      const pane = await evolutionPane();
      const started = await api('POST', '/api/evolutions', { config, base_dir: dir });
      const row = treeRow(pane, 'evolve vscode-live');
      await expand(row);
      await waitFor('the proposer to be asked', () => existsSync(asked), 120_000);
      /** How long after the daemon's change `row` said `status` (at most 1.5 s). */
      const says = async (status) => {
        const t0 = Date.now();
        await waitFor(
          `the row to say ${status} within 1.5 s`,
          async () => new RegExp(status).test((await row.textContent()) ?? ''),
          1500,
          25,
        );
        return Date.now() - t0;
      };
      // as `harness-rl evolve stop|resume` would: nothing in VS Code asks the view to read again
      await api('POST', `/api/evolutions/${started.id}/stop`, {});
      figures.evolution_view_stopped_ms = await says('stopped');
      rmSync(asked);
      await api('POST', `/api/evolutions/${started.id}/resume`, {});
      figures.evolution_view_resumed_ms = await says('running');
      await waitFor('the proposer to be asked again', () => existsSync(asked), 60_000);
      writeFileSync(go, '');
      const evo = await evolutionEnd(started.id);
      if (evo.status !== 'finished') throw new Error(`the evolution ${evo.status}: ${evo.error}`);
      figures.evolution_view_finished_ms = await says('finished');
      // the root, shown before it had a child, opens by itself to show it
      const child = evo.candidates.find((c) => c.parent !== null);
      await treeRow(pane, child.hash.slice(0, 10)).waitFor({ timeout: 1500 });
      await shot('08g-evolution-live');
    },
  );

  await step('an open dashboard comes back after a window reload (webview panel serializer)', async () => {
    await palette('View: Close All Editors');
    await palette('Harness RL: Open Run Dashboard');
    await quickPick('vscode-math');
    await webview().locator('h1', { hasText: 'vscode-math' }).waitFor({ timeout: 30_000 });
    await page.waitForTimeout(1000);
    await palette('Developer: Reload Window');
    await page.waitForTimeout(3000);
    await page.locator('.monaco-workbench').waitFor({ timeout: 90_000 });
    // the restored panel asks the (new) extension host for its run; the daemon this window started
    // stopped with the old one, so the panel says so until the daemon runs again
    const frame = webview();
    await frame.locator('h1, .error').first().waitFor({ timeout: 60_000 });
    if (await frame.locator('.error').count()) {
      await shot('13-dashboard-restored-daemon-down');
      // the page says what is wrong and offers what fixes it: Start Daemon, then the run by itself
      const text = await frame.locator('#root').innerText();
      if (/press Refresh/.test(text)) throw new Error(`the error page names a button it lacks: ${text}`);
      await frame.getByRole('button', { name: 'Start Daemon' }).click({ timeout: 10_000 });
    }
    await frame.locator('h1', { hasText: 'vscode-math' }).waitFor({ timeout: 30_000 });
    await frame.locator('.chart').first().waitFor({ timeout: 30_000 });
    await shot('13-dashboard-restored');
  });

  await step(
    'the dashboard follows a theme switch while open; the dashboard, the sidebar and the trajectory in both themes',
    async () => {
      /** Picks a colour theme as a person does (the picker writes workbench.colorTheme). */
      const theme = async (label) => {
        await palette('Preferences: Color Theme');
        const input = page.locator('.quick-input-widget input');
        await input.fill(label);
        await page.locator('.quick-input-list .monaco-list-row', { hasText: label }).first().waitFor();
        await page.keyboard.press('Enter');
      };
      const axisStroke = () => webview().locator('#charts').getAttribute('data-axis-stroke');
      try {
        const themes = [
          ['Dark Modern', 'vs-dark', 'dark'],
          ['Light Modern', 'vs', 'light'],
        ];
        // switch away from the theme the window has now first
        if ((await page.locator('.monaco-workbench.vs-dark').count()) > 0) themes.reverse();
        for (const [name, css, slug] of themes) {
          await webview().locator('.chart canvas').first().waitFor({ timeout: 30_000 });
          const before = await axisStroke();
          await theme(name);
          await waitFor(
            `the ${slug} theme`,
            async () => (await page.locator(`.monaco-workbench.${css}`).count()) > 0,
          );
          // the open dashboard redraws its charts in the new colours, without a reload
          await waitFor(
            `the charts in the ${slug} theme's colours`,
            async () => (await axisStroke()) !== before,
            15_000,
          ).catch(async (e) => {
            throw new Error(`${e.message}: axis colour stays ${before}`);
          });
          await page.waitForTimeout(500);
          await shot(`14-${slug}-dashboard`);
          const row = await rolloutRow();
          await shot(`14-${slug}-tree`);
          await row.click();
          const frame = webview();
          await frame.locator('section.call').first().waitFor({ timeout: 30_000 });
          await shot(`14-${slug}-trajectory-conversation`);
          await frame.locator('button[data-tab="training"]').click();
          await frame.locator('.tokens .tok.m1').first().waitFor({ timeout: 20_000 });
          await page.waitForTimeout(500);
          await shot(`14-${slug}-trajectory-tokens`);
          await palette('View: Close All Editors');
          await palette('Harness RL: Open Run Dashboard');
          await quickPick('vscode-math');
          await webview().locator('h1', { hasText: 'vscode-math' }).waitFor({ timeout: 30_000 });
        }
      } finally {
        await page.keyboard.press('Escape');
      }
    },
  );

  /** The status bar item of the run that trains now (its text is the run's name and step). */
  const runItem = (name) => page.locator('.statusbar-item', { hasText: name }).first();

  /** The status bar item's hover (shown after a delay; hover again until it is there). */
  async function statusHover(name, text) {
    const hover = page.locator('.monaco-hover, .workbench-hover', { hasText: text }).first();
    await waitFor(
      'the status bar hover',
      async () => {
        await page.mouse.move(0, 0);
        await runItem(name).hover();
        await hover.waitFor({ timeout: 3_000 });
        return true;
      },
      30_000,
    );
    return hover;
  }

  await step(
    "the status bar follows the training run: a click opens its dashboard, which counts the step's rollouts",
    async () => {
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
          /step 0: 0 of 2 rollouts finished · 2 running/.test(
            await frame.locator('#step-progress').innerText(),
          ),
        30_000,
      ).catch(async (e) => {
        throw new Error(`${e.message}; the header says: ${await frame.locator('header').innerText()}`);
      });
      await shot('15-status-bar-dashboard-progress');
    },
  );

  await step("the status bar's Stop Run… asks first and leaves the run running when cancelled", async () => {
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
  });

  await step('after Restart Daemon the run resumes and the status bar says so, not "no worker"', async () => {
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
  });

  await step('the dashboard after the daemon stops says so, with Start Daemon, not "running"', async () => {
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
  });

  await step("Stop Run… from the status bar stops the run; its step's group says cancelled", async () => {
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
  });

  await step(
    'a run that a validation threshold pauses shows in the status bar; Resume Run goes on',
    async () => {
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
    },
  );

  await step('a daemon that crashes is restarted by the extension', async () => {
    const pidOf = () =>
      readdirSync('/proc')
        .filter((d) => /^\d+$/.test(d))
        .find((d) => {
          try {
            const argv = readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0');
            return (
              argv.some((a) => a.endsWith('harness-rl.js')) &&
              argv.includes('daemon') &&
              argv.includes(String(ctx.daemonPort))
            );
          } catch {
            return false;
          }
        });
    const pid = pidOf();
    if (!pid) throw new Error('no daemon process started by the extension');
    process.kill(Number(pid), 'SIGKILL');
    await waitFor(
      'a new daemon process',
      () => {
        const next = pidOf();
        return next && next !== pid;
      },
      60_000,
    );
    await waitFor(
      'the restarted daemon to answer',
      async () => (await fetch(`http://127.0.0.1:${ctx.daemonPort}/api/health`)).ok,
      60_000,
    );
    await shot('14-daemon-restarted');
  });

  await step(
    'Make Tasks from This Repository…: the test command asked and remembered, progress and cancel; the Tasks view lists the tasks with their failing tests, the gold patch hidden until asked for',
    async () => {
      // a small Python repository as the open folder's code
      writeFileSync(
        join(ctx.ws, 'clamp.py'),
        'def clamp(x, lo, hi):\n    if x < lo:\n        return lo\n    if x > hi:\n        return hi\n    return x\n',
      );
      writeFileSync(
        join(ctx.ws, 'test_clamp.py'),
        'from clamp import clamp\ndef test_below():\n    assert clamp(-1, 0, 3) == 0\ndef test_above():\n    assert clamp(5, 0, 3) == 3\ndef test_inside():\n    assert clamp(2, 0, 3) == 2\n',
      );
      const pytest = `${join(root, '.cache/synth-python/venv/bin/python')} -m pytest`;
      const input = page.locator('.quick-input-widget input');
      await palette('Harness RL: Make Tasks from This Repository…');
      await input.waitFor({ state: 'visible' });
      await input.fill(pytest);
      await page.keyboard.press('Enter');
      await toast('mutants tried').first().waitFor({ timeout: 60_000 });
      await shot('15a-making-tasks');
      await toast(/\d+ tasks from \d+ mutants\./)
        .first()
        .waitFor({ timeout: 240_000 });
      const file = join(ctx.ws, '.harness-rl', 'tasks', 'tasks.jsonl');
      const tasks = readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      if (tasks.length === 0) throw new Error('no tasks were made');
      await palette('Harness RL: Focus on Tasks View');
      const pane = page
        .locator('.pane', { has: page.locator('.pane-header', { hasText: /^Tasks/ }) })
        .first();
      await expand(treeRow(pane, 'tasks.jsonl'));
      const task = tasks[0];
      await expand(treeRow(pane, task.instance_id));
      await treeRow(pane, task.FAIL_TO_PASS[0]).waitFor({ timeout: 20_000 });
      const patchShown = page.locator('.editor-instance .view-lines', { hasText: 'a/clamp.py' });
      if (await patchShown.count()) throw new Error('the gold patch shows before it is asked for');
      await treeRow(pane, 'Gold patch (hidden)').click();
      await patchShown.first().waitFor({ timeout: 20_000 });
      // a read-only document named after the task, not an untitled one to save
      await page.locator('.tabs-container .tab', { hasText: `${task.instance_id}.diff` }).waitFor();
      if (await page.locator('.tabs-container .tab.dirty').count())
        throw new Error('the gold patch opened as an unsaved file');
      await shot('15b-tasks-view-gold-patch');
      await palette('View: Close All Editors');
      // again: the command is remembered; cancelled while it runs, it keeps what it wrote
      await palette('Harness RL: Make Tasks from This Repository…');
      await input.waitFor({ state: 'visible' });
      if ((await input.inputValue()) !== pytest)
        throw new Error(`not remembered: ${await input.inputValue()}`);
      await page.keyboard.press('Enter');
      const progress = toast('mutants tried').first();
      await progress.waitFor({ timeout: 60_000 });
      await progress.getByRole('button', { name: 'Cancel' }).click();
      await toast('(cancelled)').first().waitFor({ timeout: 60_000 });
    },
  );
}
