// A short run on the reference engine: started from the palette, followed live by the sidebar,
// filtered, and a trajectory's token view.
import { api } from '../lib/daemon.mjs';
import { ctx, figures, log, page, shot, step, waitFor } from '../lib/harness.mjs';
import { collapse, expand, expectRollouts, rolloutRow, runsPane, treeRow } from '../lib/sidebar.mjs';
import { palette, quickPick, webview } from '../lib/workbench.mjs';

export async function runsAndTrajectories() {
  await step(
    'Start Run… from the palette runs a short run on the reference engine; the dashboard shows it',
    startRunShowsDashboard,
  );
  await step(
    'the sidebar follows the run live: every step, group and reward shows up without a refresh',
    sidebarFollowsRun,
  );
  await step(
    'Filter Rollouts… keeps the steps and groups holding a match, says so at the top, and clears',
    filterRollouts,
  );
  await step('a trajectory opens from the sidebar and its webview shows the token view', trajectoryTokenView);
}

async function startRunShowsDashboard() {
  await palette('Harness RL: Start Run…');
  await quickPick('math.run.yaml');
  const runs = await waitFor(
    'the run to exist',
    async () => (await api('GET', '/api/runs')).items.find((r) => r.name === 'vscode-math'),
    30_000,
  );
  ctx.run = runs;
  // the sidebar is to follow the run live: open the run's row now and never refresh it
  await expand(runsPane().locator('.monaco-list-row', { hasText: 'vscode-math' }).first());
  ctx.runWhenExpanded = await api('GET', `/api/runs/${runs.id}`);
  ctx.groupsWhenExpanded = (await api('GET', `/api/runs/${runs.id}/groups`)).items.length;
  // and the first step's group, opened while its rollouts are queued or running: the sidebar is
  // to follow it to the end (rollout events were undone when the group redrew)
  const first = await waitFor(
    'the first group',
    async () => (await api('GET', `/api/runs/${runs.id}/groups`)).items.find((g) => g.step === 0),
    30_000,
  );
  await expand(treeRow(runsPane(), 'step 0'));
  await expand(treeRow(runsPane(), first.task_input.id));
  const { rollouts: early } = await api('GET', `/api/groups/${first.id}`);
  ctx.earlyGroup = first;
  figures.early_group_open_rollouts = early.filter(
    (r) => r.status === 'queued' || r.status === 'running',
  ).length;
  // no worker is started by hand: the daemon runs the run's harness command itself
  const frame = webview();
  await frame.locator('h1', { hasText: 'vscode-math' }).waitFor({ timeout: 30_000 });
  const done = await waitFor(
    'a succeeded rollout with llm calls',
    async () => {
      const page1 = await api('GET', `/api/rollouts?run_id=${runs.id}&status=succeeded&limit=5`);
      return page1.items[0];
    },
    180_000,
    1000,
  ).catch(async (e) => {
    const workers = await api('GET', `/api/runs/${runs.id}/workers`).catch(() => null);
    throw new Error(`${e.message}\nworkers: ${JSON.stringify(workers)}`);
  });
  ctx.rollout = done;
  await waitFor(
    'a metrics chart',
    async () => (await frame.locator('.chart canvas').count()) > 0,
    180_000,
    1000,
  ).catch(() => log('no metrics yet (the run has not finished a step); continuing'));
  await shot('06-dashboard');
  await palette('View: Close All Editors');
}

