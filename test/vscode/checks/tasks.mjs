// Make Tasks from This Repository… and the Tasks view.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ctx, page, root, shot, step } from '../lib/harness.mjs';
import { expand, treeRow } from '../lib/sidebar.mjs';
import { palette, toast } from '../lib/workbench.mjs';

export async function makeTasks() {
  await step(
    'Make Tasks from This Repository…: the test command asked and remembered, progress and cancel; the Tasks view lists the tasks with their failing tests, the gold patch hidden until asked for',
    makeTasksFromRepository,
  );
}

async function makeTasksFromRepository() {
  // a small Python repository as the open folder's code
  writeFileSync(
    join(ctx.ws, 'clamp.py'),
    'def clamp(x, lo, hi):\n    if x < lo:\n        return lo\n    if x > hi:\n        return hi\n    return x\n',
  );
  writeFileSync(
    join(ctx.ws, 'test_clamp.py'),
    'from clamp import clamp\ndef test_below():\n    assert clamp(-1, 0, 3) == 0\ndef test_above():\n    assert clamp(5, 0, 3) == 3\ndef test_inside():\n    assert clamp(2, 0, 3) == 2\n',
  );
  const pytest = `${join(root, '.cache/synth-python/venv/bin/python')} -m pytest`;
  const input = page.locator('.quick-input-widget input');
  await palette('Harness RL: Make Tasks from This Repository…');
  await input.waitFor({ state: 'visible' });
  await input.fill(pytest);
  await page.keyboard.press('Enter');
  await toast('mutants tried').first().waitFor({ timeout: 60_000 });
  await shot('15a-making-tasks');
  await toast(/\d+ tasks from \d+ mutants\./)
    .first()
    .waitFor({ timeout: 240_000 });
  const file = join(ctx.ws, '.harness-rl', 'tasks', 'tasks.jsonl');
  const tasks = readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  if (tasks.length === 0) throw new Error('no tasks were made');
  await palette('Harness RL: Focus on Tasks View');
  const pane = page.locator('.pane', { has: page.locator('.pane-header', { hasText: /^Tasks/ }) }).first();
  await expand(treeRow(pane, 'tasks.jsonl'));
  const task = tasks[0];
  await expand(treeRow(pane, task.instance_id));
  await treeRow(pane, task.FAIL_TO_PASS[0]).waitFor({ timeout: 20_000 });
  const patchShown = page.locator('.editor-instance .view-lines', { hasText: 'a/clamp.py' });
  if (await patchShown.count()) throw new Error('the gold patch shows before it is asked for');
  await treeRow(pane, 'Gold patch (hidden)').click();
  await patchShown.first().waitFor({ timeout: 20_000 });
  // a read-only document named after the task, not an untitled one to save
  await page.locator('.tabs-container .tab', { hasText: `${task.instance_id}.diff` }).waitFor();
  if (await page.locator('.tabs-container .tab.dirty').count())
    throw new Error('the gold patch opened as an unsaved file');
  await shot('15b-tasks-view-gold-patch');
  await palette('View: Close All Editors');
  // again: the command is remembered; cancelled while it runs, it keeps what it wrote
  await palette('Harness RL: Make Tasks from This Repository…');
  await input.waitFor({ state: 'visible' });
  if ((await input.inputValue()) !== pytest) throw new Error(`not remembered: ${await input.inputValue()}`);
  await page.keyboard.press('Enter');
  const progress = toast('mutants tried').first();
  await progress.waitFor({ timeout: 60_000 });
  await progress.getByRole('button', { name: 'Cancel' }).click();
  await toast('(cancelled)').first().waitFor({ timeout: 60_000 });
}
