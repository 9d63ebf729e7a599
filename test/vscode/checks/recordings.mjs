// Recordings from an integrated terminal, rated and exported (samples, tasks); past sessions imported;
// a run's samples exported.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { api } from '../lib/daemon.mjs';
import { ctx, figures, fileLines, page, shot, step, waitFor } from '../lib/harness.mjs';
import { palette, quickPick, saveAs, toast, webview } from '../lib/workbench.mjs';

export async function recordingsAndExports() {
  await step(
    'a recording captures a curl to $OPENAI_BASE_URL from an integrated terminal',
    recordTerminalCurl,
  );
  await step(
    "Rate Recording… from the palette replaces the rating with a person's thumbs down, then up",
    rateRecording,
  );
  await step(
    "Export Recording… as training samples writes the recording's samples as JSONL",
    exportRecordingSamples,
  );
  await step(
    'Export Recording… as a task appends one task line to the chosen tasks JSONL',
    exportRecordingTask,
  );
  await step(
    'Import Past Sessions… imports the Claude Code session with progress; it shows in Recordings; again, nothing new',
    importPastSessions,
  );
  await step('Export Samples… writes the training samples of the run as JSONL', exportSamples);
}

async function recordTerminalCurl() {
  // The default upstream, the built-in engine: with no run training, the daemon's standby serves.
  await palette('Harness RL: Start Recording');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  await input.fill('vscode test session');
  await page.keyboard.press('Enter');
  await toast('recording "vscode test session"').first().waitFor({ timeout: 20_000 });
  const rec = await waitFor('the recording', async () =>
    (await api('GET', '/api/recordings')).find((r) => r.name === 'vscode test session'),
  );
  await shot('10-recording');
  // the snippets: a read-only webview with Copy buttons, the key masked; closing it asks nothing
  await palette('Harness RL: Show Recording Snippets');
  const snippets = webview();
  await snippets.locator('.snippet button.copy').first().waitFor({ timeout: 20_000 });
  if (!(await snippets.locator('h1').innerText()).includes('vscode test session'))
    throw new Error('the snippets do not name the recording');
  if (!(await snippets.locator('.snippet').first().innerText()).includes('OPENAI_API_KEY=••••'))
    throw new Error('the recording key is not masked in the snippets');
  await shot('10b-recording-snippets');
  await palette('View: Close All Editors');
  if (await page.locator('.monaco-dialog-box').count())
    throw new Error('closing the snippets asks something');
  await palette('Terminal: Create New Terminal');
  await page.locator('.terminal-wrapper.active, .terminal.xterm').first().waitFor({ timeout: 20_000 });
  await page.waitForTimeout(1500);
  await page.locator('.terminal.xterm').first().click();
  await page.keyboard.type(
    `curl -s "$OPENAI_BASE_URL/chat/completions" -H "Authorization: Bearer $OPENAI_API_KEY" -H 'content-type: application/json' -d '{"model":"reference","messages":[{"role":"user","content":"2+3="}],"max_tokens":4}'; echo`,
  );
  await page.keyboard.press('Enter');
  const detail = await waitFor(
    'the call in the recording',
    async () => {
      const d = await api('GET', `/api/recordings/${rec.id}`);
      if (d.calls.length > 0 && d.calls.every((c) => c.status !== 'ok'))
        throw new Error(`the recorded call failed: ${JSON.stringify(d.calls.at(-1).error)}`);
      return d.calls.some((c) => c.status === 'ok') ? d : null;
    },
    30_000,
    500,
  );
  figures.recorded_calls = detail.calls.length;
  await page.waitForTimeout(500);
  await shot('11-terminal-curl');
  await palette('Harness RL: Stop Recording');
  await waitFor(
    'the recording to stop',
    async () => (await api('GET', '/api/recordings')).find((r) => r.id === rec.id)?.status === 'stopped',
    20_000,
  );
  // rate it from the notification: thumbs up → reward 1 on the recording's rollout
  await toast('stopped').getByRole('button', { name: 'Rate It' }).click();
  await quickPick('Good');
  await waitFor(
    'the reward',
    async () => (await api('GET', `/api/rollouts/${rec.rollout_id}`)).reward === 1,
    20_000,
  );
  await shot('12-rated');
  ctx.recording = rec;
}