async function sidebarFollowsRun() {
  const was = ctx.runWhenExpanded;
  if (was.status !== 'running' && was.status !== 'created')
    throw new Error(`the run was already ${was.status} when its row was expanded`);
  figures.groups_when_expanded = ctx.groupsWhenExpanded;
  const run = await waitFor(
    'the run to finish',
    async () => {
      const r = await api('GET', `/api/runs/${ctx.run.id}`);
      return r.status === 'finished' ? r : null;
    },
    240_000,
    1000,
  );
  const tree = runsPane();
  const runRow = tree.locator('.monaco-list-row', { hasText: 'vscode-math' }).first();
  await waitFor(
    'the run row to say it finished',
    async () => /finished/.test((await runRow.textContent()) ?? ''),
    20_000,
  );
  await expectRollouts(tree, ctx.earlyGroup);
  await collapse(treeRow(tree, ctx.earlyGroup.task_input.id));
  await collapse(treeRow(tree, 'step 0'));
  const groups = (await api('GET', `/api/runs/${run.id}/groups`)).items;
  const steps = [...new Set(groups.map((g) => g.step))].sort((a, b) => a - b);
  if (groups.length <= ctx.groupsWhenExpanded) throw new Error('no group was made after the row opened');
  for (const step of steps) await treeRow(tree, `step ${step}`).waitFor({ timeout: 20_000 });
  // the last step's group: named by its task, complete, its rollouts numbered with the reward first
  const last = groups.find((g) => g.step === steps.at(-1));
  await expand(treeRow(tree, `step ${last.step}`));
  const groupRow = treeRow(tree, last.task_input.id);
  await waitFor(
    'the group row to say complete',
    async () => /complete/.test((await groupRow.textContent()) ?? ''),
    20_000,
  );
  await expand(groupRow);
  await expectRollouts(tree, last);
  await shot('06b-tree-live');
  // leave only the run open (rollout numbers repeat from group to group)
  await collapse(groupRow);
  await collapse(treeRow(tree, `step ${last.step}`));
}

async function filterRollouts() {
  const tree = runsPane();
  const stepRows = async () =>
    (await tree.locator('.monaco-list-row .label-name').allTextContents())
      .map((t) => t.trim())
      .filter((t) => /^step \d+$/.test(t))
      .sort();
  const stepsOf = (groups) => [...new Set(groups.map((g) => `step ${g.step}`))].sort();
  const all = stepsOf((await api('GET', `/api/runs/${ctx.run.id}/groups`)).items);
  const matching = (await api('GET', `/api/runs/${ctx.run.id}/groups?status=succeeded&min_reward=0.5`)).items;
  const filter = async (status, range) => {
    await palette('Harness RL: Filter Rollouts…');
    await quickPick(status);
    await page
      .locator('.quick-input-widget .quick-input-title', { hasText: 'reward range' })
      .waitFor({ timeout: 10_000 });
    await page.locator('.quick-input-widget input').fill(range);
    await page.keyboard.press('Enter');
  };
  await filter('succeeded', '0.5..');
  await treeRow(tree, 'Filter: status=succeeded, reward≥0.5').waitFor({ timeout: 20_000 });
  const want = stepsOf(matching);
  await waitFor(
    `only ${want.join(', ') || 'no steps'} under the run`,
    async () => JSON.stringify(await stepRows()) === JSON.stringify(want),
    20_000,
  );
  if (want.length === 0) await treeRow(tree, 'No groups match the filter').waitFor({ timeout: 10_000 });
  figures.filtered_steps = `${want.length}/${all.length}`;
  await shot('06c-tree-filtered');
  await filter('any', '');
  await waitFor(
    'every step back and the filter row gone',
    async () =>
      JSON.stringify(await stepRows()) === JSON.stringify(all) &&
      (await tree.locator('.label-name', { hasText: /^Filter: / }).count()) === 0,
    20_000,
  );
}

async function trajectoryTokenView() {
  const row = await rolloutRow();
  await shot('07-tree');
  await row.click();
  const frame = webview();
  await frame.locator('section.call').first().waitFor({ timeout: 30_000 });
  await shot('08-trajectory-conversation');
  await frame.locator('button[data-tab="training"]').click();
  await frame.locator('.tokens .tok.m1').first().waitFor({ timeout: 20_000 });
  const trained = await frame.locator('.tokens .tok.m1').count();
  const heat = await frame.locator('.tokens .tok.m1[data-heat]').count();
  if (trained === 0) throw new Error('no trained (mask 1) tokens shown');
  if (heat === 0) throw new Error('no logprob heat map on trained tokens');
  figures.trajectory_trained_tokens = trained;
  // the token details from the keyboard
  await frame.locator('.tokens').first().focus();
  await page.keyboard.press('End');
  const details = await frame.locator('#token-details').innerText();
  if (!/token\s+#\d+ of sample 0/.test(details))
    throw new Error(`no token details from the keyboard: ${details}`);
  await shot('09-trajectory-tokens');
  await palette('View: Close All Editors');
}
