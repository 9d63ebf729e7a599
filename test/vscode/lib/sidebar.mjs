// The Harness RL sidebar's trees: the Runs and Evolution views, their rows, expanding and collapsing.
import { api } from './daemon.mjs';
import { ctx, page, waitFor } from './harness.mjs';

// The sidebar's Runs view.
export function runsPane() {
  return page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'Runs' }) }).first();
}

// The row of a tree whose label is exactly `label` (its description aside).
export function treeRow(pane, label) {
  const exact = new RegExp(`^${label.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);
  return pane
    .locator('.monaco-list-row')
    .filter({ has: page.locator('.label-name', { hasText: exact }) })
    .first();
}

// Expands a tree row with its twistie (a click on the row runs its command); no-op when open. A row
// in the lower half of its list then scrolls to the top, as a person would to see its children: a
// tree renders only the rows in view, so children below a long list are not there to find otherwise.
export async function expand(row) {
  await row.waitFor({ timeout: 30_000 });
  if ((await row.getAttribute('aria-expanded')) !== 'true') await row.locator('.monaco-tl-twistie').click();
  const { below, height } = await row.evaluate((el) => {
    const list = el.closest('.monaco-list').getBoundingClientRect();
    return { below: el.getBoundingClientRect().top - list.top, height: list.height };
  });
  if (below > height / 2) {
    await row.hover();
    await page.mouse.wheel(0, below);
  }
}

// Collapses an open tree row with its twistie.
export async function collapse(row) {
  if ((await row.getAttribute('aria-expanded')) === 'true') await row.locator('.monaco-tl-twistie').click();
}

// The sidebar's Evolution view, shown and expanded.
export async function evolutionPane() {
  const pane = page.locator('.pane', { has: page.locator('.pane-header', { hasText: 'Evolution' }) }).first();
  const header = pane.locator('.pane-header');
  // the Harness RL sidebar (a click on its icon when it is open would close it)
  if (!(await header.isVisible()))
    await page.locator('.activitybar [aria-label*="Harness RL"]').first().click();
  await header.waitFor({ timeout: 20_000 });
  if ((await header.getAttribute('aria-expanded')) !== 'true') await header.click();
  return pane;
}

// The rows of an expanded group's rollouts (the only group open) show what the daemon says.
export async function expectRollouts(tree, group) {
  const { rollouts } = await api('GET', `/api/groups/${group.id}`);
  const ids = rollouts.map((r) => r.id).sort();
  for (const r of rollouts) {
    const row = treeRow(tree, `#${ids.indexOf(r.id) + 1}`);
    // three significant digits and a typographic minus, as the sidebar rounds
    const want = r.reward === null ? r.status : String(Number(r.reward.toPrecision(3))).replace('-', '−');
    await waitFor(
      `rollout #${ids.indexOf(r.id) + 1} of step ${group.step} with ${want} first`,
      async () => ((await row.locator('.label-description').textContent()) ?? '').startsWith(want),
      20_000,
    ).catch(async (e) => {
      throw new Error(`${e.message}; it shows "${await row.locator('.label-description').textContent()}"`);
    });
  }
}

// The run's rollout row in the Runs view: run → step → group (its task) → rollout, expanded.
export async function rolloutRow() {
  const tree = runsPane();
  // expanding with the twisties (a click on a run opens its dashboard)
  await expand(tree.locator('.monaco-list-row', { hasText: 'vscode-math' }).first());
  const group = await api('GET', `/api/groups/${ctx.rollout.group_id}`);
  await expand(treeRow(tree, `step ${group.step}`));
  await expand(treeRow(tree, group.task_input.id));
  const ids = group.rollouts.map((r) => r.id).sort();
  const row = treeRow(tree, `#${ids.indexOf(ctx.rollout.id) + 1}`);
  await row.waitFor({ timeout: 20_000 });
  return row;
}
