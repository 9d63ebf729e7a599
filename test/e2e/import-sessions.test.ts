// Past sessions that the pinned CLIs (test/agents-cli) wrote themselves, imported: Claude Code and
// Codex run once each against a daemon whose backend is the fake vLLM with a script (the agent's tool
// writes hello.txt, then a final text), with a throw-away HOME; then `harness-rl import` (in-process,
// that HOME as its environment) turns ~/.claude/projects and ~/.codex/sessions into recordings: the
// two model answers of each session, tokenized with Qwen3's template, token_source import, once.
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importCommand } from '../../daemon/cli/commands/import';
import type { LlmCall, Recording } from '../../daemon/protocol/entities';
import { trajectoryFromCalls } from '../../daemon/samples';
import { localQwen3Tokenizer } from '../../daemon/tokenize/qwen3';
import {
  AGENTS,
  AGENTS_BIN,
  type AgentSpec,
  agentScript,
  agentsInstalled,
  FINAL_TEXT,
  taskPrompt,
} from '../agents-cli/agents';
import { type FakeVllm, startFakeVllm } from '../fixtures/fake-vllm';
import { startTestDaemon, type TestDaemon } from '../helpers/daemon';

const installed = agentsInstalled('the session import tests on the agent CLIs');

let fake: FakeVllm;
let daemon: TestDaemon;
let root: string;
const scripts = new Map<string, AgentSpec>();

const script = agentScript(scripts);

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'harness-rl-import-'));
  fake = await startFakeVllm({ model: 'toy', script, maxModelLen: 1_000_000 });
  daemon = await startTestDaemon({ backends: [fake.url] });
});
afterAll(async () => {
  await daemon?.close();
  await fake?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

/** Runs the CLI on a rollout of the daemon in `work`, with `home` as HOME; resolves with its exit code and output. */
async function runAgent(
  agent: AgentSpec,
  home: string,
  work: string,
): Promise<{ code: number | null; out: string }> {
  scripts.set(work, agent);
  const r = await daemon.api('POST', '/api/rollouts', {});
  const setup = await agent.setup({
    home,
    work,
    model: 'toy',
    key: r.body.key,
    openaiBaseUrl: r.body.openai_base_url,
    anthropicBaseUrl: r.body.anthropic_base_url,
  });
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, ...setup.env };
  return new Promise((done) => {
    const child = spawn(resolve(AGENTS_BIN, agent.bin), setup.args(taskPrompt(work)), {
      cwd: work,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (out += c));
    const timer = setTimeout(() => child.pid && process.kill(-child.pid, 'SIGKILL'), 120_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ code, out });
    });
  });
}

async function importFrom(args: string[], env: Record<string, string>) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await importCommand(
    [...args, '--url', daemon.url, '--token', daemon.token, '--json'],
    { out: (t) => out.push(t), err: (t) => err.push(t) },
    env,
  );
  return { code, result: out.length ? JSON.parse(out.join('\n')) : null, err: err.join('\n') };
}

const tok = localQwen3Tokenizer();

