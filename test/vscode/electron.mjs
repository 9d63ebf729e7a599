#!/usr/bin/env node
// The same extension checks in desktop VS Code via @vscode/test-electron 2.5 (Node 20), where a VS Code
// is installed: VSCODE_EXECUTABLE_PATH=/path/to/code node test/vscode/electron.mjs
// (this machine has no desktop VS Code and cannot download one; test/vscode/run.mjs uses code-server).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runTests } from '@vscode/test-electron';

const root = fileURLToPath(new URL('../..', import.meta.url));
const vscodeExecutablePath = process.env.VSCODE_EXECUTABLE_PATH;
if (!vscodeExecutablePath) {
  process.stderr.write('set VSCODE_EXECUTABLE_PATH to a VS Code executable (no download is attempted)\n');
  process.exit(2);
}
const workspace = mkdtempSync(join(tmpdir(), 'harness-rl-electron-'));
try {
  await runTests({
    vscodeExecutablePath,
    extensionDevelopmentPath: root,
    extensionTestsPath: join(root, 'test', 'vscode', 'suite', 'index.cjs'),
    launchArgs: [workspace, '--disable-extensions', '--disable-workspace-trust'],
  });
} catch (err) {
  process.stderr.write(`VS Code tests failed: ${err}\n`);
  process.exit(1);
}
