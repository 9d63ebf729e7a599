// The Tasks view: task sets (JSONL of `harness-rl tasks synth|import`) → their tasks → the failing tests
// (FAIL_TO_PASS) and the gold patch, which stays hidden until asked for (a click opens it as a diff).
import { readFile } from 'node:fs/promises';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { TaskInstance } from '../../daemon/protocol/tasks';
import { type MessageNode, messageItem } from './messageRow';

export type TasksNode =
  | { kind: 'set'; file: string }
  | { kind: 'task'; file: string; task: TaskInstance }
  | { kind: 'test'; test: string }
  | { kind: 'gold'; file: string; task: TaskInstance }
  | MessageNode;

const SETS_KEY = 'harnessRl.taskSets';

/** The tasks of a JSONL file; a line that is not a task is skipped and counted. */
export async function readTaskSet(file: string): Promise<{ tasks: TaskInstance[]; bad: number }> {
  const tasks: TaskInstance[] = [];
  let bad = 0;
  for (const line of (await readFile(file, 'utf8')).split('\n')) {
    if (!line.trim()) continue;
    try {
      const r = TaskInstance.safeParse(JSON.parse(line));
      if (r.success) tasks.push(r.data);
      else bad++;
    } catch {
      bad++;
    }
  }
  return { tasks, bad };
}

export class TasksTree implements vscode.TreeDataProvider<TasksNode> {
  private readonly emitter = new vscode.EventEmitter<TasksNode | undefined>();
  readonly onDidChangeTreeData = this.emitter.event;

  constructor(private readonly state: vscode.Memento) {}

  get sets(): string[] {
    return this.state.get<string[]>(SETS_KEY, []);
  }

  /** Shows `file` in the view (first), remembered for this workspace. */
  async addSet(file: string): Promise<void> {
    await this.state.update(SETS_KEY, [file, ...this.sets.filter((f) => f !== file)].slice(0, 20));
    this.emitter.fire(undefined);
  }

  refresh(): void {
    this.emitter.fire(undefined);
  }

  async getChildren(node?: TasksNode): Promise<TasksNode[]> {
    if (!node) return this.sets.map((file) => ({ kind: 'set' as const, file }));
    if (node.kind === 'set') {
      try {
        const { tasks, bad } = await readTaskSet(node.file);
        const items: TasksNode[] = tasks.map((task) => ({ kind: 'task' as const, file: node.file, task }));
        if (bad > 0) items.push({ kind: 'message', text: `${bad} lines are not tasks` });
        return items.length > 0 ? items : [{ kind: 'message', text: 'No tasks in this file yet' }];
      } catch (err) {
        return [{ kind: 'message', text: `Cannot read it: ${(err as Error).message}`, icon: 'error' }];
      }
    }
    if (node.kind === 'task') {
      return [
        ...node.task.FAIL_TO_PASS.map((test) => ({ kind: 'test' as const, test })),
        { kind: 'gold', file: node.file, task: node.task },
      ];
    }
    return [];
  }

  getTreeItem(node: TasksNode): vscode.TreeItem {
    switch (node.kind) {
      case 'message':
        return messageItem(node);
      case 'set': {
        const item = new vscode.TreeItem(path.basename(node.file), vscode.TreeItemCollapsibleState.Expanded);
        item.id = `taskset:${node.file}`;
        item.description = path.dirname(node.file);
        item.tooltip = node.file;
        item.iconPath = new vscode.ThemeIcon('checklist');
        item.contextValue = 'taskSet';
        return item;
      }
      case 'task': {
        const t = node.task;
        const item = new vscode.TreeItem(t.instance_id, vscode.TreeItemCollapsibleState.Collapsed);
        item.id = `task:${node.file}:${t.instance_id}`;
        const n = t.FAIL_TO_PASS.length;
        item.description = `${n} failing test${n === 1 ? '' : 's'} · ${t.PASS_TO_PASS.length} to keep passing`;
        item.tooltip = new vscode.MarkdownString().appendText(t.problem_statement);
        item.iconPath = new vscode.ThemeIcon('bug');
        item.contextValue = 'task';
        return item;
      }
      case 'test': {
        const item = new vscode.TreeItem(node.test);
        item.iconPath = new vscode.ThemeIcon('testing-failed-icon');
        return item;
      }
      case 'gold': {
        const item = new vscode.TreeItem('Gold patch (hidden)');
        item.description = 'click to show';
        item.iconPath = new vscode.ThemeIcon('eye-closed');
        item.command = { command: 'harnessRl.showGoldPatch', title: 'Show Gold Patch', arguments: [node] };
        return item;
      }
    }
  }
}

/** Gold patches as read-only documents (harness-rl-gold:/<instance>.diff), opened only when asked for. */
export class GoldPatches implements vscode.TextDocumentContentProvider {
  static readonly scheme = 'harness-rl-gold';
  /** The patches shown in this window (a few KB each, as many as tasks clicked). */
  private readonly patches = new Map<string, string>();

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.patches.get(uri.path) ?? '';
  }

  async show(arg: unknown): Promise<void> {
    const node = arg as TasksNode | undefined;
    if (node?.kind !== 'gold') return;
    const uri = vscode.Uri.from({ scheme: GoldPatches.scheme, path: `/${node.task.instance_id}.diff` });
    this.patches.set(uri.path, node.task.patch);
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.languages.setTextDocumentLanguage(doc, 'diff');
    await vscode.window.showTextDocument(doc, { preview: true });
  }
}
