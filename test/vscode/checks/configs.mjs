// Run configs with mistakes: diagnostics as they open and when a run is started from one.
import { page, shot, step, waitFor } from '../lib/harness.mjs';
import { palette, quickPick, toast } from '../lib/workbench.mjs';

export async function configDiagnostics() {
  await step(
    'a run config shows its problems as soon as it opens, a missing tasks file too; Start Run… lists run configs only',
    problemsOnOpen,
  );
  await step('a run config with mistakes shows diagnostics on its lines', problemsOnStart);
}

async function problemsOnOpen() {
  const open = async (name) => {
    await page.keyboard.press('Escape');
    await page.keyboard.press('Control+P');
    await page.locator('.quick-input-widget input').waitFor({ state: 'visible' });
    await page.keyboard.type(name, { delay: 10 });
    await page.locator('.quick-input-list .monaco-list-row', { hasText: name }).first().click();
    await page.locator('.tab.active', { hasText: name }).waitFor({ timeout: 10_000 });
  };
  for (const name of ['bad.run.yaml', 'missing.run.yaml']) {
    await open(name);
    await waitFor(
      `squiggles in ${name}`,
      async () => (await page.locator('.squiggly-error').count()) > 0,
      20_000,
    );
  }
  // the missing tasks file's mark says so where it is written
  await page.locator('.view-lines span', { hasText: 'nope.jsonl' }).first().hover();
  await page.locator('.monaco-hover', { hasText: 'no file nope.jsonl' }).first().waitFor({ timeout: 15_000 });
  await shot('05a-diagnostics-on-open');
  await palette('Harness RL: Start Run…');
  await page.locator('.quick-input-list .monaco-list-row', { hasText: 'math.run.yaml' }).first().waitFor();
  const rows = await page.locator('.quick-input-list .monaco-list-row').allInnerTexts();
  if (rows.some((r) => r.includes('harness-rl.schema.json')))
    throw new Error(`the picker offers the JSON Schema as a run config: ${rows.join(' | ')}`);
  await page.keyboard.press('Escape');
  await palette('View: Close All Editors');
}

async function problemsOnStart() {
  await palette('Harness RL: Start Run…');
  await quickPick('bad.run.yaml');
  await toast('problem').first().waitFor({ timeout: 20_000 });
  await toast('problem').getByRole('button', { name: 'Show Problems' }).click();
  const rows = page.locator('.markers-panel .monaco-list-row');
  await rows.first().waitFor({ timeout: 20_000 });
  const text = (await rows.allInnerTexts()).join('\n');
  for (const want of ['algorithm.n', 'algorithm.advantage', 'shedule']) {
    if (!text.includes(want)) throw new Error(`Problems lacks ${want}:\n${text}`);
  }
  if (!/\[Ln 7|\(7,|Ln 7/.test(text) && !(await page.locator('.squiggly-error').count()))
    throw new Error('no squiggles or line numbers');
  await shot('05-diagnostics');
  await palette('View: Close All Editors');
}
