// Nodes → their GPUs: the node agents the daemon connects to for runs (GET /api/nodes), kept live
// from the 'node' events without refetching. Rows are rendered by nodeLabels.ts.
import * as vscode from 'vscode';
import type { NodeInfo } from '../../daemon/protocol/entities';
import type { DaemonEvent } from '../../daemon/protocol/events';
import { type DaemonClient, errorText } from './client';
import { compareNodes, type GpuRow, nodeChanged, nodeRow } from './nodeLabels';
import { Throttle } from './throttle';

export type NodesNode =
  | { kind: 'node'; node: NodeInfo }
  | { kind: 'gpu'; gpu: GpuRow }
  | { kind: 'message'; text: string; icon?: string };

export class NodesTree implements vscode.TreeDataProvider<NodesNode>, vscode.Disposable {
  private readonly emitter = new vscode.EventEmitter<NodesNode | undefined>();
  readonly onDidChangeTreeData = this.emitter.event;
  private readonly redraw = new Throttle(() => this.emitter.fire(undefined), 300);
  /** By node id; undefined until the first GET /api/nodes (and after refresh). */
  private nodes: Map<string, NodeInfo> | undefined;

  constructor(private readonly getClient: () => DaemonClient | undefined) {}

  refresh(): void {
    this.nodes = undefined;
    this.emitter.fire(undefined);
  }

  async getChildren(node?: NodesNode): Promise<NodesNode[]> {
    const client = this.getClient();
    if (!client) return [];
    if (node?.kind === 'node') return nodeRow(node.node).gpus.map((gpu) => ({ kind: 'gpu' as const, gpu }));
    if (node) return [];
    try {
      if (!this.nodes) {
        const listed = await client.listNodes();
        this.nodes = new Map(listed.map((n) => [n.id, n]));
      }
    } catch (err) {
      return [{ kind: 'message', text: errorText(err), icon: 'error' }];
    }
    // none: the view's welcome text says how to add nodes
    return [...this.nodes.values()].sort(compareNodes).map((n) => ({ kind: 'node' as const, node: n }));
  }

  getTreeItem(node: NodesNode): vscode.TreeItem {
    const C = vscode.TreeItemCollapsibleState;
    switch (node.kind) {
      case 'node': {
        const row = nodeRow(node.node);
        const item = new vscode.TreeItem(row.label, row.gpus.length ? C.Collapsed : C.None);
        item.id = node.node.id;
        item.description = row.description;
        item.iconPath = new vscode.ThemeIcon(row.icon, new vscode.ThemeColor(row.color));
        const tooltip = new vscode.MarkdownString(row.tooltip);
        tooltip.supportThemeIcons = true;
        item.tooltip = tooltip;
        item.contextValue = row.contextValue;
        return item;
      }
      case 'gpu': {
        const item = new vscode.TreeItem(node.gpu.label, C.None);
        item.id = node.gpu.id;
        item.description = node.gpu.description;
        item.tooltip = node.gpu.tooltip;
        item.iconPath = new vscode.ThemeIcon('circuit-board');
        return item;
      }
      case 'message': {
        const item = new vscode.TreeItem(node.text, C.None);
        item.iconPath = new vscode.ThemeIcon(node.icon ?? 'info');
        return item;
      }
    }
  }

  /** A 'node' event that changes what the row shows replaces it; the view redraws at most every 300 ms. */
  onEvent(e: DaemonEvent): void {
    if (e.type !== 'node' || !this.nodes) return;
    const shown = this.nodes.get(e.node.id);
    if (shown && !nodeChanged(shown, e.node)) return;
    this.nodes.set(e.node.id, e.node);
    this.redraw.schedule();
  }

  dispose(): void {
    this.redraw.dispose();
    this.emitter.dispose();
  }
}