async function rateRecording() {
  const rec = ctx.recording;
  const before = (await api('GET', `/api/rollouts/${rec.rollout_id}`)).rewards.length;
  for (const [pick, value, n] of [
    ['Bad', 0, before + 1],
    ['Good', 1, before + 2],
  ]) {
    await palette('Harness RL: Rate Recording…');
    await quickPick(rec.name); // no recording is active any more: the command asks which one
    await quickPick(pick);
    const detail = await waitFor(`the reward ${value}`, async () => {
      const d = await api('GET', `/api/rollouts/${rec.rollout_id}`);
      return d.rewards.length === n && d.reward === value ? d : null;
    });
    const last = [...detail.rewards].sort((a, b) => a.created_at.localeCompare(b.created_at)).at(-1);
    if (last.value !== value || last.source !== 'human')
      throw new Error(`the latest reward is not a human ${value}: ${JSON.stringify(detail.rewards)}`);
    await toast(`rated ${value}`).first().waitFor({ timeout: 20_000 });
  }
  figures.recording_rewards = before + 2;
}

async function exportRecordingSamples() {
  const rec = ctx.recording;
  const out = join(ctx.ws, 'recording.samples.jsonl');
  await palette('Harness RL: Export Recording…');
  await quickPick(rec.name);
  await quickPick('Training samples (JSONL)');
  await saveAs(out);
  const lines = await fileLines('the recording samples file', out, 30_000);
  await toast('wrote 1 sample to').first().waitFor({ timeout: 20_000 });
  const detail = await api('GET', `/api/rollouts/${rec.rollout_id}`);
  const calls = detail.llm_calls.filter((c) => c.status === 'ok' && c.prompt_ids && c.response_ids);
  if (calls.length !== 1) throw new Error(`expected the one recorded curl call, got ${calls.length}`);
  const { summary } = JSON.parse(lines.at(-1));
  const want = { trajectories: 1, samples: 1, prefix_breaks: 0, excluded: 0 };
  for (const [k, v] of Object.entries(want))
    if (summary?.[k] !== v) throw new Error(`summary.${k} is ${summary?.[k]}, not ${v}: ${lines.at(-1)}`);
  if (lines.length !== 2) throw new Error(`expected one sample and the summary, got ${lines.length} lines`);
  const sample = JSON.parse(lines[0]);
  const [call] = calls;
  const ids = [...call.prompt_ids, ...call.response_ids];
  const mask = [...call.prompt_ids.map(() => 0), ...call.response_ids.map(() => 1)];
  if (sample.rollout_id !== rec.rollout_id || sample.group_id !== (detail.group_id ?? rec.rollout_id))
    throw new Error(`the sample is not of the recording's rollout: ${lines[0].slice(0, 200)}`);
  if (sample.index !== 0) throw new Error(`sample index ${sample.index}`);
  if (JSON.stringify(sample.input_ids) !== JSON.stringify(ids))
    throw new Error("input_ids are not the call's prompt + response token ids");
  if (JSON.stringify(sample.loss_mask) !== JSON.stringify(mask))
    throw new Error(`loss_mask is not 0 over the prompt, 1 over the response: ${sample.loss_mask}`);
  for (const k of ['advantages', 'old_logprobs', 'loss_weights']) {
    if (!Array.isArray(sample[k]) || sample[k].length !== ids.length)
      throw new Error(`${k} does not have one entry per token`);
  }
  if (summary.mask_tokens !== call.response_ids.length)
    throw new Error(
      `summary.mask_tokens ${summary.mask_tokens} ≠ ${call.response_ids.length} response tokens`,
    );
  figures.recording_sample_tokens = ids.length;
}

