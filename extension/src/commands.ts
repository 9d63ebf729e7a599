// Every command as a small factory in one table. `needsDaemon` commands get the client from
// ctx.requireClient(), which shows ONE clear message with a "Start Daemon" button when it is down.
import { writeFileSync } from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { Recording, Rollout, Run } from '../../daemon/protocol/entities';
import { count } from '../../webview/src/format';
import { type DaemonClient, errorText } from './client';
import type { Ctx } from './ctx';
import {
  adoptCandidate,
  type CandidateRef,
  compareEvaluations,
  compareWithParent,
  evaluateHarness,
  openCandidateDiff,
  openEvaluation,
  resumeOrStopEvolution,
} from './evaluate';
import { exportSamples } from './export';
import { importPastSessions } from './imports';
import { runNames } from './labels';
import { makeTasks } from './makeTasks';
import { DashboardPanel, TrajectoryPanel } from './panels';
import { parseRange } from './parse';
import { rolloutPicks, runPicks } from './picks';
import {
  exportRecording,
  rateRecording,
  setUpstreamKey,
  showSnippets,
  startRecording,
  stopRecording,
} from './recording';
import { startRun } from './runConfigs';
import type { RunsNode } from './runsItems';
import { attemptOutputText } from './workerLabels';

interface CommandSpec {
  /** whether the command talks to the daemon (then the client is passed first) */
  needsDaemon: boolean;
  run: (ctx: Ctx, client: DaemonClient | undefined, ...args: unknown[]) => unknown;
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

/** Run id from a tree node, a {kind:'runId'} argument from a webview, or a quick pick. */
async function runArg(
  client: DaemonClient,
  arg: unknown,
  filter?: (r: Run) => boolean,
): Promise<Run | undefined> {
  if (isObj(arg) && arg.kind === 'run' && isObj(arg.run)) return arg.run as Run;
  if (isObj(arg) && arg.kind === 'runId' && typeof arg.id === 'string') return client.getRun(arg.id);
  const runs = (await client.listRuns(undefined, 200)).items.filter(filter ?? (() => true));
  if (runs.length === 0) {
    void vscode.window.showInformationMessage('Harness RL: no matching runs.');
    return undefined;
  }
  return (await vscode.window.showQuickPick(runPicks(runs), { title: 'Run' }))?.r;
}

/** The steps of the groups of these rollouts: one page of groups per run they belong to. */
async function groupSteps(client: DaemonClient, rollouts: readonly Rollout[]): Promise<Map<string, number>> {
  const steps = new Map<string, number>();
  const runIds = [...new Set(rollouts.map((r) => r.run_id).filter((id): id is string => id !== null))];
  await Promise.all(
    runIds.slice(0, 5).map(async (id) => {
      const page = await client.runGroups(id, { limit: 200 }).catch(() => ({ items: [] }));
      for (const g of page.items) steps.set(g.id, g.step);
    }),
  );
  return steps;
}

async function rolloutArg(
  client: DaemonClient,
  arg: unknown,
): Promise<{ id: string; call_id: string | null } | undefined> {
  if (isObj(arg) && arg.kind === 'rollout' && isObj(arg.rollout))
    return { id: String(arg.rollout.id), call_id: null };
  if (isObj(arg) && arg.kind === 'rolloutId' && typeof arg.id === 'string')
    return { id: arg.id, call_id: typeof arg.call_id === 'string' ? arg.call_id : null };
  if (isObj(arg) && arg.kind === 'recording' && isObj(arg.recording))
    return { id: String((arg.recording as Recording).rollout_id), call_id: null };
  if (typeof arg === 'string') return { id: arg, call_id: null };
  const [recent, runs] = await Promise.all([
    client.listRollouts({ limit: 50 }).catch(() => ({ items: [] })),
    client.listRuns(undefined, 200).catch(() => ({ items: [] })),
  ]);
  const quick = vscode.window.createQuickPick<vscode.QuickPickItem & { id?: string }>();
  quick.title = 'Open trajectory: pick a rollout or type its id';
  quick.placeholder = 'rollout id';
  quick.items = rolloutPicks(recent.items, runNames(runs.items), await groupSteps(client, recent.items));
  return new Promise((resolve) => {
    quick.onDidAccept(() => {
      const id = quick.selectedItems[0]?.id ?? quick.value.trim();
      quick.hide();
      resolve(id ? { id, call_id: null } : undefined);
    });
    quick.onDidHide(() => {
      quick.dispose();
      resolve(undefined);
    });
    quick.show();
  });
}

/** Stopping a run cannot be undone: ask first (the status bar, the dashboard and the tree all come here). */
async function confirmStopRun(run: Run): Promise<boolean> {
  const pick = await vscode.window.showWarningMessage(
    `Stop run "${run.name}" at step ${run.step}?`,
    {
      modal: true,
      detail: 'Its queued and running rollouts are cancelled; a stopped run does not resume.',
    },
    'Stop Run',
  );
  return pick === 'Stop Run';
}

/** Stopping the daemon VS Code started while runs train pauses them: say so, and how to stop a run instead. */
async function confirmStopDaemon(ctx: Ctx): Promise<boolean> {
  const runs = ctx.trainingRuns();
  if (!ctx.daemon.owned || runs.length === 0) return true;
  const pick = await vscode.window.showWarningMessage(
    `Stop the Harness RL daemon? It is training ${runs.map((r) => `"${r}"`).join(', ')}.`,
    {
      modal: true,
      detail:
        'The run pauses and resumes from its last finished step when the daemon starts again. To end the run itself, use Stop Run….',
    },
    'Stop Daemon',
  );
  return pick === 'Stop Daemon';
}

export const COMMANDS: Record<string, CommandSpec> = {
  'harnessRl.startDaemon': { needsDaemon: false, run: (ctx) => ctx.startDaemon() },
  'harnessRl.stopDaemon': {
    needsDaemon: false,
    run: async (ctx) => {
      if (!(await confirmStopDaemon(ctx))) return;
      if (!ctx.daemon.owned && ctx.daemon.state === 'running') {
        void vscode.window.showInformationMessage(
          'Harness RL: this daemon was not started by VS Code; disconnected from it.',
        );
      }
      await ctx.daemon.stop();
    },
  },
  'harnessRl.restartDaemon': {
    needsDaemon: false,
    run: async (ctx) => {
      await ctx.daemon.stop();
      await ctx.startDaemon();
    },
  },
  'harnessRl.showLogs': { needsDaemon: false, run: (ctx) => ctx.log.show() },
  'harnessRl.setDaemonToken': {
    needsDaemon: false,
    run: async (ctx) => {
      const token = await vscode.window.showInputBox({
        title: 'Token of the daemon at harnessRl.daemonUrl (kept in VS Code secret storage)',
        password: true,
        ignoreFocusOut: true,
      });
      if (!token) return;
      const client = await ctx.daemon.setToken(token);
      if (client) void vscode.window.showInformationMessage(`Harness RL: connected to ${client.baseUrl}.`);
      else
        void vscode.window.showErrorMessage(
          'Harness RL: the daemon did not accept that token (see the logs).',
        );
    },
  },
  'harnessRl.startRun': { needsDaemon: true, run: (ctx, c, arg) => startRun(ctx, c!, arg) },
  'harnessRl.stopRun': {
    needsDaemon: true,
    run: async (ctx, c, arg) => {
      const run = await runArg(
        c!,
        arg,
        (r) => r.status === 'running' || r.status === 'created' || r.status === 'paused',
      );
      if (!run || !(await confirmStopRun(run))) return;
      try {
        await c!.stopRun(run.id);
        ctx.runsTree.refresh();
        void vscode.window.showInformationMessage(`Harness RL: run "${run.name}" stopped.`);
      } catch (err) {
        void vscode.window.showErrorMessage(`Harness RL: could not stop the run: ${errorText(err)}`);
      }
    },
  },
  'harnessRl.resumeRun': {
    needsDaemon: true,
    run: async (ctx, c, arg) => {
      const run = await runArg(c!, arg, (r) => r.status === 'paused' || r.status === 'stopped');
      if (!run) return;
      try {
        const resumed = await c!.resumeRun(run.id);
        ctx.runsTree.refresh();
        void vscode.window.showInformationMessage(
          `Harness RL: run "${run.name}" resumed from step ${resumed.step}.`,
        );
      } catch (err) {
        void vscode.window.showErrorMessage(`Harness RL: could not resume the run: ${errorText(err)}`);
      }
    },
  },
  'harnessRl.showTrainingRun': {
    needsDaemon: true,
    run: async (ctx, c) => {
      // the run the status bar shows; with none training, the picker
      const id = ctx.trainingRunId();
      const run = await runArg(c!, id ? { kind: 'runId', id } : undefined);
      if (run) DashboardPanel.show(ctx, run.id, run.name);
    },
  },
  'harnessRl.openDashboard': {
    needsDaemon: true,
    run: async (ctx, c, arg) => {
      const run = await runArg(c!, arg);
      if (run) DashboardPanel.show(ctx, run.id, run.name);
    },
  },
  'harnessRl.startRecording': { needsDaemon: false, run: (ctx) => startRecording(ctx) },
  'harnessRl.stopRecording': {
    needsDaemon: false,
    run: (ctx, _c, arg) =>
      stopRecording(
        ctx,
        isObj(arg) && arg.kind === 'recording' ? (arg as { recording: Recording }) : undefined,
      ),
  },
  'harnessRl.rateRecording': {
    needsDaemon: false,
    run: (ctx, _c, arg) =>
      rateRecording(
        ctx,
        isObj(arg) && arg.kind === 'recording' ? (arg as { recording: Recording }) : undefined,
      ),
  },
  'harnessRl.exportRecording': {
    needsDaemon: false,
    run: (ctx, _c, arg) =>
      exportRecording(
        ctx,
        isObj(arg) && arg.kind === 'recording' ? (arg as { recording: Recording }) : undefined,
      ),
  },
  'harnessRl.importSessions': { needsDaemon: true, run: (ctx, c) => importPastSessions(ctx, c!) },
  'harnessRl.showRecordingSnippets': { needsDaemon: false, run: (ctx) => showSnippets(ctx) },
  'harnessRl.setUpstreamKey': { needsDaemon: false, run: (ctx) => setUpstreamKey(ctx) },
  'harnessRl.openTrajectory': {
    needsDaemon: true,
    run: async (ctx, c, arg) => {
      const target = await rolloutArg(c!, arg);
      if (target) await TrajectoryPanel.show(ctx, target.id, target.call_id);
    },
  },
  'harnessRl.openAttemptOutput': {
    needsDaemon: true,
    run: async (ctx, c, arg) => {
      const attempt = isObj(arg) && arg.kind === 'attempt' && isObj(arg.attempt) ? arg.attempt : undefined;
      if (typeof attempt?.id !== 'string') return;
      const worker = typeof attempt.worker === 'string' ? attempt.worker : null;
      try {
        const out = await c!.attemptOutput(attempt.id);
        await ctx.outputs.show(
          `${attempt.id}.log`,
          attemptOutputText({ id: attempt.id, worker }, out),
          'log',
        );
      } catch (err) {
        void vscode.window.showWarningMessage(
          `Harness RL: no output of attempt ${attempt.id}: ${errorText(err)}`,
        );
      }
    },
  },
  'harnessRl.exportSamples': {
    needsDaemon: true,
    run: async (_ctx, c, arg) => {
      const run = await runArg(c!, arg);
      if (!run) return;
      const target = await vscode.window.showSaveDialog({
        defaultUri: vscode.Uri.file(
          path.join(vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? '', `${run.name}.samples.jsonl`),
        ),
        filters: { JSONL: ['jsonl'] },
      });
      if (!target) return;
      await vscode.window.withProgress(
        {
          location: vscode.ProgressLocation.Notification,
          title: `Harness RL: exporting samples of ${run.name}`,
          cancellable: true,
        },
        async (progress, token) => {
          try {
            const result = await exportSamples(
              c!,
              run,
              (n) => progress.report({ message: `${n} rollouts` }),
              token,
            );
            writeFileSync(target.fsPath, result.text);
            void vscode.window.showInformationMessage(
              `Harness RL: wrote ${count(result.lines, 'sample')} to ${target.fsPath}.`,
            );
          } catch (err) {
            void vscode.window.showErrorMessage(`Harness RL: export failed: ${errorText(err)}`);
          }
        },
      );
    },
  },
  'harnessRl.copyRolloutUrl': {
    needsDaemon: true,
    run: async (_ctx, c, arg) => {
      const target = await rolloutArg(c!, arg);
      if (!target) return;
      const url = c!.rolloutUrl(target.id);
      await vscode.env.clipboard.writeText(url);
      void vscode.window.showInformationMessage(`Copied ${url}`);
    },
  },
  'harnessRl.refresh': {
    needsDaemon: false,
    run: (ctx) => ctx.refreshViews(),
  },
  'harnessRl.evaluateHarness': {
    needsDaemon: true,
    run: (ctx, c, arg) => evaluateHarness(ctx, c!, arg),
  },
  'harnessRl.openEvaluation': { needsDaemon: true, run: (ctx, c, arg) => openEvaluation(ctx, c!, arg) },
  'harnessRl.compareEvaluations': {
    needsDaemon: true,
    run: (ctx, c, arg) => compareEvaluations(ctx, c!, arg),
  },
  'harnessRl.compareWithParent': { needsDaemon: true, run: (ctx, _c, arg) => compareWithParent(ctx, arg) },
  'harnessRl.openCandidateDiff': {
    needsDaemon: true,
    run: async (ctx, _c, arg) => {
      try {
        await openCandidateDiff((e, h) => ctx.candidateFiles.files(e, h), arg as CandidateRef);
      } catch (err) {
        void vscode.window.showErrorMessage(`Harness RL: could not open the diff: ${errorText(err)}`);
      }
    },
  },
  'harnessRl.resumeEvolution': {
    needsDaemon: true,
    run: (ctx, c, arg) => resumeOrStopEvolution(ctx, c!, arg, 'resume'),
  },
  'harnessRl.stopEvolution': {
    needsDaemon: true,
    run: (ctx, c, arg) => resumeOrStopEvolution(ctx, c!, arg, 'stop'),
  },
  'harnessRl.adoptCandidate': {
    needsDaemon: true,
    run: async (ctx, c, arg) => {
      // From the tree: the candidate node; from the palette or a link: {evolutionId, hash}.
      const node = arg as
        | { candidate?: { hash: string; parent: string | null }; detail?: { id: string } }
        | undefined;
      const ref: CandidateRef | undefined =
        node?.candidate && node.detail
          ? { evolutionId: node.detail.id, hash: node.candidate.hash, parent: node.candidate.parent }
          : (arg as CandidateRef | undefined);
      if (!ref?.evolutionId || !ref.hash) {
        void vscode.window.showInformationMessage(
          'Harness RL: pick a candidate in the Evolution view to adopt it.',
        );
        return;
      }
      try {
        await adoptCandidate(c!, (e, h) => ctx.candidateFiles.files(e, h), ref);
      } catch (err) {
        void vscode.window.showErrorMessage(`Harness RL: could not adopt the candidate: ${errorText(err)}`);
      }
    },
  },
  'harnessRl.filterRollouts': {
    needsDaemon: false,
    run: async (ctx) => {
      const status = await vscode.window.showQuickPick(
        ['any', 'queued', 'running', 'succeeded', 'failed', 'cancelled'],
        { title: 'Filter rollouts: status' },
      );
      if (!status) return;
      const range = await vscode.window.showInputBox({
        title: 'Filter rollouts: reward range (e.g. "0.5..", "..0", "0..1"; empty = any)',
        value: '',
        validateInput: (v) =>
          parseRange(v) ? undefined : 'use min..max with numbers (either side may be empty)',
      });
      if (range === undefined) return;
      const r = parseRange(range)!;
      ctx.runsTree.setFilter({
        status: status === 'any' ? undefined : (status as 'queued'),
        min_reward: r.min,
        max_reward: r.max,
      });
    },
  },
  'harnessRl.makeTasks': {
    needsDaemon: false,
    run: (ctx) => makeTasks(ctx.tasksTree, ctx.extension.workspaceState, ctx.log),
  },
  'harnessRl.openTaskSet': {
    needsDaemon: false,
    run: async (ctx) => {
      const [file] =
        (await vscode.window.showOpenDialog({ filters: { 'Task set': ['jsonl'] }, canSelectMany: false })) ??
        [];
      if (file) await ctx.tasksTree.addSet(file.fsPath);
    },
  },
  'harnessRl.showGoldPatch': { needsDaemon: false, run: (ctx, _c, arg) => ctx.goldPatches.show(arg) },
  'harnessRl.loadMore': {
    needsDaemon: false,
    run: async (ctx, _c, arg) => {
      if (isObj(arg) && arg.kind === 'more') await ctx.runsTree.loadMore(arg as RunsNode & { kind: 'more' });
    },
  },
};

/** Runs one command of the table (main.ts registers every contributed id to call this). */
export async function runCommand(ctx: Ctx, id: string, args: unknown[]): Promise<unknown> {
  const spec = COMMANDS[id];
  if (!spec) throw new Error(`unknown command ${id}`);
  try {
    const client = spec.needsDaemon ? await ctx.requireClient() : undefined;
    if (spec.needsDaemon && !client) return undefined;
    return await spec.run(ctx, client, ...args);
  } catch (err) {
    ctx.log.appendLine(`${id} failed: ${errorText(err)}`);
    void vscode.window.showErrorMessage(`Harness RL: ${errorText(err)}`);
    return undefined;
  }
}
