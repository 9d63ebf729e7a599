// "Import Past Sessions…": a quick pick of the agent (Claude Code, Codex), then each of its session
// files not imported yet goes to the daemon (POST /api/imports) one at a time under a cancellable
// progress notification; bad lines and what was left out go to the log, the recordings view refreshes.
import * as path from 'node:path';
import * as vscode from 'vscode';
import { sessionsRoot } from '../../daemon/import/files';
import { type ImportSource, ScannedImports, SessionImport } from '../../daemon/protocol/imports';
import { count } from '../../webview/src/format';
import type { DaemonClient } from './client';
import { errorText } from './client';
import type { Ctx } from './ctx';

/** An import's sessions can take a while each (a long session is thousands of calls to tokenize). */
const IMPORT_TIMEOUT_MS = 10 * 60_000;

const SOURCES: { label: string; source: ImportSource }[] = [
  { label: 'Claude Code', source: 'claude-code' },
  { label: 'Codex', source: 'codex' },
];

/** The message after an import (pure). */
export function importSummary(label: string, results: SessionImport[], cancelled: boolean): string {
  const by = (s: SessionImport['status']) => results.filter((r) => r.status === s);
  const calls = by('imported').reduce((n, r) => n + r.calls, 0);
  const bad = results.reduce((n, r) => n + r.bad_lines.length, 0);
  const parts = [`imported ${count(by('imported').length, `${label} session`)} (${count(calls, 'call')})`];
  if (by('empty').length) parts.push(`${by('empty').length} without a model answer`);
  if (by('failed').length) parts.push(`${by('failed').length} failed`);
  if (bad) parts.push(`${count(bad, 'bad line')} skipped (see the log)`);
  if (cancelled) parts.push('cancelled');
  return `Harness RL: ${parts.join('; ')}.`;
}

export async function importPastSessions(ctx: Ctx, client: DaemonClient): Promise<void> {
  const pick = await vscode.window.showQuickPick(
    SOURCES.map((s) => ({ ...s, description: sessionsRoot(s.source) })),
    { title: 'Import Past Sessions: from which agent?' },
  );
  if (!pick) return;
  const root = sessionsRoot(pick.source);
  const scan = await client.request('POST', '/api/imports/scan', ScannedImports, {
    source: pick.source,
    root,
  });
  for (const s of scan.skipped)
    ctx.log.appendLine(`import: skipped ${s} (a session file the daemon cannot read)`);
  const todo = scan.sessions.filter((s) => s.recording_id === null);
  if (!todo.length) {
    void vscode.window.showInformationMessage(
      scan.sessions.length
        ? `Harness RL: all ${count(scan.sessions.length, `${pick.label} session`)} in ${scan.root} are imported already.`
        : `Harness RL: no ${pick.label} sessions in ${scan.root}.`,
    );
    return;
  }
  const results: SessionImport[] = [];
  let cancelled = false;
  await vscode.window.withProgress(
    {
      location: vscode.ProgressLocation.Notification,
      title: `Harness RL: importing ${count(todo.length, `${pick.label} session`)}`,
      cancellable: true,
    },
    async (progress, token) => {
      for (const [i, s] of todo.entries()) {
        if (token.isCancellationRequested) {
          cancelled = true;
          break;
        }
        progress.report({ message: `${i + 1}/${todo.length}: ${path.basename(s.path)}` });
        try {
          const r = await client.request(
            'POST',
            '/api/imports',
            SessionImport,
            { source: pick.source, root: scan.root, path: s.path },
            IMPORT_TIMEOUT_MS,
          );
          results.push(r);
          ctx.log.appendLine(`import: ${r.status} ${r.path}${r.error ? `: ${r.error}` : ''}`);
          for (const line of [...r.bad_lines, ...r.notes]) ctx.log.appendLine(`  ${line}`);
        } catch (err) {
          ctx.log.appendLine(`import: ${s.path} failed: ${errorText(err)}`);
          results.push({ ...s, status: 'failed', calls: 0, bad_lines: [], notes: [], error: errorText(err) });
        }
        progress.report({ increment: 100 / todo.length });
      }
    },
  );
  ctx.refreshViews();
  const message = importSummary(pick.label, results, cancelled);
  if (results.some((r) => r.status === 'failed')) void vscode.window.showWarningMessage(message);
  else void vscode.window.showInformationMessage(message);
}
