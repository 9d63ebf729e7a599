// Evolutions in the Evolution view (the candidate tree, diffs, adopting, resume after a restart, live
// events) and evaluations of a harness with their comparison.
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { api, evolutionEnd, tinyEvolveConfig } from '../lib/daemon.mjs';
import { figures, page, shot, step, waitFor } from '../lib/harness.mjs';
import { evolutionPane, expand, treeRow } from '../lib/sidebar.mjs';
import { palette, pickerLabels } from '../lib/workbench.mjs';
import { evaluateAndCompare } from './evaluation.mjs';

export async function evolutionAndEvaluations() {
  await step(
    'the Evolution view shows the candidate tree; a click opens the diff; Adopt Candidate changes the file',
    evolutionTree,
  );
  await step(
    'Evaluate Harness… on a tiny config opens the evaluation page; Compare Evaluations… and Compare with Parent open the comparison; a candidate links to its evaluation',
    evaluateAndCompare,
  );
  await step(
    'an evolution shows Stop Evolution while it runs; after Restart Daemon it shows interrupted with Resume Evolution, which runs it to the end',
    resumeInterruptedEvolution,
  );
  await step(
    'the Evolution view follows an evolution from its events: stopped, resumed from elsewhere, its child and finished show within 1.5 s (it polled every 3 s while one ran, and not at all after)',
    evolutionViewFollowsEvents,
  );
}

async function evolutionTree() {
  // a small evolution of a copy of examples/evolve in the workspace: one proposal, one generation
  const { dir, config } = tinyEvolveConfig('vscode-evolve', 'evolve', ['node', 'propose-rules.mjs'], {
    limit: 12,
    test_fraction: 0.34,
  });
  const started = await api('POST', '/api/evolutions', { config, base_dir: dir });
  const evo = await evolutionEnd(started.id);
  if (evo.status !== 'finished') throw new Error(`the evolution ${evo.status}: ${evo.error}`);
  const child = evo.candidates.find((c) => c.parent !== null);
  const root_ = evo.candidates.find((c) => c.parent === null);
  const pane = await evolutionPane();
  await expand(treeRow(pane, 'evolve vscode-evolve'));
  await treeRow(pane, `${root_.hash.slice(0, 10)} (root)`).waitFor({ timeout: 30_000 });
  const row = treeRow(pane, child.hash.slice(0, 10));
  await row.waitFor({ timeout: 30_000 });
  await shot('08-evolution-tree');
  await row.click();
  await page.locator('.tab', { hasText: '↔' }).first().waitFor({ timeout: 30_000 });
  await page.locator('.editor .monaco-diff-editor').first().waitFor({ timeout: 30_000 });
  await shot('08b-candidate-diff');
  const file = join(dir, 'harness', 'agent.mjs');
  if (readFileSync(file, 'utf8').includes('MAX_TRIES = 4'))
    throw new Error('the harness had the edit already');
  await row.hover();
  await row.locator('.action-label[aria-label="Adopt Candidate"]').click();
  await waitFor(
    'the adopted edit in the harness folder',
    () => readFileSync(file, 'utf8').includes('MAX_TRIES = 4'),
    30_000,
  );
  figures.evolution_candidates = evo.candidates.length;
  // the pickers name the proposer's recording and the candidates' runs as the views do
  const proposer = await pickerLabels('Harness RL: Export Recording…', 'Recording', 'proposer');
  if (!proposer.includes('proposer · generation 1'))
    throw new Error(`the recording picker shows ${proposer.join(' | ')}`);
  const short = root_.hash.slice(0, 10); // the root is always evaluated
  const runs = await pickerLabels('Harness RL: Open Run Dashboard', 'Run', short);
  if (!runs.every((l) => l.startsWith(`candidate ${short} `)))
    throw new Error(`the run picker shows ${runs.join(' | ')}`);
}

