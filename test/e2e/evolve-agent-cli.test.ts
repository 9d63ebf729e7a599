// A real coding-agent CLI (Codex, from test/agents-cli) as the evolution's proposer, the path a person
// uses: the daemon gives it a working copy, the brief and a recording of the proxy (upstream: a fake
// vLLM with a script that has it run `sed` on agent.mjs, then finish); its calls are recorded, its
// edit becomes a candidate that beats the root on train, and the default LLM critic (through the proxy,
// to the same fake model) abstains for want of a verdict.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AGENTS_BIN, TASK_MARKER } from '../agents-cli/agents';
import { type FakeVllm, type ScriptedReply, startFakeVllm } from '../fixtures/fake-vllm';
import { evolutionEnd, evolveBed, exampleRun, tinyEvolve } from '../helpers/evolve';
import { EXAMPLE } from '../helpers/math-harness';

const installed = existsSync(AGENTS_BIN);
const SED = "sed -i 's/const MAX_TRIES = 1;/const MAX_TRIES = 4;/' agent.mjs";
const DONE = 'DONE: retries added.';

/** The agent's main call (it offers exec_command and names the working copy): the sed, then done. */
function script(request: { prompt?: unknown; tools?: unknown[] }, prompt: { text: string }): ScriptedReply {
  const main = new RegExp(`${TASK_MARKER} (\\S+)`).test(prompt.text);
  const toolResult = prompt.text.includes('<|im_start|>tool\n');
  if (!main) return { text: 'Harness edit' };
  // a bridged call comes as token ids on /v1/completions, without the tools: known by its prompt text
  if (request.prompt !== undefined) return { text: toolResult ? DONE : 'Harness edit' };
  if (!JSON.stringify(request.tools ?? []).includes('exec_command')) return { text: 'Harness edit' };
  if (toolResult) return { text: DONE };
  return { tool: { name: 'exec_command', arguments: JSON.stringify({ cmd: SED }) } };
}

let fake: FakeVllm;
const bed = evolveBed(
  'evolve-cli',
  {},
  {
    daemon: installed ? {} : false,
    before: async () => {
      if (installed) fake = await startFakeVllm({ model: 'toy', script, maxModelLen: 1_000_000 });
    },
    after: () => fake?.close(),
  },
);

describe.skipIf(!installed)('a coding-agent CLI as the proposer', () => {
  it('Codex edits the working copy through a recording; the edit is a candidate that beats the root', async () => {
    const { daemon } = bed;
    // the default critic (an LLM call through the proxy) and pruner
    const proposer = [
      resolve(__dirname, '../../node_modules/.bin/tsx'),
      resolve(__dirname, '../agents-cli/propose.ts'),
      'codex',
      'toy',
    ];
    const config = await exampleRun(
      30,
      0.3,
      tinyEvolve(proposer, {
        proposer_upstream: { kind: 'vllm', base_url: fake.url },
        critic: {},
        pruner: { margin: 0 },
      }),
    );
    const started = await daemon.api('POST', '/api/evolutions', { config, base_dir: EXAMPLE });
    expect(started.status, JSON.stringify(started.body)).toBe(201);
    const evo = await evolutionEnd(daemon, started.body.id);
    expect(evo.status, evo.error ?? '').toBe('finished');
    const child = evo.candidates.find((c) => c.parent !== null)!;
    expect(child.proposer!.exit_code, child.proposer!.log).toBe(0);
    expect(child.diff).toContain('+const MAX_TRIES = 4;');
    expect(child.status, JSON.stringify(child.verdicts)).toBe('accepted');
    expect(child.verdicts.critic!.verdict).toBe('abstain');
    expect(evo.result!.best).toBe(child.hash);
    // The proposer's own calls are in its recording: the tool call it acted on, then its last word.
    const recording = (await daemon.api('GET', `/api/recordings/${child.proposer!.recording_id}`)).body;
    const calls = JSON.stringify(recording.calls);
    expect(calls).toContain('exec_command');
    expect(calls).toContain(DONE);
  }, 400_000);
});
