// The Runs view's rows: the nodes of its tree (runs → steps → groups → rollouts → attempts → llm
// calls, with the filter, "Evaluation runs" and "Load more…" rows) and how each is drawn.
import * as vscode from 'vscode';
import type { RolloutDetail } from '../../daemon/protocol/api';
import type { Attempt, Group, LlmCall, Rollout, Run } from '../../daemon/protocol/entities';
import { count, formatNumber } from '../../webview/src/format';
import {
  callLabel,
  formatReward,
  groupDescription,
  rewardColor,
  rolloutDescription,
  runDescription,
  statusIcon,
  taskText,
} from './labels';
import { type MessageNode, messageItem } from './messageRow';
import type { PagedList } from './paging';
import {
  filterText,
  type RolloutFilter,
  stepDescription,
  stepStatus,
  usesDynamicSampling,
} from './runsModel';

export type RunsNode =
  | { kind: 'run'; run: Run; groups: PagedList<Group> }
  | { kind: 'step'; run: Run; step: number; groups: Group[] }
  | { kind: 'group'; group: Group; rollouts: PagedList<Rollout> }
  | { kind: 'rollout'; rollout: Rollout; detail?: RolloutDetail; position?: number }
  | { kind: 'attempt'; attempt: Attempt; rollout: Rollout; calls: LlmCall[] }
  | { kind: 'call'; call: LlmCall; rollout: Rollout | undefined }
  | { kind: 'evaluations' }
  | { kind: 'more'; list: PagedList<{ id: string }>; parent: RunsNode | undefined }
  | { kind: 'filter' }
  | MessageNode;

const C = vscode.TreeItemCollapsibleState;

/** A run row: its label told apart from runs of the same name (runNames), a click opens its dashboard. */
export function runItem(node: RunsNode & { kind: 'run' }, label: string): vscode.TreeItem {
  const r = node.run;
  const item = new vscode.TreeItem(label, C.Collapsed);
  item.id = `run:${r.id}`;
  item.description = runDescription(r);
  item.tooltip = new vscode.MarkdownString(
    `**${label}** \`${r.id}\`${label.startsWith(r.name) ? '' : ` (${r.name})`}\n\n${r.status}, step ${r.step}, model version ${r.model_version}, started ${new Date(r.created_at).toLocaleString()}${r.error ? `\n\nerror: ${r.error}` : ''}`,
  );
  item.iconPath = new vscode.ThemeIcon(statusIcon(r.status));
  item.contextValue = `run.${r.status}`;
  item.command = { command: 'harnessRl.openDashboard', title: 'Open Run Dashboard', arguments: [node] };
  return item;
}

/** The filter row, when a filter is set. */
export function filterItem(filter: RolloutFilter): vscode.TreeItem {
  const item = new vscode.TreeItem(`Filter: ${filterText(filter)}`, C.None);
  item.id = 'filter';
  item.tooltip =
    'Only groups with a matching rollout, and in them only the matching rollouts. Click to change.';
  item.iconPath = new vscode.ThemeIcon('filter');
  item.command = { command: 'harnessRl.filterRollouts', title: 'Filter Rollouts…' };
  return item;
}

/** The one row the evaluations' runs sit under, with their count. */
export function evaluationsItem(list: PagedList<Run> | undefined): vscode.TreeItem {
  const item = new vscode.TreeItem('Evaluation runs', C.Collapsed);
  item.id = 'evaluations';
  item.description = list ? `${list.items.length}${list.hasMore ? '+' : ''}` : '';
  item.tooltip =
    "The runs of evaluations (Evaluate Harness…, an evolution's candidates): they score a harness and never train. Their figures are on the evaluation pages.";
  item.iconPath = new vscode.ThemeIcon('beaker');
  item.contextValue = 'evaluations';
  return item;
}

