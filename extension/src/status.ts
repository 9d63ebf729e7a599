// The status bar item: stopped / starting / idle / training step k / recording.
import * as vscode from 'vscode';

export type StatusView =
  | { kind: 'stopped' }
  | { kind: 'starting' }
  | { kind: 'failed' }
  | { kind: 'idle'; url: string }
  | { kind: 'training'; run: string; step: number; steps?: number; url: string }
  | { kind: 'recording'; name: string; url: string };

/** Text, tooltip lines and colour of each state (pure; unit tested). */
export function describeStatus(s: StatusView): { text: string; detail: string } {
  switch (s.kind) {
    case 'stopped':
      return { text: '$(circle-slash) Harness RL', detail: 'Daemon stopped' };
    case 'starting':
      return { text: '$(loading~spin) Harness RL', detail: 'Daemon starting…' };
    case 'failed':
      return { text: '$(error) Harness RL', detail: 'Daemon failed — see the logs' };
    case 'idle':
      return { text: '$(pulse) Harness RL', detail: `Daemon idle at ${s.url}` };
    case 'training':
      return {
        text: `$(sync~spin) ${s.run} step ${s.step}${s.steps ? `/${s.steps}` : ''}`,
        detail: `Training run **${s.run}**, step ${s.step}${s.steps ? ` of ${s.steps}` : ''} (${s.url})`,
      };
    case 'recording':
      return { text: `$(record) Recording ${s.name}`, detail: `Recording **${s.name}** (${s.url})` };
  }
}

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
        'harnessRl.stopDaemon',
        'harnessRl.restartDaemon',
        'harnessRl.showLogs',
        'harnessRl.stopRecording',
        'harnessRl.openDashboard',
      ],
    };
    md.appendMarkdown(`**Harness RL** — ${detail}\n\n`);
    const links =
      s.kind === 'stopped' || s.kind === 'failed'
        ? ['[$(play) Start](command:harnessRl.startDaemon)']
        : [
            '[$(debug-stop) Stop](command:harnessRl.stopDaemon)',
            '[$(debug-restart) Restart](command:harnessRl.restartDaemon)',
          ];
    if (s.kind === 'recording') links.push('[$(debug-stop) Stop recording](command:harnessRl.stopRecording)');
    links.push('[$(output) Logs](command:harnessRl.showLogs)');
    md.appendMarkdown(links.join(' · '));
    this.item.tooltip = md;
    this.item.backgroundColor =
      s.kind === 'failed'
        ? new vscode.ThemeColor('statusBarItem.errorBackground')
        : s.kind === 'recording'
          ? new vscode.ThemeColor('statusBarItem.warningBackground')
          : undefined;
  }

  dispose(): void {
    this.item.dispose();
  }
}
