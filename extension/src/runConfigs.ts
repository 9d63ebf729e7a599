// Run configs in the workspace: found (files with `tasks` at the top or under `run`), checked with
// the daemon's schema (problems as diagnostics on their lines), and started as runs (Start Run…).
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { DaemonClient } from './client';
import { errorText } from './client';
import { checkRunConfig, isRunConfigText } from './configDiagnostics';
import type { Ctx } from './ctx';
import { DashboardPanel } from './panels';

/** Workspace files that look like run configs (have `tasks` at the top or under `run`). */
export async function findRunConfigs(): Promise<vscode.Uri[]> {
  const files = await vscode.workspace.findFiles(
    '**/*.{yaml,yml,json}',
    '{**/node_modules/**,**/dist/**,**/.cache/**,**/build/**,**/package*.json,**/tsconfig*.json,**/.vscode/**}',
    500,
  );
  const out: vscode.Uri[] = [];
  for (const uri of files) {
    try {
      const text = Buffer.from(await vscode.workspace.fs.readFile(uri)).toString('utf8');
      if (isRunConfigText(text)) out.push(uri);
    } catch {
      // unreadable
    }
  }
  return out.sort((a, b) => a.fsPath.localeCompare(b.fsPath));
}

/** Validates a config document and shows its problems as diagnostics; returns the config when valid. */
export function validateConfigDocument(ctx: Ctx, doc: vscode.TextDocument) {
  const dir = path.dirname(doc.uri.fsPath);
  const check = checkRunConfig(doc.getText(), (file) =>
    doc.uri.scheme === 'file' ? existsSync(path.resolve(dir, file)) : true,
  );
  ctx.diagnostics.set(
    doc.uri,
    check.problems.map((p) => {
      const d = new vscode.Diagnostic(
        new vscode.Range(
          p.line,
          p.col,
          p.endLine,
          Math.max(p.endCol, p.line === p.endLine ? p.col + 1 : p.endCol),
        ),
        p.message,
        vscode.DiagnosticSeverity.Error,
      );
      d.source = 'harness-rl';
      return d;
    }),
  );
  return check;
}

/** Start Run…: the config given, open in the editor or picked, checked, then started; its dashboard opens. */
export async function startRun(ctx: Ctx, client: DaemonClient, arg: unknown) {
  let uri = arg instanceof vscode.Uri ? arg : undefined;
  if (!uri) {
    const configs = await findRunConfigs();
    const activeDoc = vscode.window.activeTextEditor?.document;
    const active = activeDoc?.uri;
    // the config open in the editor comes first, wherever it lives (inside the workspace or not)
    if (
      activeDoc &&
      isRunConfigText(activeDoc.getText()) &&
      !configs.some((u) => u.toString() === active?.toString())
    )
      configs.unshift(activeDoc.uri);
    const items = configs.map((u) => ({ label: vscode.workspace.asRelativePath(u), uri: u }));
    if (active && configs.some((u) => u.toString() === active.toString())) {
      items.sort((a) => (a.uri.toString() === active.toString() ? -1 : 0));
    }
    items.push({ label: '$(folder-opened) Browse…', uri: undefined as unknown as vscode.Uri });
    const pick = await vscode.window.showQuickPick(items, { title: 'Start run: pick a run config' });
    if (!pick) return;
    uri =
      pick.uri ??
      (
        await vscode.window.showOpenDialog({
          filters: { 'Run config': ['yaml', 'yml', 'json'] },
          canSelectMany: false,
        })
      )?.[0];
    if (!uri) return;
  }
  const doc = await vscode.workspace.openTextDocument(uri);
  const check = validateConfigDocument(ctx, doc);
  if (!check.config) {
    const pick = await vscode.window.showErrorMessage(
      `Harness RL: ${vscode.workspace.asRelativePath(uri)} has ${check.problems.length} problem${check.problems.length === 1 ? '' : 's'}: ${check.problems[0]?.message ?? ''}`,
      'Show Problems',
    );
    if (pick) {
      await vscode.window.showTextDocument(doc);
      void vscode.commands.executeCommand('workbench.actions.view.problems');
    }
    return;
  }
  try {
    const run = await client.createRun({ config: check.config, base_dir: path.dirname(uri.fsPath) });
    ctx.log.appendLine(`run ${run.id} "${run.name}" started from ${uri.fsPath}`);
    ctx.runsTree.refresh();
    DashboardPanel.show(ctx, run.id, run.name);
    void vscode.window.showInformationMessage(`Harness RL: run "${run.name}" started.`);
  } catch (err) {
    void vscode.window.showErrorMessage(`Harness RL: could not start the run: ${errorText(err)}`);
  }
}