async function exportRecordingTask() {
  const rec = ctx.recording;
  // a hand-written tasks file whose last line has no newline: the task must start a line of its own
  const file = join(ctx.ws, 'handmade-tasks.jsonl');
  const first = '{"id":"by-hand","prompt":"2+2="}';
  writeFileSync(file, first);
  const exportTask = async (pickFile) => {
    await palette('Harness RL: Export Recording…');
    await quickPick(rec.name);
    await quickPick('A task for a training run');
    await pickFile();
  };
  const lineOf = (text) => {
    const task = JSON.parse(text);
    const want = [
      ['wire_api', 'chat'],
      ['source.recording_id', rec.id],
      ['source.rollout_id', rec.rollout_id],
      ['source.name', rec.name],
      ['reward', 1],
    ];
    for (const [k, v] of want) {
      const got = k.split('.').reduce((o, key) => o?.[key], task);
      if (got !== v)
        throw new Error(`task ${k} is ${JSON.stringify(got)}, not ${JSON.stringify(v)}: ${text}`);
    }
    if (JSON.stringify(task.messages) !== JSON.stringify([{ role: 'user', content: '2+3=' }]))
      throw new Error(`task messages are not the curl's prompt: ${JSON.stringify(task.messages)}`);
    return task;
  };
  await exportTask(() => quickPick('handmade-tasks.jsonl'));
  const lines = await waitFor('the appended task', async () => {
    const l = readFileSync(file, 'utf8').split('\n');
    return l.length >= 3 ? l : null;
  });
  if (lines.length !== 3 || lines[0] !== first || lines[2] !== '')
    throw new Error(`expected the hand-written line, the task and a final newline:\n${lines.join('\n')}`);
  lineOf(lines[1]);
  await toast('appended the task').first().waitFor({ timeout: 20_000 });
  // a new tasks file through the save dialog
  const fresh = join(ctx.ws, 'recorded-tasks.jsonl');
  await exportTask(async () => {
    await quickPick('New tasks file');
    await saveAs(fresh);
  });
  const text = await waitFor('the new tasks file', async () =>
    existsSync(fresh) ? readFileSync(fresh, 'utf8') : null,
  );
  const freshLines = text.split('\n');
  if (freshLines.length !== 2 || freshLines[1] !== '') throw new Error(`expected one task line:\n${text}`);
  lineOf(freshLines[0]);
  await shot('12b-recording-exported');
}

async function importPastSessions() {
  await palette('Harness RL: Import Past Sessions…');
  await quickPick('Claude Code');
  await toast('imported 1 Claude Code session (3 calls)').first().waitFor({ timeout: 60_000 });
  const imported = (await api('GET', '/api/recordings')).filter((r) => r.upstream?.kind === 'import');
  if (imported.length !== 1) throw new Error(`expected one imported recording, got ${imported.length}`);
  const detail = await api('GET', `/api/recordings/${imported[0].id}`);
  if (detail.calls.map((c) => c.token_source).join() !== 'import,import,import')
    throw new Error(`the imported calls: ${detail.calls.map((c) => c.token_source)}`);
  const pane = page
    .locator('.pane', { has: page.locator('.pane-header', { hasText: 'Recordings' }) })
    .first();
  if (!(await pane.isVisible()))
    await page.locator('.activitybar [aria-label*="Harness RL"]').first().click();
  await pane
    .locator('.monaco-list-row', { hasText: 'Fix the cart total rounding' })
    .first()
    .waitFor({ timeout: 20_000 });
  await shot('import-sessions');
  await palette('Harness RL: Import Past Sessions…');
  await quickPick('Claude Code');
  await toast('are imported already').first().waitFor({ timeout: 30_000 });
}

async function exportSamples() {
  const out = join(ctx.ws, 'vscode-math.samples.jsonl');
  await palette('Harness RL: Export Samples…');
  await quickPick('vscode-math');
  await saveAs(out);
  const lines = await fileLines('the samples file', out, 60_000);
  const summary = JSON.parse(lines.at(-1)).summary;
  if (!summary || summary.samples !== lines.length - 1 || summary.samples === 0) {
    throw new Error(`unexpected export: ${lines.at(-1)}`);
  }
  figures.exported_samples = summary.samples;
}