/** Any other row: drawn from its node alone. */
export function rowItem(
  node: Exclude<RunsNode, { kind: 'run' | 'filter' | 'evaluations' }>,
): vscode.TreeItem {
  switch (node.kind) {
    case 'step': {
      const item = new vscode.TreeItem(`step ${node.step}`, C.Collapsed);
      item.id = `step:${node.run.id}:${node.step}`;
      item.description = stepDescription(node.groups, {
        dynamicSampling: usesDynamicSampling(node.run.config),
      });
      item.iconPath = new vscode.ThemeIcon(statusIcon(stepStatus(node.groups)));
      item.contextValue = 'step';
      return item;
    }
    case 'group': {
      const g = node.group;
      const task = taskText(g.task_input);
      const item = new vscode.TreeItem(task || `group ${g.id.slice(-8)}`, C.Collapsed);
      item.id = `group:${g.id}`;
      item.description = groupDescription(g);
      item.tooltip = new vscode.MarkdownString().appendText(
        `${taskText(g.task_input, 500) || 'no task'}\n\ngroup ${g.id}, step ${g.step}, ${g.status}`,
      );
      item.iconPath = new vscode.ThemeIcon(statusIcon(g.status));
      item.contextValue = 'group';
      return item;
    }
    case 'rollout':
      return rolloutItem(node);
    case 'attempt': {
      const a = node.attempt;
      const item = new vscode.TreeItem(`attempt ${a.index}`, node.calls.length ? C.Collapsed : C.None);
      item.id = `attempt:${a.id}`;
      item.description = `${a.status} · ${count(node.calls.length, 'call')}${a.worker ? ` · ${a.worker}` : ''}`;
      item.tooltip = a.error ?? undefined;
      item.iconPath = new vscode.ThemeIcon(statusIcon(a.status));
      item.contextValue = 'attempt';
      return item;
    }
    case 'call':
      return callItem(node.call);
    case 'more': {
      const item = new vscode.TreeItem('Load more…', C.None);
      item.iconPath = new vscode.ThemeIcon('ellipsis');
      item.contextValue = 'more';
      item.command = { command: 'harnessRl.loadMore', title: 'Load More', arguments: [node] };
      return item;
    }
    case 'message':
      return messageItem(node);
  }
}

/** A rollout's row: its status, reward colour and the trajectory it opens. */
function rolloutItem(node: Extract<RunsNode, { kind: 'rollout' }>): vscode.TreeItem {
  const r = node.rollout;
  const label = node.position ? `#${node.position}` : taskText(r.input) || `rollout ${r.id.slice(-8)}`;
  const item = new vscode.TreeItem(label, C.Collapsed);
  item.id = `rollout:${r.id}`;
  item.description = rolloutDescription(r);
  item.tooltip = new vscode.MarkdownString().appendText(
    `${taskText(r.input, 500) || 'no task'}\n\nrollout ${r.id}: ${r.status}, ${formatReward(r.reward)}, attempt ${formatNumber(r.attempt_count)} of ${formatNumber(r.max_attempts)}${r.error ? `\n\nerror${r.failure ? ` (${r.failure.kind}: ${r.failure.reason})` : ''}: ${r.error}` : ''}`,
  );
  const color = rewardColor(r.reward);
  item.iconPath = new vscode.ThemeIcon(
    statusIcon(r.status),
    color ? new vscode.ThemeColor(color) : undefined,
  );
  item.contextValue = `rollout.${r.status}`;
  item.command = { command: 'harnessRl.openTrajectory', title: 'Open Trajectory', arguments: [node] };
  return item;
}

/** An LLM call's row; a call of a rollout opens that rollout's trajectory at the call. */
function callItem(c: LlmCall): vscode.TreeItem {
  const { label, description } = callLabel(c);
  const item = new vscode.TreeItem(label, C.None);
  item.id = `call:${c.id}`;
  item.description = description;
  item.tooltip = c.error ?? undefined;
  item.iconPath = new vscode.ThemeIcon(statusIcon(c.status));
  item.contextValue = 'call';
  if (c.rollout_id) {
    item.command = {
      command: 'harnessRl.openTrajectory',
      title: 'Open Trajectory',
      arguments: [{ kind: 'rolloutId', id: c.rollout_id, call_id: c.id }],
    };
  }
  return item;
}
