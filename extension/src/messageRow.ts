// A row that only says something (an error met loading a level, "no calls recorded yet"), the same in
// every tree view: its text, no children, an icon (info unless it says otherwise).
import * as vscode from 'vscode';
import { errorText } from './client';

export type MessageNode = { kind: 'message'; text: string; icon?: string };

/** The row of an error a tree met loading a level. */
export const errorRow = (err: unknown): MessageNode => ({
  kind: 'message',
  text: errorText(err),
  icon: 'error',
});

export function messageItem(node: MessageNode): vscode.TreeItem {
  const item = new vscode.TreeItem(node.text, vscode.TreeItemCollapsibleState.None);
  item.iconPath = new vscode.ThemeIcon(node.icon ?? 'info');
  return item;
}
