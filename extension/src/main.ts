// Entry point: activation builds the Ctx (views, status bar, commands) and connects to a running
// daemon in the background; nothing blocks on the network. Deactivation stops a daemon we started.
import * as vscode from 'vscode';
import { registerCommands, validateConfigDocument } from './commands';
import { Ctx } from './ctx';
import { registerLanguageModel } from './lm';
import { DASHBOARD_VIEW, DashboardPanel, TRAJECTORY_VIEW, TrajectoryPanel } from './panels';

let ctx: Ctx | undefined;

export interface HarnessRlApi {
  /** milliseconds activate() took (printed by the VS Code tests) */
  activationMs: number;
  ctx: Ctx;
}

export function activate(context: vscode.ExtensionContext): HarnessRlApi {
  const started = performance.now();
  ctx = new Ctx(context);
  context.subscriptions.push(ctx);
  registerCommands(ctx);
  ctx.push(
    vscode.window.registerWebviewPanelSerializer(TRAJECTORY_VIEW, TrajectoryPanel.serializer(ctx)),
    vscode.window.registerWebviewPanelSerializer(DASHBOARD_VIEW, DashboardPanel.serializer(ctx)),
    // keep run-config diagnostics fresh while the person fixes the file
    vscode.workspace.onDidChangeTextDocument((e) => {
      if (ctx?.diagnostics.has(e.document.uri)) validateConfigDocument(ctx, e.document);
    }),
    vscode.workspace.onDidCloseTextDocument((doc) => ctx?.diagnostics.delete(doc.uri)),
  );
  registerLanguageModel(ctx);
  void ctx.connectQuietly();
  const activationMs = performance.now() - started;
  ctx.log.appendLine(`activated in ${activationMs.toFixed(1)} ms`);
  return { activationMs, ctx };
}

export async function deactivate(): Promise<void> {
  await ctx?.stop();
  ctx = undefined;
}
