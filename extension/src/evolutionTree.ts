// Evolutions → their candidate tree (children under their parent): train score with its interval,
// held-out score, policy tokens, novelty and each regulariser's verdict. A click opens the candidate's
// diff against its parent in VS Code's diff editor (files served by the `harness-rl-candidate` scheme).
// Live from the `evolution` and `candidate` events (no polling); a reconnect reads it again (ctx.ts).
import * as vscode from 'vscode';
import { f } from '../../daemon/eval/text';
import type { DaemonEvent } from '../../daemon/protocol/events';
import type { Candidate, Evolution, EvolutionDetail } from '../../daemon/protocol/evolution';
import type { DaemonClient } from './client';
import { evolutionRow } from './evolutionLabels';
import { errorRow, type MessageNode, messageItem } from './messageRow';
import { Throttle } from './throttle';

export type EvolutionNode =
  | { kind: 'evolution'; evolution: Evolution }
  | { kind: 'candidate'; detail: EvolutionDetail; candidate: Candidate }
  | MessageNode;

/** The one-line description and the Markdown tooltip of a candidate. */
export function candidateRow(c: Candidate): {
  label: string;
  description: string;
  tooltip: string;
  icon: string;
} {
  const rejected = Object.entries(c.verdicts).find(([, v]) => v.verdict === 'reject');
  const ci = c.train_ci ? ` [${f(c.train_ci[0])}, ${f(c.train_ci[1])}]` : '';
  return {
    label: `${c.hash.slice(0, 10)}${c.parent === null ? ' (root)' : ''}`,
    description: `${c.status}${c.selected ? ' · kept' : ''} · train ${f(c.train_reward)}${ci}${c.held_out_reward !== null ? ` · held-out ${f(c.held_out_reward)}` : ''}${rejected ? ` · ${rejected[0]}` : ''}`,
    tooltip: [
      `**${c.hash}** — generation ${c.generation}, ${c.status}`,
      `train ${f(c.train_reward)}${ci}, held-out ${f(c.held_out_reward)}, policy tokens/task ${f(c.tokens_per_task, 0)}, novelty ${f(c.novelty)}`,
      `edit: ${c.stats.files} files, ${c.stats.hunks} hunks, ${c.stats.lines} lines`,
      ...Object.entries(c.verdicts).map(([k, v]) => `- ${k}: **${v.verdict}** — ${v.reason}`),
    ].join('\n\n'),
    icon:
      c.status === 'accepted'
        ? c.selected
          ? 'star-full'
          : 'pass'
        : c.status === 'rejected' || c.status === 'failed'
          ? 'circle-slash'
          : c.status === 'pruned'
            ? 'trash'
            : 'loading~spin',
  };
}

const link = (title: string, command: string, arg: unknown) =>
  `[${title}](command:${command}?${encodeURIComponent(JSON.stringify([arg]))})`;

/** Links to the candidate's evaluation pages and its comparison with its parent (the tooltip's last line). */
export function evaluationLinks(c: Candidate, parentEvaluation: string | null): string {
  const links = [
    c.train_evaluation &&
      link('Train evaluation', 'harnessRl.openEvaluation', { evaluationId: c.train_evaluation }),
    c.held_out_evaluation &&
      link('Held-out evaluation', 'harnessRl.openEvaluation', { evaluationId: c.held_out_evaluation }),
    c.train_evaluation &&
      parentEvaluation &&
      link('Compare with parent', 'harnessRl.compareEvaluations', {
        a: parentEvaluation,
        b: c.train_evaluation,
      }),
  ].filter(Boolean);
  return links.join(' · ');
}

export class EvolutionTree implements vscode.TreeDataProvider<EvolutionNode>, vscode.Disposable {
  private readonly emitter = new vscode.EventEmitter<EvolutionNode | undefined>();
  readonly onDidChangeTreeData = this.emitter.event;

  /** Events come in bursts (a candidate is stored several times as it is scored): one read for each. */
  private readonly redraw = new Throttle(() => this.emitter.fire(undefined), 200);

  constructor(private readonly getClient: () => DaemonClient | undefined) {}

  refresh(): void {
    this.emitter.fire(undefined);
  }

  /** An evolution's status or one of its candidates changed: read the tree again. */
  onEvent(e: DaemonEvent): void {
    if (e.type === 'evolution' || e.type === 'candidate') this.redraw.schedule();
  }