describe.skipIf(!installed)('sessions the pinned agent CLIs wrote, imported', () => {
  for (const id of ['claude-code', 'codex'] as const)
    it(`${id}: its session under HOME becomes one recording of its two answers, Qwen3 tokens, token_source import; imported once`, async () => {
      const agent = AGENTS.find((a) => a.id === id)!;
      const dir = await mkdtemp(join(root, `${id}-`));
      const home = join(dir, 'home');
      const work = join(dir, 'work');
      await mkdir(home);
      await mkdir(work);
      const ran = await runAgent(agent, home, work);
      expect(ran.code, ran.out).toBe(0);
      // what the CLI reads its folder from: HOME (Codex: CODEX_HOME, as the test set it)
      const env = { HOME: home, ...(id === 'codex' ? { CODEX_HOME: join(home, '.codex') } : {}) };

      const first = await importFrom([id, '--project', work], env);
      expect(first.code, first.err).toBe(0);
      expect(first.result).toMatchObject({ sessions: 1, imported: 1, calls: 2, failed: 0, bad_lines: 0 });
      const [done] = first.result.results;
      const recordings: Recording[] = (await daemon.api('GET', '/api/recordings')).body;
      const recording = recordings.find((r) => r.id === done.recording_id)!;
      expect(recording).toMatchObject({
        status: 'stopped',
        upstream: { kind: 'import', source: id, models: ['toy'] },
      });
      const calls: LlmCall[] = (await daemon.api('GET', `/api/recordings/${recording.id}`)).body.calls;
      expect(calls.map((c) => [c.token_source, c.status, c.wire_api, c.model])).toEqual([
        ['import', 'ok', agent.wireApi, 'toy'],
        ['import', 'ok', agent.wireApi, 'toy'],
      ]);
      // the prompt holds the task; the answers are the tool call, then the final text, each ending its turn
      expect(await tok.decode(calls[0].prompt_ids!)).toContain(taskPrompt(work));
      expect(await tok.decode(calls[0].response_ids!)).toMatch(
        new RegExp(`<tool_call>\\n\\{"name": "${agent.tool.name}"[^]*</tool_call><\\|im_end\\|>$`),
      );
      expect(await tok.decode(calls[1].response_ids!)).toMatch(new RegExp(`${FINAL_TEXT}<\\|im_end\\|>$`));
      // the tool result is in the second prompt; the calls keep the session's order and times
      expect(Date.parse(calls[1].created_at)).toBeGreaterThan(Date.parse(calls[0].created_at));
      expect(calls[0].total_ms).toBeGreaterThanOrEqual(0);
      // what the model was shown: Claude Code 2.1.3xx writes its system prompt and tools, Codex its instructions
      if (id === 'claude-code')
        expect(calls[0].request).toMatchObject({
          system: expect.any(Array),
          tools: expect.arrayContaining([expect.objectContaining({ name: 'Write' })]),
        });
      else expect(calls[0].request).toMatchObject({ instructions: expect.stringContaining('Codex') });
      // not on-policy: left out of RL samples unless asked
      const rollout = { id: recording.rollout_id, group_id: null, reward: 1 };
      expect(trajectoryFromCalls(rollout, calls).excluded_calls).toEqual({ imported: 2 });

      const again = await importFrom([id], env);
      expect(again.result).toMatchObject({ sessions: 1, imported: 0, already_imported: 1 });
      expect(again.result.results[0].recording_id).toBe(recording.id);
      console.log(
        JSON.stringify({
          bench: 'import-sessions',
          cli: id,
          version: agent.version,
          calls: calls.length,
          prompt_tokens: calls.reduce((n, c) => n + (c.prompt_ids?.length ?? 0), 0),
        }),
      );
    }, 180_000);
});

describe('the import API', () => {
  it('answers 400 naming the field: a model without a known template, a path outside the sessions folder, an unknown source', async () => {
    const home = await mkdtemp(join(root, 'api-'));
    const sessions = join(home, '.claude/projects');
    const model = await daemon.api('POST', '/api/imports', {
      source: 'claude-code',
      root: sessions,
      path: join(sessions, 'p/s.jsonl'),
      model: 'gpt-4o',
    });
    expect([model.status, model.body.error.field]).toEqual([400, 'model']);
    const outside = await daemon.api('POST', '/api/imports', {
      source: 'claude-code',
      root: sessions,
      path: join(home, 'elsewhere.jsonl'),
    });
    expect([outside.status, outside.body.error.field]).toEqual([400, 'path']);
    const source = await daemon.api('POST', '/api/imports/scan', { source: 'cursor' });
    expect([source.status, source.body.error.field]).toEqual([400, 'source']);
    const empty = await daemon.api('POST', '/api/imports/scan', {
      source: 'codex',
      root: join(home, 'none'),
    });
    expect(empty.body).toEqual({ root: join(home, 'none'), sessions: [], skipped: [] });
  });
});
