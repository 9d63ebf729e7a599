// The evaluation and evolution commands: *Evaluate Harness…* (a config, a split, attempts, optionally
// another harness folder; the result and its comparison with the config's previous evaluation open as
// a Markdown document), a candidate's diff against its parent, and *Adopt Candidate* (its files written
// into the harness folder as one ordinary, undoable workspace edit).
import * as path from 'node:path';
import * as vscode from 'vscode';
import { comparisonText, evaluationText } from '../../daemon/eval/text';
import type { Evaluation } from '../../daemon/protocol/evaluation';
import { type DaemonClient, errorText } from './client';
import type { Ctx } from './ctx';
import { candidateUri } from './evolutionTree';

export interface CandidateRef {
  evolutionId: string;
  hash: string;
  parent?: string | null;
}

/** What the command table lends (commands.ts, which imports this file). */
export interface ConfigTools {
  findRunConfigs(): Promise<vscode.Uri[]>;
  validate(ctx: Ctx, doc: vscode.TextDocument): { config?: unknown };
}

async function pickConfig(tools: ConfigTools): Promise<vscode.Uri | undefined> {
  const items = (await tools.findRunConfigs()).map((u) => ({
    label: vscode.workspace.asRelativePath(u),
    uri: u,
  }));
  const active = vscode.window.activeTextEditor?.document.uri;
  if (active) items.sort((a) => (a.uri.toString() === active.toString() ? -1 : 0));
  const pick = await vscode.window.showQuickPick(items, { title: 'Evaluate harness: pick a run config' });
  return pick?.uri;
}

export async function evaluateHarness(
  ctx: Ctx,
  client: DaemonClient,
  arg: unknown,
  tools: ConfigTools,
): Promise<void> {
  const uri = arg instanceof vscode.Uri ? arg : await pickConfig(tools);
  if (!uri) return;
  const check = tools.validate(ctx, await vscode.workspace.openTextDocument(uri));
  if (!check.config) {
    void vscode.window.showErrorMessage(
      `Harness RL: ${vscode.workspace.asRelativePath(uri)} has problems (see Problems).`,
    );
    return;
  }
  const split = await vscode.window.showQuickPick(['test', 'validation', 'train'], { title: 'Which split' });
  if (!split) return;
  const attempts = await vscode.window.showInputBox({
    title: 'Attempts per task (k of pass@k)',
    value: '1',
    validateInput: (v) => (/^[1-9]\d?$/.test(v) ? null : 'a whole number from 1 to 99'),
  });
  if (!attempts) return;
  const harness = await vscode.window.showQuickPick(["The config's harness", 'Another folder…'], {
    title: 'Harness',
  });
  if (!harness) return;
  const folder =
    harness === 'Another folder…'
      ? (await vscode.window.showOpenDialog({ canSelectFolders: true, canSelectFiles: false }))?.[0]
      : undefined;
  if (harness === 'Another folder…' && !folder) return;
  let e: Evaluation;
  try {
    e = await client.createEvaluation({
      config: check.config as never,
      base_dir: path.dirname(uri.fsPath),
      split: split as Evaluation['split'],
      attempts: Number(attempts),
      ...(folder ? { harness_dir: folder.fsPath } : {}),
    });
  } catch (err) {
    void vscode.window.showErrorMessage(`Harness RL: could not start the evaluation: ${errorText(err)}`);
    return;
  }
  ctx.log.appendLine(`evaluation ${e.id} "${e.name}" started from ${uri.fsPath}`);
  e = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Evaluating ${e.name}`, cancellable: false },
    async () => {
      let at = e;
      while (at.status === 'running') {
        await new Promise((r) => setTimeout(r, 1000));
        at = await client.getEvaluation(at.id);
      }
      return at;
    },
  );
  const earlier = (await client.listEvaluations()).items.find(
    (x) => x.id !== e.id && x.name === e.name && x.status === 'finished',
  );
  const parts = ['```', evaluationText(e), '```'];
  if (earlier && e.status === 'finished') {
    const c = await client.compareEvaluations(earlier.id, e.id);
    parts.push(
      '',
      `Against the previous evaluation of this config (${earlier.id}):`,
      '```',
      comparisonText(c),
      '```',
    );
  }
  const doc = await vscode.workspace.openTextDocument({ language: 'markdown', content: parts.join('\n') });
  await vscode.window.showTextDocument(doc, { preview: true });
}

/** The files a candidate changed against its parent, opened in the diff editor (one, or picked). */
export async function openCandidateDiff(
  files: (evolutionId: string, hash: string) => Promise<Record<string, string>>,
  ref: CandidateRef,
): Promise<void> {
  if (!ref.parent) return;
  const [mine, theirs] = await Promise.all([
    files(ref.evolutionId, ref.hash),
    files(ref.evolutionId, ref.parent),
  ]);
  const changed = [...new Set([...Object.keys(mine), ...Object.keys(theirs)])]
    .filter((p) => mine[p] !== theirs[p])
    .sort();
  const pick =
    changed.length <= 1
      ? changed[0]
      : await vscode.window.showQuickPick(changed, { title: 'Files this candidate changed' });
  if (!pick) return;
  await vscode.commands.executeCommand(
    'vscode.diff',
    candidateUri(ref.evolutionId, ref.parent, pick),
    candidateUri(ref.evolutionId, ref.hash, pick),
    `${pick} (${ref.parent.slice(0, 8)} ↔ ${ref.hash.slice(0, 8)})`,
  );
}

/** Write a candidate's files into the evolution's harness folder as one workspace edit. */
export async function adoptCandidate(
  client: DaemonClient,
  files: (evolutionId: string, hash: string) => Promise<Record<string, string>>,
  ref: CandidateRef,
): Promise<boolean> {
  const evolution = await client.getEvolution(ref.evolutionId);
  const root = evolution.candidates.find((c) => c.parent === null);
  const mine = await files(ref.evolutionId, ref.hash);
  const before = root ? await files(ref.evolutionId, root.hash) : {};
  const edit = new vscode.WorkspaceEdit();
  const dir = vscode.Uri.file(evolution.harness_dir);
  // Files that exist are edited as text (undoable in their editors, then saved); new ones are created.
  const changed: vscode.TextDocument[] = [];
  for (const [p, text] of Object.entries(mine)) {
    const uri = vscode.Uri.joinPath(dir, ...p.split('/'));
    const exists = await vscode.workspace.fs.stat(uri).then(
      () => true,
      () => false,
    );
    if (!exists) {
      edit.createFile(uri, { overwrite: true, contents: Buffer.from(text) });
      continue;
    }
    const doc = await vscode.workspace.openTextDocument(uri);
    if (doc.getText() === text) continue;
    edit.replace(uri, new vscode.Range(doc.positionAt(0), doc.positionAt(doc.getText().length)), text);
    changed.push(doc);
  }
  for (const p of Object.keys(before))
    if (!(p in mine)) edit.deleteFile(vscode.Uri.joinPath(dir, ...p.split('/')), { ignoreIfNotExists: true });
  const ok = await vscode.workspace.applyEdit(edit);
  if (ok) for (const doc of changed) await doc.save();
  if (ok)
    void vscode.window.showInformationMessage(
      `Harness RL: candidate ${ref.hash.slice(0, 10)} written into ${vscode.workspace.asRelativePath(dir)}.`,
    );
  return ok;
}
