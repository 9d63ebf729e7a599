// Evaluations: Evaluate Harness… on a tiny config and its page, its run kept apart in the Runs view,
// Compare Evaluations… and the Evolution view's Compare with Parent, a candidate's link to its evaluation.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { api } from '../lib/daemon.mjs';
import { ctx, figures, page, shot, waitFor } from '../lib/harness.mjs';
import { collapse, evolutionPane, expand, runsPane, treeRow } from '../lib/sidebar.mjs';
import { hoverOf, palette, quickPick, webview } from '../lib/workbench.mjs';

export async function evaluateAndCompare() {
  const stored = await evaluateTinyConfig();
  await evaluationRunApart(stored);
  const child = await compareEvaluations();
  const row = await compareWithParent(child);
  await candidateLinksToEvaluation(row, child);
}

async function evaluateTinyConfig() {
  // a tiny config beside the evolution's harness (the Evolution step copied it into the workspace)
  const dir = join(ctx.ws, 'evolve');
  writeFileSync(
    join(dir, 'tiny-eval.run.yaml'),
    `run:
  name: vscode-tiny-eval
  tasks:
    file: tasks.jsonl
    limit: 6
    test_fraction: 0.5
  harness:
    command: [node, agent.mjs]
    dir: harness
    concurrency: 4
    timeout_s: 60
    max_attempts: 1
    reward: verifier
    verifier: [node, verify.mjs]
  algorithm:
    max_response_tokens: 4
`,
  );
  await palette('View: Close All Editors');
  await palette('Harness RL: Evaluate Harness…');
  await quickPick('tiny-eval.run.yaml');
  await quickPick('test');
  // attempts per task: 2 (k of pass@k)
  const input = page.locator('.quick-input-widget input');
  await waitFor('the attempts box', async () => (await input.inputValue()) === '1', 10_000);
  await input.fill('2');
  await page.keyboard.press('Enter');
  await quickPick("The config's harness");
  const view = webview();
  // named after the config and the split ("eval vscode-tiny-eval test")
  await view.locator('h1', { hasText: /^Evaluation .*vscode-tiny-eval/ }).waitFor({ timeout: 30_000 });
  // it fills in by itself within a second of the daemon's finish (its `evaluation` event; it polled
  // every 2 s before): the figures are the stored ones
  const tiny = async () =>
    (await api('GET', '/api/evaluations')).items.find((e) => e.name.includes('vscode-tiny-eval'));
  const finishedAt = await waitFor(
    'the daemon to finish the evaluation',
    async () => (await tiny())?.status !== 'running' && Date.now(),
    120_000,
    25,
  );
  await view.locator('#summary').waitFor({ timeout: 1000 });
  figures.evaluation_page_finished_ms = Date.now() - finishedAt;
  const stored = await tiny();
  if (stored?.status !== 'finished') throw new Error(`the evaluation is ${stored?.status}`);
  const rows = await view.locator('#tasks tbody tr').count();
  if (rows !== stored.tasks.length) throw new Error(`${rows} task rows for ${stored.tasks.length} tasks`);
  const mean = await view.locator('#summary tr[data-key="mean_reward"] strong').innerText();
  if (Number(mean) !== Number(stored.summary.mean_reward.toPrecision(3)))
    throw new Error(`the page shows mean ${mean}, the daemon ${stored.summary.mean_reward}`);
  if ((await view.locator('#tasks tbody tr').first().locator('.reward').count()) !== 2)
    throw new Error('the first task does not show its 2 attempts');
  figures.evaluation_tasks = rows;
  await shot('08c-evaluation');
  return stored;
}

// Its run never trains: the Runs view keeps it (and the evolution's) under one row, apart from the
// training runs.
async function evaluationRunApart(stored) {
  const runs = runsPane();
  const evalRuns = treeRow(runs, 'Evaluation runs');
  await evalRuns.waitFor({ timeout: 10_000 });
  const counted = (await api('GET', '/api/runs?kind=evaluation&limit=1000')).items;
  const said = await evalRuns.locator('.label-description').textContent();
  if (said !== String(counted.length)) throw new Error(`Evaluation runs says ${said}, not ${counted.length}`);
  if ((await treeRow(runs, stored.name).count()) > 0) throw new Error('the evaluation run is a top row');
  await expand(evalRuns);
  await treeRow(runs, stored.name).waitFor({ timeout: 10_000 });
  await shot('08c-evaluation-runs');
  await collapse(evalRuns);
}

// Compare Evaluations…: the evolution's root (A) against its child (B), both picked by id.
async function compareEvaluations() {
  const input = page.locator('.quick-input-widget input');
  const evo = (await api('GET', '/api/evolutions')).items.find((e) => e.name.includes('vscode-evolve'));
  const detail = await api('GET', `/api/evolutions/${evo.id}`);
  const child = detail.candidates.find((c) => c.parent !== null && c.train_evaluation);
  const parent = detail.candidates.find((c) => c.hash === child.parent);
  const expected = await api(
    'GET',
    `/api/evaluations/compare?a=${parent.train_evaluation}&b=${child.train_evaluation}`,
  );
  await palette('Harness RL: Compare Evaluations…');
  for (const [id, title] of [
    [parent.train_evaluation, 'the baseline (A)'],
    [child.train_evaluation, 'the other (B)'],
  ]) {
    // the pick itself, not the palette closing before it: keys typed then go to whatever had focus
    await waitFor(
      `the pick of ${title}`,
      async () =>
        (await input.isVisible()) && ((await input.getAttribute('aria-label')) ?? '').includes(title),
      10_000,
    );
    await input.fill(id);
    await quickPick(id);
  }
  const cmp = webview().locator('#verdict');
  await cmp.waitFor({ timeout: 30_000 });
  const wins = await webview().locator('#wins').innerText();
  if (wins !== `B better on ${expected.sign_test.wins}`) throw new Error(`the page says "${wins}"`);
  const paired = await webview().locator('#per-task tbody tr').count();
  if (paired !== expected.paired_tasks)
    throw new Error(`${paired} rows for ${expected.paired_tasks} paired tasks`);
  figures.comparison_paired_tasks = paired;
  await shot('08d-comparison');
  return child;
}

// The Evolution view: Compare with Parent on the child opens the same comparison.
async function compareWithParent(child) {
  await palette('View: Close All Editors');
  const pane = await evolutionPane();
  const row = treeRow(pane, child.hash.slice(0, 10));
  await row.waitFor({ timeout: 30_000 });
  await row.hover();
  await row.locator('.action-label[aria-label="Compare with Parent"]').click();
  await webview().locator('#verdict').waitFor({ timeout: 30_000 });
  const tab = (await page.locator('.tabs-container .tab.active').first().textContent()) ?? '';
  if (!tab.includes('Compare')) throw new Error(`the comparison opened as "${tab}"`);
  return row;
}

// The candidate's tooltip links to the page of its train evaluation.
async function candidateLinksToEvaluation(row, child) {
  await palette('View: Close All Editors');
  const hover = await hoverOf(row, 'Train evaluation', "the candidate's hover");
  await hover.locator('a', { hasText: 'Train evaluation' }).click();
  const train = await api('GET', `/api/evaluations/${child.train_evaluation}`);
  await webview()
    .locator('h1', { hasText: `Evaluation ${train.name}` })
    .waitFor({ timeout: 30_000 });
  await webview().locator('#summary').waitFor({ timeout: 10_000 });
}
