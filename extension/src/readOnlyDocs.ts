// Read-only documents the extension shows (an attempt's output) under a scheme of its own: closing one
// never asks to save it, as an untitled document would.
import * as vscode from 'vscode';

export class ReadOnlyDocs implements vscode.TextDocumentContentProvider, vscode.Disposable {
  static readonly scheme = 'harness-rl-output';
  private readonly texts = new Map<string, string>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.path) ?? '';
  }

  /** Shows `text` as the read-only document `name` (shown again, it gets the new text). */
  async show(name: string, text: string, language: string): Promise<void> {
    const uri = vscode.Uri.from({ scheme: ReadOnlyDocs.scheme, path: `/${name}` });
    this.texts.set(uri.path, text);
    this.changed.fire(uri);
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.languages.setTextDocumentLanguage(doc, language);
    await vscode.window.showTextDocument(doc, { preview: true });
  }

  dispose(): void {
    this.changed.dispose();
  }
}
