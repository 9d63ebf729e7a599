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
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { activationAndDaemonStart } from './checks/activation.mjs';
import { configDiagnostics } from './checks/configs.mjs';
import { daemonCrash } from './checks/daemon.mjs';
import { dashboardRestoredAndThemed } from './checks/dashboard.mjs';
import { evolutionAndEvaluations } from './checks/evolution.mjs';
import { recordingsAndExports } from './checks/recordings.mjs';
import { runsAndTrajectories } from './checks/runs.mjs';
import { sidebarAndNodes } from './checks/sidebar.mjs';
import { statusBarAndDaemonLifecycle } from './checks/status-bar.mjs';
import { makeTasks } from './checks/tasks.mjs';
import { setup } from './lib/code-server.mjs';
import {
  artifacts,
  children,
  ctx,
  figures,
  log,
  markFailed,
  options,
  outcome,
  startChecks,
} from './lib/harness.mjs';

// In this order: later checks use what earlier ones made (the run, its rollout, the recording, the
// evolution's workspace copy) and the daemon's state they left.
const checks = [
  activationAndDaemonStart,
  sidebarAndNodes,
  configDiagnostics,
  runsAndTrajectories,
  recordingsAndExports,
  evolutionAndEvaluations,
  dashboardRestoredAndThemed,
  statusBarAndDaemonLifecycle,
  daemonCrash,
  makeTasks,
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