async function resumeInterruptedEvolution() {
  // examples/evolve with a proposer that hangs the first time it is asked (until the daemon stops)
  const { dir, config } = tinyEvolveConfig('vscode-resume', 'evolve-resume', ['node', 'propose-once.mjs'], {
    limit: 8,
    test_fraction: 0.25,
  });
  const marker = join(dir, 'asked');
  writeFileSync(
    join(dir, 'propose-once.mjs'),
    `import { existsSync, writeFileSync } from 'node:fs';
if (!existsSync(${JSON.stringify(marker)})) {
  writeFileSync(${JSON.stringify(marker)}, '');
  await new Promise(() => setInterval(() => {}, 1000));
}
await import(${JSON.stringify(`file://${join(dir, 'propose-rules.mjs')}`)});
`,
  );
  const started = await api('POST', '/api/evolutions', { config, base_dir: dir });
  await waitFor('the proposer to be asked', () => existsSync(marker), 120_000);
  const pane = await evolutionPane();
  const row = treeRow(pane, 'evolve vscode-resume');
  await row.waitFor({ timeout: 30_000 });
  await row.hover();
  await row.locator('.action-label[aria-label="Stop Evolution"]').waitFor({ timeout: 10_000 });
  if (await row.locator('.action-label[aria-label="Resume Evolution"]').count())
    throw new Error('a running evolution offers Resume Evolution');

  await palette('Harness RL: Restart Daemon');
  // the old daemon answers until it stops; the new one shows the evolution interrupted
  await waitFor(
    'the restarted daemon to show the evolution interrupted',
    async () =>
      (await api('GET', `/api/evolutions/${started.id}`).catch(() => null))?.status === 'interrupted',
    90_000,
  );
  await waitFor(
    'the row to say interrupted',
    async () => /interrupted/.test((await row.textContent()) ?? ''),
    30_000,
  );
  await row.hover();
  const resume = row.locator('.action-label[aria-label="Resume Evolution"]');
  await resume.waitFor({ timeout: 10_000 });
  if (await row.locator('.action-label[aria-label="Stop Evolution"]').count())
    throw new Error('an interrupted evolution offers Stop Evolution');
  await shot('08e-evolution-interrupted');
  await resume.click();
  const evo = await evolutionEnd(started.id);
  if (evo.status !== 'finished') throw new Error(`the resumed evolution ${evo.status}: ${evo.error}`);
  if (!evo.candidates.some((c) => c.parent !== null))
    throw new Error('the resumed evolution has no child: its proposal was not asked for again');
  await waitFor(
    'the row to say finished',
    async () => /finished/.test((await row.textContent()) ?? ''),
    30_000,
  );
  await shot('08f-evolution-resumed');
  figures.resumed_evolution_candidates = evo.candidates.length;
}

async function evolutionViewFollowsEvents() {
  // a proposer that says it was asked, then waits for `go`
  const { dir, config } = tinyEvolveConfig('vscode-live', 'evolve-live', ['node', 'propose-gate.mjs'], {
    limit: 8,
    test_fraction: 0.25,
  });
  const [asked, go] = [join(dir, 'asked'), join(dir, 'go')];
  writeFileSync(
    join(dir, 'propose-gate.mjs'),
    `import { existsSync, writeFileSync } from 'node:fs';
writeFileSync(${JSON.stringify(asked)}, '');
while (!existsSync(${JSON.stringify(go)})) await new Promise((r) => setTimeout(r, 100));
await import(${JSON.stringify(`file://${join(dir, 'propose-rules.mjs')}`)});
`,
  );
  const pane = await evolutionPane();
  const started = await api('POST', '/api/evolutions', { config, base_dir: dir });
  const row = treeRow(pane, 'evolve vscode-live');
  await expand(row);
  await waitFor('the proposer to be asked', () => existsSync(asked), 120_000);
  // How long after the daemon's change `row` said `status` (at most 1.5 s).
  const says = async (status) => {
    const t0 = Date.now();
    await waitFor(
      `the row to say ${status} within 1.5 s`,
      async () => new RegExp(status).test((await row.textContent()) ?? ''),
      1500,
      25,
    );
    return Date.now() - t0;
  };
  // as `harness-rl evolve stop|resume` would: nothing in VS Code asks the view to read again
  await api('POST', `/api/evolutions/${started.id}/stop`, {});
  figures.evolution_view_stopped_ms = await says('stopped');
  rmSync(asked);
  await api('POST', `/api/evolutions/${started.id}/resume`, {});
  figures.evolution_view_resumed_ms = await says('running');
  await waitFor('the proposer to be asked again', () => existsSync(asked), 60_000);
  writeFileSync(go, '');
  const evo = await evolutionEnd(started.id);
  if (evo.status !== 'finished') throw new Error(`the evolution ${evo.status}: ${evo.error}`);
  figures.evolution_view_finished_ms = await says('finished');
  // the root, shown before it had a child, opens by itself to show it
  const child = evo.candidates.find((c) => c.parent !== null);
  await treeRow(pane, child.hash.slice(0, 10)).waitFor({ timeout: 1500 });
  await shot('08g-evolution-live');
}
