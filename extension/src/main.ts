// Entry point, kept small: activation registers the contributed commands, the tree views, the
// webview serializers and the status bar, and nothing else. The rest (dist/core.cjs: zod, yaml, ws,
// the daemon client) loads on first use or right after activation, off the activation path.
import * as vscode from 'vscode';
import type { Core } from './core';
import { StatusBar } from './status';

let core: Core | undefined;
let loadCore: (() => Core) | undefined;

export interface HarnessRlApi {
  /** milliseconds activate() took (printed by the VS Code tests) */
  activationMs: number;
  core(): Core;
}

/** A tree provider that loads the core on first expansion and then delegates to the real one. */
class LazyTree<T> implements vscode.TreeDataProvider<T> {
  private readonly emitter = new vscode.EventEmitter<T | undefined | undefined>();
  readonly onDidChangeTreeData = this.emitter.event;
  private real: vscode.TreeDataProvider<T> | undefined;

  constructor(private readonly pick: (c: Core) => vscode.TreeDataProvider<T>) {}

  private provider(): vscode.TreeDataProvider<T> {
    if (!this.real) {
      this.real = this.pick(loadCore!());
      this.real.onDidChangeTreeData?.((e) => this.emitter.fire(e as T | undefined));
    }
    return this.real;
  }
  getChildren(element?: T) {
    return this.provider().getChildren(element);
  }
  getTreeItem(element: T) {
    return this.provider().getTreeItem(element);
  }
}

export function activate(context: vscode.ExtensionContext): HarnessRlApi {
  const started = performance.now();
  const log = vscode.window.createOutputChannel('Harness RL');
  const status = new StatusBar();
  context.subscriptions.push(log, status);
  loadCore = () => {
    if (!core) {
      const t = performance.now();
      const mod = require('./core.cjs') as typeof import('./core');
      core = mod.createCore(context, log, status);
      context.subscriptions.push(core.ctx);
      log.appendLine(`core loaded in ${(performance.now() - t).toFixed(1)} ms`);
    }
    return core;
  };
  const commands = (context.extension.packageJSON.contributes?.commands ?? []) as { command: string }[];
  for (const { command } of commands) {
    context.subscriptions.push(
      vscode.commands.registerCommand(command, (...args: unknown[]) => loadCore!().run(command, args)),
    );
  }
  context.subscriptions.push(
    vscode.window.createTreeView('harnessRl.runs', {
      treeDataProvider: new LazyTree((c) => c.ctx.runsTree),
      showCollapseAll: true,
    }),
    vscode.window.createTreeView('harnessRl.recordings', {
      treeDataProvider: new LazyTree((c) => c.ctx.recordingsTree),
    }),
    vscode.window.registerWebviewPanelSerializer('harnessRl.trajectory', {
      deserializeWebviewPanel: (panel, state) =>
        loadCore!().serializers.trajectory.deserializeWebviewPanel(panel, state),
    }),
    vscode.window.registerWebviewPanelSerializer('harnessRl.dashboard', {
      deserializeWebviewPanel: (panel, state) =>
        loadCore!().serializers.dashboard.deserializeWebviewPanel(panel, state),
    }),
    vscode.window.registerWebviewPanelSerializer('harnessRl.evaluation', {
      deserializeWebviewPanel: (panel, state) =>
        loadCore!().serializers.evaluation.deserializeWebviewPanel(panel, state),
    }),
  );
  const activationMs = performance.now() - started;
  log.appendLine(`activated in ${activationMs.toFixed(1)} ms`);
  // connect to a daemon that already runs, off the activation path
  setTimeout(() => void loadCore?.().ctx.connectQuietly(), 0);
  return { activationMs, core: () => loadCore!() };
}

export async function deactivate(): Promise<void> {
  await core?.ctx.stop();
  core = undefined;
}
