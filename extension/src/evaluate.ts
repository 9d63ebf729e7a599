// The evaluation and evolution commands: *Evaluate Harness…* (a config, a split, attempts, optionally
// another harness folder; its page opens at once and fills in when it finishes), *Open Evaluation…*,
// *Compare Evaluations…* (two stored ones, or a candidate against its parent), a candidate's diff
// against its parent, and *Adopt Candidate* (its files written into the harness folder as one
// ordinary, undoable workspace edit), *Resume Evolution* and *Stop Evolution*.
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { Evaluation } from '../../daemon/protocol/evaluation';
import type { Candidate, Evolution, EvolutionDetail } from '../../daemon/protocol/evolution';
import { type DaemonClient, errorText } from './client';
import type { Ctx } from './ctx';
import { EvaluationPanel } from './evaluationPanel';
import { RESUMABLE } from './evolutionLabels';
import { candidateUri } from './evolutionTree';
import { evaluationPickLabel, evaluationPicks } from './picks';
import { findRunConfigs, validateConfigDocument } from './runConfigs';

export interface CandidateRef {
  evolutionId: string;
  hash: string;
  parent?: string | null;
}

async function pickConfig(): Promise<vscode.Uri | undefined> {
  const items = (await findRunConfigs()).map((u) => ({
    label: vscode.workspace.asRelativePath(u),
    uri: u,
  }));
  const active = vscode.window.activeTextEditor?.document.uri;
  if (active) items.sort((a) => (a.uri.toString() === active.toString() ? -1 : 0));
  const pick = await vscode.window.showQuickPick(items, { title: 'Evaluate harness: pick a run config' });
  return pick?.uri;
}

export async function evaluateHarness(ctx: Ctx, client: DaemonClient, arg: unknown): Promise<void> {
  const uri = arg instanceof vscode.Uri ? arg : await pickConfig();
  if (!uri) return;
  const check = validateConfigDocument(ctx, await vscode.workspace.openTextDocument(uri));
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
  EvaluationPanel.show(ctx, { evaluation_id: e.id });
}

/** Stored evaluations to pick from (finished ones only where `finished`), newest first. */
async function pickEvaluation(
  client: DaemonClient,
  title: string,
  opts: { finished?: boolean; except?: string } = {},
): Promise<Evaluation | undefined> {
  const items = evaluationPicks(
    (await client.listEvaluations()).items.filter(
      (e) => e.id !== opts.except && (!opts.finished || e.status === 'finished'),
    ),
  );
  if (items.length === 0) {
    void vscode.window.showInformationMessage(
      `Harness RL: no ${opts.finished ? 'finished ' : ''}evaluation to pick. Evaluate a harness first.`,
    );
    return undefined;
  }
  return (await vscode.window.showQuickPick(items, { title, matchOnDetail: true }))?.e;
}

type CandidateNode = { candidate: Candidate; detail: EvolutionDetail };
const isCandidateNode = (x: unknown): x is CandidateNode =>
  typeof x === 'object' && x !== null && 'candidate' in x && 'detail' in x;

/** From a link or the page: {evaluationId}; from the Evolution view: a candidate (its train or held-out one). */
export async function openEvaluation(ctx: Ctx, client: DaemonClient, arg: unknown): Promise<void> {
  let id: string | undefined;
  if (isCandidateNode(arg)) {
    const c = arg.candidate;
    const both = [
      c.train_evaluation ? { label: 'Train split', id: c.train_evaluation } : null,
      c.held_out_evaluation ? { label: 'Held-out split', id: c.held_out_evaluation } : null,
    ].filter((x) => x !== null);
    if (both.length === 0) {
      void vscode.window.showInformationMessage(
        `Harness RL: candidate ${c.hash.slice(0, 10)} has no evaluation (${c.status}).`,
      );
      return;
    }
    id =
      both.length === 1
        ? both[0]!.id
        : (await vscode.window.showQuickPick(both, { title: 'Which evaluation' }))?.id;
  } else if (typeof arg === 'object' && arg !== null && 'evaluationId' in arg) {
    id = String((arg as { evaluationId: unknown }).evaluationId);
  } else id = (await pickEvaluation(client, 'Open evaluation'))?.id;
  if (id) EvaluationPanel.show(ctx, { evaluation_id: id });
}

