// Everything behind the first use: the daemon client and manager (zod, ws), commands, trees,
// webview panels, config diagnostics, recording. main.ts loads this bundle (dist/core.cjs) lazily so
// activation stays fast.
import * as vscode from 'vscode';
import { runCommand } from './commands';
import { isRunConfigText } from './configDiagnostics';
import { Ctx } from './ctx';
import { EvaluationPanel } from './evaluationPanel';
import { registerLanguageModel } from './lm';
import { DashboardPanel, TrajectoryPanel } from './panels';
import { validateConfigDocument } from './runConfigs';
import type { StatusBar } from './status';

export interface Core {
  ctx: Ctx;
  run(id: string, args: unknown[]): Promise<unknown>;
  serializers: {
    trajectory: vscode.WebviewPanelSerializer;
    dashboard: vscode.WebviewPanelSerializer;
    evaluation: vscode.WebviewPanelSerializer;
  };
}

function validateIfRunConfig(ctx: Ctx, doc: vscode.TextDocument) {
  const kinds = ['yaml', 'json', 'jsonc'];
  if (doc.uri.scheme !== 'file' || !kinds.includes(doc.languageId)) return;
  if (isRunConfigText(doc.getText())) validateConfigDocument(ctx, doc);
}

export function createCore(
  context: vscode.ExtensionContext,
  log: vscode.OutputChannel,
  status: StatusBar,
): Core {
  const ctx = new Ctx(context, log, status);
  ctx.push(
    // keep run-config diagnostics fresh while the person fixes the file
    vscode.workspace.onDidChangeTextDocument((e) => {
      if (ctx.diagnostics.has(e.document.uri)) validateConfigDocument(ctx, e.document);
    }),
    vscode.workspace.onDidCloseTextDocument((doc) => ctx.diagnostics.delete(doc.uri)),
    // a run config shows its problems as soon as it is open, not only once Start Run is tried
    vscode.workspace.onDidOpenTextDocument((doc) => validateIfRunConfig(ctx, doc)),
  );
  for (const doc of vscode.workspace.textDocuments) validateIfRunConfig(ctx, doc);
  try {
    if (!registerLanguageModel(ctx))
      log.appendLine(
        `The Harness RL chat models (Chat's model picker) need VS Code 1.104 or newer; this is ${vscode.version}, so they are not offered.`,
      );
  } catch (err) {
    // an API shape this VS Code does not have must not take the rest of the extension down
    log.appendLine(
      `language model provider not registered: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  return {
    ctx,
    run: (id, args) => runCommand(ctx, id, args),
    serializers: {
      trajectory: TrajectoryPanel.serializer(ctx),
      dashboard: DashboardPanel.serializer(ctx),
      evaluation: EvaluationPanel.serializer(ctx),
    },
  };
}
