// Recordings → their llm calls. Live from /api/events.
import * as vscode from 'vscode';
import type { LlmCall, Recording } from '../../daemon/protocol/entities';
import type { DaemonEvent } from '../../daemon/protocol/events';
import type { DaemonClient } from './client';
import { callLabel, recordingName, statusIcon } from './labels';
import { errorRow, type MessageNode, messageItem } from './messageRow';
import { Throttle } from './throttle';

export type RecordingsNode =
  | { kind: 'recording'; recording: Recording }
  | { kind: 'call'; call: LlmCall }
  | MessageNode;

export class RecordingsTree implements vscode.TreeDataProvider<RecordingsNode>, vscode.Disposable {
  private readonly emitter = new vscode.EventEmitter<RecordingsNode | undefined>();
  readonly onDidChangeTreeData = this.emitter.event;
  private readonly redraw = new Throttle(() => this.emitter.fire(undefined), 300);
  recordings: Recording[] = [];

  constructor(private readonly getClient: () => DaemonClient | undefined) {}

  refresh(): void {
    this.emitter.fire(undefined);
  }

  async getChildren(node?: RecordingsNode): Promise<RecordingsNode[]> {
    const client = this.getClient();
    if (!client) return [];
    try {
      if (!node) {
        this.recordings = await client.listRecordings();
        return this.recordings.map((recording) => ({ kind: 'recording' as const, recording }));
      }
      if (node.kind === 'recording') {
        const d = await client.getRollout(node.recording.rollout_id);
        if (d.llm_calls.length === 0) return [{ kind: 'message', text: 'No calls recorded yet' }];
        return d.llm_calls.map((call) => ({ kind: 'call' as const, call }));
      }
    } catch (err) {
      return [errorRow(err)];
    }
    return [];
  }

  getTreeItem(node: RecordingsNode): vscode.TreeItem {
    if (node.kind === 'message') return messageItem(node);
    if (node.kind === 'call') {
      const { label, description } = callLabel(node.call);
      const item = new vscode.TreeItem(label);
      item.id = `rcall:${node.call.id}`;
      item.description = description;
      item.iconPath = new vscode.ThemeIcon(statusIcon(node.call.status));
      if (node.call.rollout_id) {
        item.command = {
          command: 'harnessRl.openTrajectory',
          title: 'Open Trajectory',
          arguments: [{ kind: 'rolloutId', id: node.call.rollout_id, call_id: node.call.id }],
        };
      }
      return item;
    }
    const r = node.recording;
    const label = recordingName(r.name);
    const item = new vscode.TreeItem(label, vscode.TreeItemCollapsibleState.Collapsed);
    if (label !== r.name) item.tooltip = r.name;
    item.id = `recording:${r.id}`;
    const upstream = r.upstream as { kind?: string } | null;
    item.description = `${r.status}${upstream?.kind ? ` · ${upstream.kind}` : ''} · ${new Date(r.created_at).toLocaleString()}`;
    item.iconPath = new vscode.ThemeIcon(statusIcon(r.status));
    item.contextValue = `recording.${r.status}`;
    // a click opens the conversation; the twistie still lists the calls
    item.command = { command: 'harnessRl.openTrajectory', title: 'Open Trajectory', arguments: [node] };
    return item;
  }

  onEvent(e: DaemonEvent): void {
    const relevant = e.type === 'recording' || (e.type === 'llm_call' && e.call.recording_id !== null);
    if (relevant) this.redraw.schedule();
  }

  dispose(): void {
    this.redraw.dispose();
    this.emitter.dispose();
  }
}
