// Recording mode: the daemon records a person's own agent sessions as a rollout; new terminals
// get OPENAI_BASE_URL / ANTHROPIC_BASE_URL and a key scoped to the recording.
import { spawn } from 'node:child_process';
import { appendFileSync, closeSync, existsSync, openSync, readSync, statSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { writeSecret } from '../../daemon/config/secrets';
import type { Recording } from '../../daemon/protocol/entities';
import { count } from '../../webview/src/format';
import { errorText } from './client';
import type { Ctx } from './ctx';
import { dataFolder } from './daemon';
import { recordingName } from './labels';
import { SnippetsPanel } from './panels';
import { verifierReward } from './parse';
import { recordingPicks } from './picks';
import { recordingSamples, recordingTask } from './recordingExport';
import { recordingEnv } from './snippets';

type UpstreamKind = 'reference' | 'openai' | 'anthropic' | 'vllm';
const keySecret = (kind: string) => `harnessRl.upstreamKey.${kind}`;

export async function setUpstreamKey(ctx: Ctx, kind?: 'openai' | 'anthropic'): Promise<string | undefined> {
  const provider =
    kind ??
    ((await vscode.window.showQuickPick(['openai', 'anthropic'], {
      title: 'Which provider is the key for?',
    })) as 'openai' | 'anthropic' | undefined);
  if (!provider) return undefined;
  const key = await vscode.window.showInputBox({
    title: `Your ${provider} API key (kept in VS Code secret storage)`,
    password: true,
    ignoreFocusOut: true,
  });
  if (!key) return undefined;
  await ctx.extension.secrets.store(keySecret(provider), key);
  return key;
}

export async function startRecording(ctx: Ctx): Promise<void> {
  const client = await ctx.requireClient();
  if (!client) return;
  if (ctx.recording) {
    void vscode.window.showInformationMessage(`Harness RL: already recording "${ctx.recording.name}".`);
    return;
  }
  const cfg = vscode.workspace.getConfiguration('harnessRl');
  const kind = cfg.get<UpstreamKind>('recording.upstream', 'reference');
  const upstreamUrl = cfg.get<string>('recording.upstreamUrl', '');
  if (kind === 'vllm' && !upstreamUrl) {
    const pick = await vscode.window.showErrorMessage(
      'Harness RL: recording to vLLM needs harnessRl.recording.upstreamUrl (your vLLM base URL).',
      'Open Settings',
    );
    if (pick) void vscode.commands.executeCommand('workbench.action.openSettings', 'harnessRl.recording');
    return;
  }
  let upstreamKey: string | undefined;
  if (kind === 'openai' || kind === 'anthropic') {
    upstreamKey = (await ctx.extension.secrets.get(keySecret(kind))) ?? (await setUpstreamKey(ctx, kind));
    if (!upstreamKey) return;
  }
  const name = await vscode.window.showInputBox({
    title: 'Recording name',
    value: `session ${new Date().toISOString().slice(0, 16).replace('T', ' ')}`,
  });
  if (name === undefined) return;
  try {
    // the daemon's proxy reads upstream keys from <data>/secrets.json (never from the API or the store)
    if (upstreamKey && (kind === 'openai' || kind === 'anthropic'))
      writeSecret(dataFolder(), kind, upstreamKey);
    const rec = await client.createRecording({
      name: name || undefined,
      upstream: { kind, ...(upstreamUrl ? { base_url: upstreamUrl } : {}) },
    });
    const env = ctx.extension.environmentVariableCollection;
    env.persistent = false;
    env.description = `Harness RL recording "${rec.name}"`;
    for (const [k, v] of Object.entries(recordingEnv(rec))) env.replace(k, v);
    ctx.setRecording(rec);
    ctx.recordingsTree.refresh();
    ctx.log.appendLine(`recording ${rec.id} "${rec.name}" started (upstream ${kind})`);
    const pick = await vscode.window.showInformationMessage(
      `Harness RL: recording "${rec.name}". New terminals send their LLM calls through it.`,
      'Show Snippets',
      'New Terminal',
    );
    if (pick === 'Show Snippets') await showSnippets(ctx);
    if (pick === 'New Terminal') vscode.window.createTerminal({ name: `Recording ${rec.name}` }).show();
  } catch (err) {
    void vscode.window.showErrorMessage(`Harness RL: could not start a recording: ${errorText(err)}`);
  }
}

export async function showSnippets(ctx: Ctx): Promise<void> {
  const rec = ctx.recording;
  if (!rec) {
    void vscode.window.showInformationMessage('Harness RL: no recording is active in this window.');
    return;
  }
  SnippetsPanel.show(ctx);
}

export async function stopRecording(
  ctx: Ctx,
  arg?: { recording?: Recording },
): Promise<Recording | undefined> {
  const client = await ctx.requireClient();
  if (!client) return undefined;
  const target = arg?.recording ?? ctx.recording ?? (await pickRecording(ctx, 'active'));
  if (!target) return undefined;
  try {
    await client.stopRecording(target.id);
  } catch (err) {
    void vscode.window.showErrorMessage(`Harness RL: could not stop the recording: ${errorText(err)}`);
    return undefined;
  }
  if (ctx.recording?.id === target.id) ctx.clearRecording();
  ctx.recordingsTree.refresh();
  const pick = await vscode.window.showInformationMessage(
    `Harness RL: recording "${recordingName(target.name)}" stopped.`,
    'Rate It',
    'Open Trajectory',
  );
  if (pick === 'Rate It') await rateRecording(ctx, { recording: target });
  if (pick === 'Open Trajectory')
    await vscode.commands.executeCommand('harnessRl.openTrajectory', {
      kind: 'rolloutId',
      id: target.rollout_id,
    });
  return target;
}

async function pickRecording(ctx: Ctx, status?: 'active'): Promise<Recording | undefined> {
  const client = ctx.client;
  if (!client) return undefined;
  const all = (await client.listRecordings()).filter((r) => !status || r.status === status);
  if (all.length === 0) {
    void vscode.window.showInformationMessage(`Harness RL: no ${status ?? ''} recordings.`);
    return undefined;
  }
  return (await vscode.window.showQuickPick(recordingPicks(all), { title: 'Recording' }))?.r;
}

export async function rateRecording(ctx: Ctx, arg?: { recording?: Recording }): Promise<void> {
  const client = await ctx.requireClient();
  if (!client) return;
  const target = arg?.recording ?? ctx.recording ?? (await pickRecording(ctx));
  if (!target) return;
  const choice = await vscode.window.showQuickPick(
    [
      { label: '$(thumbsup) Good', value: 1 as number | 'number' | 'verifier' },
      { label: '$(thumbsdown) Bad', value: 0 as number | 'number' | 'verifier' },
      { label: '$(symbol-number) A number…', value: 'number' as const },
      { label: '$(terminal) Run this verifier command…', value: 'verifier' as const },
    ],
    { title: `Rate recording "${recordingName(target.name)}"` },
  );
  if (!choice) return;
  let value: number;
  let source = 'human';
  let detail: unknown = null;
  if (choice.value === 'number') {
    const text = await vscode.window.showInputBox({
      title: 'Reward',
      validateInput: (v) => (v.trim() !== '' && Number.isFinite(Number(v)) ? undefined : 'a finite number'),
    });
    if (text === undefined) return;
    value = Number(text);
  } else if (choice.value === 'verifier') {
    const command = await vscode.window.showInputBox({
      title: 'Verifier command (reward = last number printed, else exit code 0 → 1, other → 0)',
      value: ctx.extension.workspaceState.get<string>('harnessRl.lastVerifier', 'npm test'),
    });
    if (!command) return;
    await ctx.extension.workspaceState.update('harnessRl.lastVerifier', command);
    const result = await runVerifier(ctx, command, target);
    value = verifierReward(result.stdout, result.code);
    source = 'verifier';
    detail = { command, exit_code: result.code, stdout_tail: result.stdout.slice(-2000) };
  } else {
    value = choice.value;
  }
  try {
    await client.postReward(target.rollout_id, { value, source, detail });
    void vscode.window.showInformationMessage(
      `Harness RL: recording "${recordingName(target.name)}" rated ${value}.`,
    );
    ctx.recordingsTree.refresh();
  } catch (err) {
    void vscode.window.showErrorMessage(`Harness RL: could not save the reward: ${errorText(err)}`);
  }
}

function runVerifier(
  ctx: Ctx,
  command: string,
  rec: Recording,
): Thenable<{ stdout: string; code: number | null }> {
  return vscode.window.withProgress<{ stdout: string; code: number | null }>(
    { location: vscode.ProgressLocation.Notification, title: `Harness RL: running ${command}` },
    () =>
      new Promise((resolve) => {
        ctx.log.appendLine(`verifier: ${command}`);
        const child = spawn(command, {
          shell: true,
          cwd: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath,
          env: { ...process.env, HARNESS_RL_ROLLOUT_ID: rec.rollout_id, HARNESS_RL_RECORDING_ID: rec.id },
        });
        let stdout = '';
        child.stdout.on('data', (d) => {
          stdout += String(d);
          ctx.log.append(String(d));
        });
        child.stderr.on('data', (d) => ctx.log.append(String(d)));
        child.on('error', (err) => {
          ctx.log.appendLine(`verifier failed: ${err.message}`);
          resolve({ stdout, code: null });
        });
        child.on('close', (code) => resolve({ stdout, code }));
      }),
  );
}

/** Export a recording as training samples, or append it as a task to a run's tasks JSONL. */
export async function exportRecording(ctx: Ctx, arg?: { recording?: Recording }): Promise<void> {
  const client = await ctx.requireClient();
  if (!client) return;
  const target = arg?.recording ?? ctx.recording ?? (await pickRecording(ctx));
  if (!target) return;
  const as = await vscode.window.showQuickPick(
    [
      { label: 'Training samples (JSONL)', value: 'samples' as const },
      { label: 'A task for a training run (append to a tasks JSONL)', value: 'task' as const },
    ],
    { title: `Export recording "${recordingName(target.name)}"` },
  );
  if (!as) return;
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? '';
  try {
    const detail = await client.getRollout(target.rollout_id);
    if (as.value === 'samples') {
      const file = await vscode.window.showSaveDialog({
        defaultUri: vscode.Uri.file(path.join(folder, `${fileSafe(target.name)}.samples.jsonl`)),
        filters: { JSONL: ['jsonl'] },
      });
      if (!file) return;
      const { text, samples } = recordingSamples(detail);
      writeFileSync(file.fsPath, text);
      void vscode.window.showInformationMessage(
        `Harness RL: wrote ${count(samples, 'sample')} to ${file.fsPath}.`,
      );
      return;
    }
    const task = recordingTask(target, detail);
    if (!task) {
      void vscode.window.showWarningMessage(
        `Harness RL: recording "${recordingName(target.name)}" has no successful call.`,
      );
      return;
    }
    const file = await pickTasksFile(folder);
    if (!file) return;
    appendJsonLine(file.fsPath, task);
    void vscode.window.showInformationMessage(`Harness RL: appended the task to ${file.fsPath}.`);
  } catch (err) {
    void vscode.window.showErrorMessage(`Harness RL: export failed: ${errorText(err)}`);
  }
}

/** A recording's name as a file name: no path separators or characters file systems refuse. */
function fileSafe(name: string): string {
  return name.replace(/[\\/:*?"<>|]/g, '-') || 'recording';
}

/**
 * The tasks JSONL to append to: one of the workspace's JSONL files (appending needs no "overwrite?"
 * question, which a save dialog asks of an existing file), or a new file from a save dialog.
 */
async function pickTasksFile(folder: string): Promise<vscode.Uri | undefined> {
  const found = await vscode.workspace.findFiles('**/*.jsonl', '**/{node_modules,.git}/**', 200);
  const files = found
    .filter((u) => !u.fsPath.endsWith('.samples.jsonl'))
    .sort((a, b) => a.fsPath.localeCompare(b.fsPath));
  const NEW = '$(new-file) New tasks file…';
  const pick =
    files.length === 0
      ? { label: NEW, uri: undefined }
      : await vscode.window.showQuickPick(
          [
            ...files.map((uri) => ({ label: vscode.workspace.asRelativePath(uri), uri })),
            { label: NEW, uri: undefined },
          ],
          { title: 'Append the task to' },
        );
  if (!pick) return undefined;
  if (pick.uri) return pick.uri;
  return vscode.window.showSaveDialog({
    defaultUri: vscode.Uri.file(path.join(folder, 'tasks.jsonl')),
    filters: { JSONL: ['jsonl'] },
    title: 'Append the task to',
  });
}

/** Append one JSON line, starting a new line first when the file does not end with one. */
function appendJsonLine(file: string, value: unknown): void {
  let lead = '';
  const size = existsSync(file) ? statSync(file).size : 0;
  if (size > 0) {
    const last = Buffer.alloc(1);
    const fd = openSync(file, 'r');
    try {
      readSync(fd, last, 0, 1, size - 1);
    } finally {
      closeSync(fd);
    }
    if (last[0] !== 0x0a) lead = '\n';
  }
  appendFileSync(file, `${lead}${JSON.stringify(value)}\n`);
}