  async getChildren(node?: EvolutionNode): Promise<EvolutionNode[]> {
    const client = this.getClient();
    if (!client || node?.kind === 'message') return [];
    try {
      if (!node) {
        const items = (await client.listEvolutions()).items;
        return items.map((evolution) => ({ kind: 'evolution', evolution }));
      }
      const detail = node.kind === 'evolution' ? await client.getEvolution(node.evolution.id) : node.detail;
      const parent = node.kind === 'evolution' ? null : node.candidate.hash;
      return detail.candidates
        .filter((c) => c.parent === parent)
        .map((candidate) => ({ kind: 'candidate' as const, detail, candidate }));
    } catch (err) {
      return [errorRow(err)];
    }
  }

  getTreeItem(node: EvolutionNode): vscode.TreeItem {
    const C = vscode.TreeItemCollapsibleState;
    if (node.kind === 'message') return messageItem(node);
    if (node.kind === 'evolution') {
      const row = evolutionRow(node.evolution);
      const item = new vscode.TreeItem(row.label, C.Collapsed);
      item.id = node.evolution.id;
      item.description = row.description;
      item.tooltip = row.tooltip;
      item.iconPath = new vscode.ThemeIcon(row.icon);
      item.contextValue = row.contextValue;
      return item;
    }
    const c = node.candidate;
    const row = candidateRow(c);
    const hasChildren = node.detail.candidates.some((x) => x.parent === c.hash);
    const item = new vscode.TreeItem(row.label, hasChildren ? C.Expanded : C.None);
    // A candidate that gains its first child (live) gets a new id: VS Code keeps the collapsed state it
    // knew for an id, so under the old one the child would stay hidden until a click.
    item.id = `${node.detail.id}/${c.hash}${hasChildren ? '/parent' : ''}`;
    item.description = row.description;
    const parent = node.detail.candidates.find((x) => x.hash === c.parent);
    const tooltip = new vscode.MarkdownString(
      [row.tooltip, evaluationLinks(c, parent?.train_evaluation ?? null)].filter(Boolean).join('\n\n'),
    );
    tooltip.isTrusted = { enabledCommands: ['harnessRl.openEvaluation', 'harnessRl.compareEvaluations'] };
    item.tooltip = tooltip;
    item.iconPath = new vscode.ThemeIcon(row.icon);
    item.contextValue = /^[0-9a-f]{24}$/.test(c.hash) ? 'candidate' : 'proposal';
    if (c.parent !== null)
      item.command = {
        command: 'harnessRl.openCandidateDiff',
        title: 'Open Diff',
        arguments: [{ evolutionId: node.detail.id, hash: c.hash, parent: c.parent }],
      };
    return item;
  }

  dispose(): void {
    this.redraw.dispose();
    this.emitter.dispose();
  }
}

export const CANDIDATE_SCHEME = 'harness-rl-candidate';

/** harness-rl-candidate:/<evolution>/<hash>/<path>: a candidate's file, read from the daemon. */
export class CandidateFilesProvider implements vscode.TextDocumentContentProvider {
  private readonly cache = new Map<string, Promise<Record<string, string>>>();

  constructor(private readonly getClient: () => DaemonClient | undefined) {}

  files(evolutionId: string, hash: string): Promise<Record<string, string>> {
    const key = `${evolutionId}/${hash}`;
    let files = this.cache.get(key);
    if (!files) {
      const client = this.getClient();
      if (!client) return Promise.reject(new Error('no daemon connected'));
      files = client.candidateFiles(evolutionId, hash).then((r) => r.files);
      files.catch(() => this.cache.delete(key));
      // Candidates are content-addressed: their files never change; keep the last 20 read.
      if (this.cache.size >= 20) this.cache.delete(this.cache.keys().next().value as string);
      this.cache.set(key, files);
    }
    return files;
  }

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const [, evolutionId, hash, ...path] = uri.path.split('/');
    return (await this.files(evolutionId!, hash!))[path.join('/')] ?? '';
  }
}

export function candidateUri(evolutionId: string, hash: string, path: string): vscode.Uri {
  return vscode.Uri.from({ scheme: CANDIDATE_SCHEME, path: `/${evolutionId}/${hash}/${path}` });
}