/** {a, b} from a page or link; else pick the baseline (A), then the one to compare with it (B). */
export async function compareEvaluations(ctx: Ctx, client: DaemonClient, arg: unknown): Promise<void> {
  const given = arg as { a?: unknown; b?: unknown } | undefined;
  if (typeof given?.a === 'string' && typeof given.b === 'string') {
    EvaluationPanel.show(ctx, { a: given.a, b: given.b });
    return;
  }
  const a = await pickEvaluation(client, 'Compare evaluations: the baseline (A)', { finished: true });
  if (!a) return;
  const b = await pickEvaluation(client, `Compare with ${evaluationPickLabel(a)}: the other (B)`, {
    finished: true,
    except: a.id,
  });
  if (b) EvaluationPanel.show(ctx, { a: a.id, b: b.id });
}

/** A candidate's train evaluation against its parent's (B − A, the parent the baseline). */
export function compareWithParent(ctx: Ctx, arg: unknown): void {
  if (!isCandidateNode(arg)) {
    void vscode.window.showInformationMessage('Harness RL: pick a candidate in the Evolution view.');
    return;
  }
  const c = arg.candidate;
  const parent = arg.detail.candidates.find((x) => x.hash === c.parent);
  const why = !parent
    ? 'is the root: it has no parent'
    : !c.train_evaluation
      ? `has no train evaluation (${c.status})`
      : !parent.train_evaluation
        ? 'has a parent with no train evaluation'
        : null;
  if (why || !parent?.train_evaluation || !c.train_evaluation) {
    void vscode.window.showInformationMessage(`Harness RL: candidate ${c.hash.slice(0, 10)} ${why}.`);
    return;
  }
  EvaluationPanel.show(ctx, { a: parent.train_evaluation, b: c.train_evaluation });
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

/** The evolution a tree node, an id or a pick names, among those in `statuses`. */
async function evolutionArg(
  client: DaemonClient,
  arg: unknown,
  statuses: readonly Evolution['status'][],
  verb: string,
): Promise<Evolution | undefined> {
  const node = arg as { kind?: string; evolution?: Evolution } | string | undefined;
  const id = typeof node === 'string' ? node : node?.kind === 'evolution' ? node.evolution?.id : undefined;
  if (id) return client.getEvolution(id);
  const items = (await client.listEvolutions()).items.filter((e) => statuses.includes(e.status));
  if (!items.length) {
    void vscode.window.showInformationMessage(
      `Harness RL: no evolution to ${verb} (none is ${statuses.join(' or ')}).`,
    );
    return undefined;
  }
  const pick = await vscode.window.showQuickPick(
    items.map((e) => ({ label: e.name, description: `${e.status} · ${e.id}`, e })),
    { title: `${verb[0]!.toUpperCase()}${verb.slice(1)} which evolution?` },
  );
  return pick?.e;
}

/** *Resume Evolution* (an interrupted or stopped one goes on from what it stored) and *Stop Evolution*. */
export async function resumeOrStopEvolution(
  ctx: Ctx,
  client: DaemonClient,
  arg: unknown,
  verb: 'resume' | 'stop',
): Promise<void> {
  const e = await evolutionArg(client, arg, verb === 'resume' ? RESUMABLE : ['running'], verb);
  if (!e) return;
  try {
    const after = verb === 'resume' ? await client.resumeEvolution(e.id) : await client.stopEvolution(e.id);
    ctx.evolutionTree.refresh();
    void vscode.window.showInformationMessage(`Harness RL: evolution "${e.name}" is ${after.status}.`);
  } catch (err) {
    void vscode.window.showErrorMessage(`Harness RL: could not ${verb} the evolution: ${errorText(err)}`);
  }
}
