// *Make Tasks from This Repository…*: asks for the test command (remembered per folder), runs
// `harness-rl tasks synth` on the open folder with progress and cancel, and shows the task set in the
// Tasks view. The tasks go to <folder>/.harness-rl/tasks/tasks.jsonl.
import { spawn } from 'node:child_process';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { resolveCli } from './daemon';
import type { TasksTree } from './tasksTree';

const PROGRESS = /mutants tried (\d+)\/(\d+), kept (\d+), about (\d+) s left/;

/** The test command to suggest: the one remembered for the folder, else a guess from its files. */
async function suggestedCommand(folder: vscode.Uri, state: vscode.Memento): Promise<string> {
  const remembered = state.get<string>(`harnessRl.tasks.testCommand:${folder.fsPath}`);
  if (remembered) return remembered;
  const has = async (glob: string) =>
    (await vscode.workspace.findFiles(new vscode.RelativePattern(folder, glob), '**/node_modules/**', 1))
      .length > 0;
  return (await has('**/*.py')) && !(await has('vitest.config.*')) ? 'python -m pytest' : 'npx vitest run';
}

export async function makeTasks(
  tree: TasksTree,
  state: vscode.Memento,
  log: vscode.OutputChannel,
): Promise<void> {
  const folder =
    (vscode.workspace.workspaceFolders?.length ?? 0) > 1
      ? (await vscode.window.showWorkspaceFolderPick({ placeHolder: 'Make tasks from which folder?' }))?.uri
      : vscode.workspace.workspaceFolders?.[0]?.uri;
  if (!folder) {
    void vscode.window.showInformationMessage('Harness RL: open a folder with a test suite first.');
    return;
  }
  const command = await vscode.window.showInputBox({
    title: 'Make Tasks from This Repository',
    prompt: 'The command that runs its tests (pytest or vitest), run in the folder',
    value: await suggestedCommand(folder, state),
    validateInput: (v) =>
      /\b(pytest|vitest)\b/.test(v) ? undefined : 'The command must run pytest or vitest',
  });
  if (!command) return;
  await state.update(`harnessRl.tasks.testCommand:${folder.fsPath}`, command);
  const out = path.join(folder.fsPath, '.harness-rl', 'tasks', 'tasks.jsonl');
  const max = vscode.workspace.getConfiguration('harnessRl').get<number>('tasksMaxMutants', 200);
  const summary = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: 'Making tasks', cancellable: true },
    (progress, token) => synth(folder.fsPath, command, out, max, progress, token, log),
  );
  await tree.addSet(out);
  if (summary) {
    void vscode.window.showInformationMessage(
      `Harness RL: ${summary.kept} tasks from ${summary.tried} mutants${summary.cancelled ? ' (cancelled)' : ''}.`,
    );
  }
}

interface Summary {
  kept: number;
  tried: number;
  cancelled: boolean;
}

function synth(
  cwd: string,
  command: string,
  out: string,
  max: number,
  progress: vscode.Progress<{ message?: string; increment?: number }>,
  token: vscode.CancellationToken,
  log: vscode.OutputChannel,
): Promise<Summary | undefined> {
  const cli = resolveCli();
  const args = [
    ...cli.args,
    'tasks',
    'synth',
    '--repo',
    cwd,
    '--test',
    command,
    '--max',
    String(max),
    '--out',
    out,
  ];
  log.appendLine(`running: ${cli.command} ${args.join(' ')}`);
  const child = spawn(cli.command, args, {
    cwd,
    env: { ...process.env, ELECTRON_RUN_AS_NODE: undefined },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // SIGINT: the command stops after the mutant it is on and keeps the tasks written so far
  token.onCancellationRequested(() => child.kill('SIGINT'));
  let done = 0;
  let stdout = '';
  let stderrTail = '';
  child.stdout.on('data', (d: Buffer) => {
    stdout += d;
  });
  child.stderr.on('data', (d: Buffer) => {
    const text = String(d);
    log.append(text);
    stderrTail = (stderrTail + text).slice(-1000);
    const m = [...text.matchAll(new RegExp(PROGRESS, 'g'))].at(-1);
    if (!m) return;
    const [, tried, total, kept, left] = m.map(Number) as number[];
    const pct = (100 * tried!) / Math.max(1, total!);
    progress.report({
      message: `${tried}/${total} mutants tried, ${kept} kept, about ${left} s left`,
      increment: pct - done,
    });
    done = pct;
  });
  return new Promise((resolve) => {
    child.on('error', (err) => {
      void vscode.window.showErrorMessage(`Harness RL: could not run harness-rl: ${err.message}`);
      resolve(undefined);
    });
    child.on('close', (code) => {
      const last = stdout.trim().split('\n').at(-1);
      if ((code === 0 || code === 130) && last) return resolve(JSON.parse(last) as Summary);
      void vscode.window.showErrorMessage(
        `Harness RL: making tasks failed: ${stderrTail.trim().split('\n').at(-1) ?? code}`,
      );
      resolve(undefined);
    });
  });
}
