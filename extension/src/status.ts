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
    this.item.command = 'harnessRl.showLogs';
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
      ],
    };
    md.appendMarkdown(`**Harness RL** — ${detail}\n\n`);
    const links =
      s.kind === 'stopped' || s.kind === 'failed'
        ? ['[$(play) Start](command:harnessRl.startDaemon)']
        : s.kind === 'found'
          ? ['[$(key) Set Token…](command:harnessRl.setDaemonToken)']
          : [
              '[$(debug-stop) Stop](command:harnessRl.stopDaemon)',
              '[$(debug-restart) Restart](command:harnessRl.restartDaemon)',
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
