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
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setup } from './lib/code-server.mjs';
import { api, evolutionEnd, tinyEvolveConfig } from './lib/daemon.mjs';
import {
  artifacts,
  children,
  ctx,
  figures,
  fileLines,
  findFiles,
  freePort,
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
import {
  collapse,
  evolutionPane,
  expand,
  expectRollouts,
  rolloutRow,
  runsPane,
  treeRow,
} from './lib/sidebar.mjs';
import { palette, pickerLabels, quickPick, saveAs, toast, webview } from './lib/workbench.mjs';

// In this order: later checks use what earlier ones made (the run, its rollout, the recording, the
// evolution's workspace copy) and the daemon's state they left.
const checks = [remainingChecks];

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
  await step('the palette lists the Harness RL commands (before activation: lazy)', async () => {
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
    if (ours.length < Math.min(8, titles.size))
      throw new Error(`too few of our commands: ${rows.join(' | ')}`);
    for (const c of pkg.contributes.commands.filter((c) => hidden.has(c.command))) {
      if (rows.includes(`Harness RL: ${c.title}`))
        throw new Error(`internal command ${c.title} is in the palette`);
    }
    figures.palette_commands_seen = ours.length;
    // what cannot apply now stays out: nothing to stop yet
    for (const title of ['Stop Daemon', 'Restart Daemon', 'Stop Recording'])
      if (rows.includes(`Harness RL: ${title}`)) throw new Error(`${title} is offered with nothing to stop`);
    await page.keyboard.press('Escape');
  });

  await step(
    'Start Daemon with a harness-rl that is not there fails at once; Open Settings leads to the path, fixed there',
    async () => {
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
      const setting = page
        .locator('.settings-editor .setting-item-contents', { hasText: 'Cli Path' })
        .first();
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
    },
  );

  await step(
    'a daemon started outside VS Code is picked up without a click, and let go when it stops',
    async () => {
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
    },
  );

  await step(
    'a command that needs the daemon says so once, with a Start Daemon button that starts it',
    async () => {
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
    },
  );

  await step('activation is lazy and fast (measured in the extension host)', async () => {
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
  });

  await step(
    'the sidebar shows the Runs and Recordings views; an empty Runs view offers Start Run…',
    async () => {
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
    },
  );

  await step(
    'the Nodes view says how to add GPU nodes, then shows the node agent a run connects to',
    async () => {
      const pane = page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'Nodes' }) }).first();
      await pane
        .locator('.welcome-view-content', { hasText: 'No GPU nodes yet' })
        .waitFor({ timeout: 20_000 });
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
      const hover = page.locator('.monaco-hover, .workbench-hover', { hasText: 'inference node' }).first();
      // its hover (shown after a delay; a row redrawn by a newer report closes it: hover again)
      await waitFor(
        "the node's hover",
        async () => {
          await page.mouse.move(0, 0);
          await row.hover();
          await hover.waitFor({ timeout: 3_000 });
          return true;
        },
        30_000,
      );
      const text = (await hover.textContent()) ?? '';
      if (!text.includes(nodeRun.id)) throw new Error(`the hover does not name the run:\n${text}`);
      await shot('04b-nodes');
      await page.mouse.move(0, 0);
      await api('POST', `/api/runs/${nodeRun.id}/stop`, {});
    },
  );

  await step(
    "the Nodes view shows a run's Ray workers by node, live, and a worker's attempt opens its output",
    async () => {
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
      // what a Ray worker actor does (workers/python): claim under its Ray name, stream its output
      const worker = 'ray:127.0.0.1:0123456789ab:w0';
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
    },
  );

  await step(
    'a run config shows its problems as soon as it opens, a missing tasks file too; Start Run… lists run configs only',
    async () => {
      const open = async (name) => {
        await page.keyboard.press('Escape');
        await page.keyboard.press('Control+P');
        await page.locator('.quick-input-widget input').waitFor({ state: 'visible' });
        await page.keyboard.type(name, { delay: 10 });
        await page.locator('.quick-input-list .monaco-list-row', { hasText: name }).first().click();
        await page.locator('.tab.active', { hasText: name }).waitFor({ timeout: 10_000 });
      };
      for (const name of ['bad.run.yaml', 'missing.run.yaml']) {
        await open(name);
        await waitFor(
          `squiggles in ${name}`,
          async () => (await page.locator('.squiggly-error').count()) > 0,
          20_000,
        );
      }
      // the missing tasks file's mark says so where it is written
      await page.locator('.view-lines span', { hasText: 'nope.jsonl' }).first().hover();
      await page
        .locator('.monaco-hover', { hasText: 'no file nope.jsonl' })
        .first()
        .waitFor({ timeout: 15_000 });
      await shot('05a-diagnostics-on-open');
      await palette('Harness RL: Start Run…');
      await page
        .locator('.quick-input-list .monaco-list-row', { hasText: 'math.run.yaml' })
        .first()
        .waitFor();
      const rows = await page.locator('.quick-input-list .monaco-list-row').allInnerTexts();
      if (rows.some((r) => r.includes('harness-rl.schema.json')))
        throw new Error(`the picker offers the JSON Schema as a run config: ${rows.join(' | ')}`);
      await page.keyboard.press('Escape');
      await palette('View: Close All Editors');
    },
  );

  await step('a run config with mistakes shows diagnostics on its lines', async () => {
    await palette('Harness RL: Start Run…');
    await quickPick('bad.run.yaml');
    await toast('problem').first().waitFor({ timeout: 20_000 });
    await toast('problem').getByRole('button', { name: 'Show Problems' }).click();
    const rows = page.locator('.markers-panel .monaco-list-row');
    await rows.first().waitFor({ timeout: 20_000 });
    const text = (await rows.allInnerTexts()).join('\n');
    for (const want of ['algorithm.n', 'algorithm.advantage', 'shedule']) {
      if (!text.includes(want)) throw new Error(`Problems lacks ${want}:\n${text}`);
    }
    if (!/\[Ln 7|\(7,|Ln 7/.test(text) && !(await page.locator('.squiggly-error').count()))
      throw new Error('no squiggles or line numbers');
    await shot('05-diagnostics');
    await palette('View: Close All Editors');
  });

  await step(
    'Start Run… from the palette runs a short run on the reference engine; the dashboard shows it',
    async () => {
      await palette('Harness RL: Start Run…');
      await quickPick('math.run.yaml');
      const runs = await waitFor(
        'the run to exist',
        async () => (await api('GET', '/api/runs')).items.find((r) => r.name === 'vscode-math'),
        30_000,
      );
      ctx.run = runs;
      // the sidebar is to follow the run live: open the run's row now and never refresh it
      await expand(runsPane().locator('.monaco-list-row', { hasText: 'vscode-math' }).first());
      ctx.runWhenExpanded = await api('GET', `/api/runs/${runs.id}`);
      ctx.groupsWhenExpanded = (await api('GET', `/api/runs/${runs.id}/groups`)).items.length;
      // and the first step's group, opened while its rollouts are queued or running: the sidebar is
      // to follow it to the end (rollout events were undone when the group redrew)
      const first = await waitFor(
        'the first group',
        async () => (await api('GET', `/api/runs/${runs.id}/groups`)).items.find((g) => g.step === 0),
        30_000,
      );
      await expand(treeRow(runsPane(), 'step 0'));
      await expand(treeRow(runsPane(), first.task_input.id));
      const { rollouts: early } = await api('GET', `/api/groups/${first.id}`);
      ctx.earlyGroup = first;
      figures.early_group_open_rollouts = early.filter(
        (r) => r.status === 'queued' || r.status === 'running',
      ).length;
      // no worker is started by hand: the daemon runs the run's harness command itself
      const frame = webview();
      await frame.locator('h1', { hasText: 'vscode-math' }).waitFor({ timeout: 30_000 });
      const done = await waitFor(
        'a succeeded rollout with llm calls',
        async () => {
          const page1 = await api('GET', `/api/rollouts?run_id=${runs.id}&status=succeeded&limit=5`);
          return page1.items[0];
        },
        180_000,
        1000,
      ).catch(async (e) => {
        const workers = await api('GET', `/api/runs/${runs.id}/workers`).catch(() => null);
        throw new Error(`${e.message}\nworkers: ${JSON.stringify(workers)}`);
      });
      ctx.rollout = done;
      await waitFor(
        'a metrics chart',
        async () => (await frame.locator('.chart canvas').count()) > 0,
        180_000,
        1000,
      ).catch(() => log('no metrics yet (the run has not finished a step); continuing'));
      await shot('06-dashboard');
      await palette('View: Close All Editors');
    },
  );

  await step(
    'the sidebar follows the run live: every step, group and reward shows up without a refresh',
    async () => {
      const was = ctx.runWhenExpanded;
      if (was.status !== 'running' && was.status !== 'created')
        throw new Error(`the run was already ${was.status} when its row was expanded`);
      figures.groups_when_expanded = ctx.groupsWhenExpanded;
      const run = await waitFor(
        'the run to finish',
        async () => {
          const r = await api('GET', `/api/runs/${ctx.run.id}`);
          return r.status === 'finished' ? r : null;
        },
        240_000,
        1000,
      );
      const tree = runsPane();
      const runRow = tree.locator('.monaco-list-row', { hasText: 'vscode-math' }).first();
      await waitFor(
        'the run row to say it finished',
        async () => /finished/.test((await runRow.textContent()) ?? ''),
        20_000,
      );
      await expectRollouts(tree, ctx.earlyGroup);
      await collapse(treeRow(tree, ctx.earlyGroup.task_input.id));
      await collapse(treeRow(tree, 'step 0'));
      const groups = (await api('GET', `/api/runs/${run.id}/groups`)).items;
      const steps = [...new Set(groups.map((g) => g.step))].sort((a, b) => a - b);
      if (groups.length <= ctx.groupsWhenExpanded) throw new Error('no group was made after the row opened');
      for (const step of steps) await treeRow(tree, `step ${step}`).waitFor({ timeout: 20_000 });
      // the last step's group: named by its task, complete, its rollouts numbered with the reward first
      const last = groups.find((g) => g.step === steps.at(-1));
      await expand(treeRow(tree, `step ${last.step}`));
      const groupRow = treeRow(tree, last.task_input.id);
      await waitFor(
        'the group row to say complete',
        async () => /complete/.test((await groupRow.textContent()) ?? ''),
        20_000,
      );
      await expand(groupRow);
      await expectRollouts(tree, last);
      await shot('06b-tree-live');
      // leave only the run open (rollout numbers repeat from group to group)
      await collapse(groupRow);
      await collapse(treeRow(tree, `step ${last.step}`));
    },
  );

  await step(
    'Filter Rollouts… keeps the steps and groups holding a match, says so at the top, and clears',
    async () => {
      const tree = runsPane();
      const stepRows = async () =>
        (await tree.locator('.monaco-list-row .label-name').allTextContents())
          .map((t) => t.trim())
          .filter((t) => /^step \d+$/.test(t))
          .sort();
      const stepsOf = (groups) => [...new Set(groups.map((g) => `step ${g.step}`))].sort();
      const all = stepsOf((await api('GET', `/api/runs/${ctx.run.id}/groups`)).items);
      const matching = (await api('GET', `/api/runs/${ctx.run.id}/groups?status=succeeded&min_reward=0.5`))
        .items;
      const filter = async (status, range) => {
        await palette('Harness RL: Filter Rollouts…');
        await quickPick(status);
        await page
          .locator('.quick-input-widget .quick-input-title', { hasText: 'reward range' })
          .waitFor({ timeout: 10_000 });
        await page.locator('.quick-input-widget input').fill(range);
        await page.keyboard.press('Enter');
      };
      await filter('succeeded', '0.5..');
      await treeRow(tree, 'Filter: status=succeeded, reward≥0.5').waitFor({ timeout: 20_000 });
      const want = stepsOf(matching);
      await waitFor(
        `only ${want.join(', ') || 'no steps'} under the run`,
        async () => JSON.stringify(await stepRows()) === JSON.stringify(want),
        20_000,
      );
      if (want.length === 0) await treeRow(tree, 'No groups match the filter').waitFor({ timeout: 10_000 });
      figures.filtered_steps = `${want.length}/${all.length}`;
      await shot('06c-tree-filtered');
      await filter('any', '');
      await waitFor(
        'every step back and the filter row gone',
        async () =>
          JSON.stringify(await stepRows()) === JSON.stringify(all) &&
          (await tree.locator('.label-name', { hasText: /^Filter: / }).count()) === 0,
        20_000,
      );
    },
  );

  await step('a trajectory opens from the sidebar and its webview shows the token view', async () => {
    const row = await rolloutRow();
    await shot('07-tree');
    await row.click();
    const frame = webview();
    await frame.locator('section.call').first().waitFor({ timeout: 30_000 });
    await shot('08-trajectory-conversation');
    await frame.locator('button[data-tab="training"]').click();
    await frame.locator('.tokens .tok.m1').first().waitFor({ timeout: 20_000 });
    const trained = await frame.locator('.tokens .tok.m1').count();
    const heat = await frame.locator('.tokens .tok.m1[data-heat]').count();
    if (trained === 0) throw new Error('no trained (mask 1) tokens shown');
    if (heat === 0) throw new Error('no logprob heat map on trained tokens');
    figures.trajectory_trained_tokens = trained;
    // the token details from the keyboard
    await frame.locator('.tokens').first().focus();
    await page.keyboard.press('End');
    const details = await frame.locator('#token-details').innerText();
    if (!/token\s+#\d+ of sample 0/.test(details))
      throw new Error(`no token details from the keyboard: ${details}`);
    await shot('09-trajectory-tokens');
    await palette('View: Close All Editors');
  });

  await step('a recording captures a curl to $OPENAI_BASE_URL from an integrated terminal', async () => {
    // The default upstream, the built-in engine: with no run training, the daemon's standby serves.
    await palette('Harness RL: Start Recording');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible' });
    await input.fill('vscode test session');
    await page.keyboard.press('Enter');
    await toast('recording "vscode test session"').first().waitFor({ timeout: 20_000 });
    const rec = await waitFor('the recording', async () =>
      (await api('GET', '/api/recordings')).find((r) => r.name === 'vscode test session'),
    );
    await shot('10-recording');
    // the snippets: a read-only webview with Copy buttons, the key masked; closing it asks nothing
    await palette('Harness RL: Show Recording Snippets');
    const snippets = webview();
    await snippets.locator('.snippet button.copy').first().waitFor({ timeout: 20_000 });
    if (!(await snippets.locator('h1').innerText()).includes('vscode test session'))
      throw new Error('the snippets do not name the recording');
    if (!(await snippets.locator('.snippet').first().innerText()).includes('OPENAI_API_KEY=••••'))
      throw new Error('the recording key is not masked in the snippets');
    await shot('10b-recording-snippets');
    await palette('View: Close All Editors');
    if (await page.locator('.monaco-dialog-box').count())
      throw new Error('closing the snippets asks something');
    await palette('Terminal: Create New Terminal');
    await page.locator('.terminal-wrapper.active, .terminal.xterm').first().waitFor({ timeout: 20_000 });
    await page.waitForTimeout(1500);
    await page.locator('.terminal.xterm').first().click();
    await page.keyboard.type(
      `curl -s "$OPENAI_BASE_URL/chat/completions" -H "Authorization: Bearer $OPENAI_API_KEY" -H 'content-type: application/json' -d '{"model":"reference","messages":[{"role":"user","content":"2+3="}],"max_tokens":4}'; echo`,
    );
    await page.keyboard.press('Enter');
    const detail = await waitFor(
      'the call in the recording',
      async () => {
        const d = await api('GET', `/api/recordings/${rec.id}`);
        if (d.calls.length > 0 && d.calls.every((c) => c.status !== 'ok'))
          throw new Error(`the recorded call failed: ${JSON.stringify(d.calls.at(-1).error)}`);
        return d.calls.some((c) => c.status === 'ok') ? d : null;
      },
      30_000,
      500,
    );
    figures.recorded_calls = detail.calls.length;
    await page.waitForTimeout(500);
    await shot('11-terminal-curl');
    await palette('Harness RL: Stop Recording');
    await waitFor(
      'the recording to stop',
      async () => (await api('GET', '/api/recordings')).find((r) => r.id === rec.id)?.status === 'stopped',
      20_000,
    );
    // rate it from the notification: thumbs up → reward 1 on the recording's rollout
    await toast('stopped').getByRole('button', { name: 'Rate It' }).click();
    await quickPick('Good');
    await waitFor(
      'the reward',
      async () => (await api('GET', `/api/rollouts/${rec.rollout_id}`)).reward === 1,
      20_000,
    );
    await shot('12-rated');
    ctx.recording = rec;
  });

  await step(
    "Rate Recording… from the palette replaces the rating with a person's thumbs down, then up",
    async () => {
      const rec = ctx.recording;
      const before = (await api('GET', `/api/rollouts/${rec.rollout_id}`)).rewards.length;
      for (const [pick, value, n] of [
        ['Bad', 0, before + 1],
        ['Good', 1, before + 2],
      ]) {
        await palette('Harness RL: Rate Recording…');
        await quickPick(rec.name); // no recording is active any more: the command asks which one
        await quickPick(pick);
        const detail = await waitFor(`the reward ${value}`, async () => {
          const d = await api('GET', `/api/rollouts/${rec.rollout_id}`);
          return d.rewards.length === n && d.reward === value ? d : null;
        });
        const last = [...detail.rewards].sort((a, b) => a.created_at.localeCompare(b.created_at)).at(-1);
        if (last.value !== value || last.source !== 'human')
          throw new Error(`the latest reward is not a human ${value}: ${JSON.stringify(detail.rewards)}`);
        await toast(`rated ${value}`).first().waitFor({ timeout: 20_000 });
      }
      figures.recording_rewards = before + 2;
    },
  );

  await step("Export Recording… as training samples writes the recording's samples as JSONL", async () => {
    const rec = ctx.recording;
    const out = join(ctx.ws, 'recording.samples.jsonl');
    await palette('Harness RL: Export Recording…');
    await quickPick(rec.name);
    await quickPick('Training samples (JSONL)');
    await saveAs(out);
    const lines = await fileLines('the recording samples file', out, 30_000);
    await toast('wrote 1 sample to').first().waitFor({ timeout: 20_000 });
    const detail = await api('GET', `/api/rollouts/${rec.rollout_id}`);
    const calls = detail.llm_calls.filter((c) => c.status === 'ok' && c.prompt_ids && c.response_ids);
    if (calls.length !== 1) throw new Error(`expected the one recorded curl call, got ${calls.length}`);
    const { summary } = JSON.parse(lines.at(-1));
    const want = { trajectories: 1, samples: 1, prefix_breaks: 0, excluded: 0 };
    for (const [k, v] of Object.entries(want))
      if (summary?.[k] !== v) throw new Error(`summary.${k} is ${summary?.[k]}, not ${v}: ${lines.at(-1)}`);
    if (lines.length !== 2) throw new Error(`expected one sample and the summary, got ${lines.length} lines`);
    const sample = JSON.parse(lines[0]);
    const [call] = calls;
    const ids = [...call.prompt_ids, ...call.response_ids];
    const mask = [...call.prompt_ids.map(() => 0), ...call.response_ids.map(() => 1)];
    if (sample.rollout_id !== rec.rollout_id || sample.group_id !== (detail.group_id ?? rec.rollout_id))
      throw new Error(`the sample is not of the recording's rollout: ${lines[0].slice(0, 200)}`);
    if (sample.index !== 0) throw new Error(`sample index ${sample.index}`);
    if (JSON.stringify(sample.input_ids) !== JSON.stringify(ids))
      throw new Error("input_ids are not the call's prompt + response token ids");
    if (JSON.stringify(sample.loss_mask) !== JSON.stringify(mask))
      throw new Error(`loss_mask is not 0 over the prompt, 1 over the response: ${sample.loss_mask}`);
    for (const k of ['advantages', 'old_logprobs', 'loss_weights']) {
      if (!Array.isArray(sample[k]) || sample[k].length !== ids.length)
        throw new Error(`${k} does not have one entry per token`);
    }
    if (summary.mask_tokens !== call.response_ids.length)
      throw new Error(
        `summary.mask_tokens ${summary.mask_tokens} ≠ ${call.response_ids.length} response tokens`,
      );
    figures.recording_sample_tokens = ids.length;
  });

  await step('Export Recording… as a task appends one task line to the chosen tasks JSONL', async () => {
    const rec = ctx.recording;
    // a hand-written tasks file whose last line has no newline: the task must start a line of its own
    const file = join(ctx.ws, 'handmade-tasks.jsonl');
    const first = '{"id":"by-hand","prompt":"2+2="}';
    writeFileSync(file, first);
    const exportTask = async (pickFile) => {
      await palette('Harness RL: Export Recording…');
      await quickPick(rec.name);
      await quickPick('A task for a training run');
      await pickFile();
    };
    const lineOf = (text) => {
      const task = JSON.parse(text);
      const want = [
        ['wire_api', 'chat'],
        ['source.recording_id', rec.id],
        ['source.rollout_id', rec.rollout_id],
        ['source.name', rec.name],
        ['reward', 1],
      ];
      for (const [k, v] of want) {
        const got = k.split('.').reduce((o, key) => o?.[key], task);
        if (got !== v)
          throw new Error(`task ${k} is ${JSON.stringify(got)}, not ${JSON.stringify(v)}: ${text}`);
      }
      if (JSON.stringify(task.messages) !== JSON.stringify([{ role: 'user', content: '2+3=' }]))
        throw new Error(`task messages are not the curl's prompt: ${JSON.stringify(task.messages)}`);
      return task;
    };
    await exportTask(() => quickPick('handmade-tasks.jsonl'));
    const lines = await waitFor('the appended task', async () => {
      const l = readFileSync(file, 'utf8').split('\n');
      return l.length >= 3 ? l : null;
    });
    if (lines.length !== 3 || lines[0] !== first || lines[2] !== '')
      throw new Error(`expected the hand-written line, the task and a final newline:\n${lines.join('\n')}`);
    lineOf(lines[1]);
    await toast('appended the task').first().waitFor({ timeout: 20_000 });
    // a new tasks file through the save dialog
    const fresh = join(ctx.ws, 'recorded-tasks.jsonl');
    await exportTask(async () => {
      await quickPick('New tasks file');
      await saveAs(fresh);
    });
    const text = await waitFor('the new tasks file', async () =>
      existsSync(fresh) ? readFileSync(fresh, 'utf8') : null,
    );
    const freshLines = text.split('\n');
    if (freshLines.length !== 2 || freshLines[1] !== '') throw new Error(`expected one task line:\n${text}`);
    lineOf(freshLines[0]);
    await shot('12b-recording-exported');
  });

  await step(
    'Import Past Sessions… imports the Claude Code session with progress; it shows in Recordings; again, nothing new',
    async () => {
      await palette('Harness RL: Import Past Sessions…');
      await quickPick('Claude Code');
      await toast('imported 1 Claude Code session (3 calls)').first().waitFor({ timeout: 60_000 });
      const imported = (await api('GET', '/api/recordings')).filter((r) => r.upstream?.kind === 'import');
      if (imported.length !== 1) throw new Error(`expected one imported recording, got ${imported.length}`);
      const detail = await api('GET', `/api/recordings/${imported[0].id}`);
      if (detail.calls.map((c) => c.token_source).join() !== 'import,import,import')
        throw new Error(`the imported calls: ${detail.calls.map((c) => c.token_source)}`);
      const pane = page
        .locator('.pane', { has: page.locator('.pane-header', { hasText: 'Recordings' }) })
        .first();
      if (!(await pane.isVisible()))
        await page.locator('.activitybar [aria-label*="Harness RL"]').first().click();
      await pane
        .locator('.monaco-list-row', { hasText: 'Fix the cart total rounding' })
        .first()
        .waitFor({ timeout: 20_000 });
      await shot('import-sessions');
      await palette('Harness RL: Import Past Sessions…');
      await quickPick('Claude Code');
      await toast('are imported already').first().waitFor({ timeout: 30_000 });
    },
  );

  await step('Export Samples… writes the training samples of the run as JSONL', async () => {
    const out = join(ctx.ws, 'vscode-math.samples.jsonl');
    await palette('Harness RL: Export Samples…');
    await quickPick('vscode-math');
    await saveAs(out);
    const lines = await fileLines('the samples file', out, 60_000);
    const summary = JSON.parse(lines.at(-1)).summary;
    if (!summary || summary.samples !== lines.length - 1 || summary.samples === 0) {
      throw new Error(`unexpected export: ${lines.at(-1)}`);
    }
    figures.exported_samples = summary.samples;
  });

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
