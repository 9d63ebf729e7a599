// Runs inside the VS Code extension host (test/vscode/electron.mjs): activation, commands, views.
const assert = require('node:assert');
const vscode = require('vscode');

exports.run = async function run() {
  const ext = vscode.extensions.getExtension('harness-rl.harness-rl');
  assert.ok(ext, 'extension harness-rl.harness-rl is installed');
  const api = await ext.activate();
  console.log(`harness-rl activate() took ${api.activationMs.toFixed(1)} ms`);
  assert.ok(api.activationMs < 100, `activation took ${api.activationMs} ms`);
  const all = new Set(await vscode.commands.getCommands(true));
  for (const c of ext.packageJSON.contributes.commands)
    assert.ok(all.has(c.command), `${c.command} is registered`);
  // the core loads on first use and the runs tree answers without a daemon
  const core = api.core();
  assert.deepStrictEqual(await core.ctx.runsTree.getChildren(), []);
  await vscode.commands.executeCommand('workbench.view.extension.harnessRl');
};
