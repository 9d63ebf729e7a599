// The status bar item: stopped / starting / idle / training step k / a run paused / recording.
import * as vscode from 'vscode';
import { describeStatus, type StatusView } from './labels';

export class StatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem(
    'harnessRl.status',
    vscode.StatusBarAlignment.Left,
    10,
  );

  constructor() {
    this.item.name = 'Harness RL';
    this.set({ kind: 'stopped' });
    this.item.show();
  }

  set(s: StatusView): void {
    const { text, detail } = describeStatus(s);
    this.item.text = text;
    const md = new vscode.MarkdownString(undefined, true);
    md.isTrusted = {
      enabledCommands: [
        'harnessRl.startDaemon',
        'harnessRl.setDaemonToken',
        'harnessRl.stopDaemon',
        'harnessRl.restartDaemon',
        'harnessRl.showLogs',
        'harnessRl.stopRecording',
        'harnessRl.openDashboard',
        'harnessRl.resumeRun',
        'harnessRl.stopRun',
      ],
    };
    md.appendMarkdown(`**Harness RL** — ${detail}\n\n`);
    if (s.kind === 'training' && s.runId) md.appendMarkdown(`${runLinks(s.runId).join(' · ')}\n\n`);
    const links =
      s.kind === 'stopped' || s.kind === 'failed'
        ? ['[$(play) Start Daemon](command:harnessRl.startDaemon)']
        : s.kind === 'found'
          ? ['[$(key) Set Token…](command:harnessRl.setDaemonToken)']
          : [
              '[$(debug-stop) Stop Daemon](command:harnessRl.stopDaemon)',
              '[$(debug-restart) Restart Daemon](command:harnessRl.restartDaemon)',
            ];
    if (s.kind === 'recording') links.push('[$(debug-stop) Stop recording](command:harnessRl.stopRecording)');
    if (s.kind === 'paused') {
      const arg = encodeURIComponent(JSON.stringify({ kind: 'runId', id: s.runId }));
      links.unshift(
        `[$(debug-continue) Resume run](command:harnessRl.resumeRun?${arg})`,
        `[$(graph) Dashboard](command:harnessRl.openDashboard?${arg})`,
      );
    }
    links.push('[$(output) Logs](command:harnessRl.showLogs)');
    md.appendMarkdown(links.join(' · '));
    this.item.command = itemCommand(s);
    this.item.tooltip = md;
    this.item.backgroundColor =
      s.kind === 'failed'
        ? new vscode.ThemeColor('statusBarItem.errorBackground')
        : s.kind === 'recording' || s.kind === 'paused'
          ? new vscode.ThemeColor('statusBarItem.warningBackground')
          : undefined;
  }

  dispose(): void {
    this.item.dispose();
  }
}

/**
 * A click on the item: the training run's dashboard while a run trains, else the logs. Commands
 * without arguments: VS Code wraps one with arguments in an internal command it replaces on every
 * change, and a click on an item redrawn a moment before found "command not found".
 */
function itemCommand(s: StatusView): string {
  return s.kind === 'training' && s.runId ? 'harnessRl.showTrainingRun' : 'harnessRl.showLogs';
}

/** The tooltip's line for the training run (its own, apart from the daemon's Stop and Restart). */
function runLinks(runId: string): string[] {
  const arg = encodeURIComponent(JSON.stringify([{ kind: 'runId', id: runId }]));
  return [
    `[$(graph) Open Dashboard](command:harnessRl.openDashboard?${arg})`,
    `[$(debug-stop) Stop Run…](command:harnessRl.stopRun?${arg})`,
  ];
}
