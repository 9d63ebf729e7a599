// The coding-agent CLIs people use (Claude Code, Codex, opencode, Qwen Code, Gemini CLI), the real
// programs from npm (pinned in test/agents-cli/package.json, installed there by
// scripts/setup-test-env.sh), run non-interactively against a real daemon whose backend is the fake
// vLLM with a script: the agent's first main call is answered with a call of its own file or shell
// tool that writes hello.txt in a throw-away folder, the next (after the tool result) with a final
// text. Each CLI runs on a rollout URL, on a recording (vLLM upstream) and on a run rollout with the
// bridge on, with a throw-away HOME, telemetry and update checks off, every URL it is given on
// 127.0.0.1. The settings come from test/agents-cli/agents.ts, the table docs/agents.md describes.
// HARNESS_RL_AGENTS_DEBUG=1 prints each run; HARNESS_RL_AGENTS_STRACE=/path/prefix traces its connects.
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunConfig } from '../../daemon/protocol/config';
import type { LlmCall, ToolRun } from '../../daemon/protocol/entities';
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

const installed = agentsInstalled('the agent CLI tests');

const MODEL = 'toy';
let fake: FakeVllm;
let daemon: TestDaemon;
let root: string;
/** The scripts of the CLIs running now, by the folder their task names. */
const scripts = new Map<string, AgentSpec>();

const script = agentScript(scripts);

beforeAll(async () => {
  if (!installed) return;
  root = await mkdtemp(join(tmpdir(), 'harness-rl-agents-'));
  fake = await startFakeVllm({ model: MODEL, script, maxModelLen: 1_000_000 });
  daemon = await startTestDaemon({ backends: [fake.url] });
});
afterAll(async () => {
  await daemon?.close();
  await fake?.close();
  if (root) await rm(root, { recursive: true, force: true });
});

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

function runCli(cmd: string, args: string[], env: Record<string, string>, cwd: string, timeoutMs: number) {
  return new Promise<Ran>((done) => {
    const t0 = Date.now();
    const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    const timer = setTimeout(() => {
      stderr += `\n[killed after ${timeoutMs} ms]`;
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {}
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ code, stdout, stderr, ms: Date.now() - t0 });
    });
  });
}

/** A standalone rollout, a recording, or a rollout of a run with the token bridge (tito) on. */
type Mode = 'rollout' | 'recording' | 'bridge';

interface Endpoints {
  key: string;
  openai_base_url: string;
  anthropic_base_url: string;
  calls(): Promise<LlmCall[]>;
  /** The tool runs the CLI reported over OTLP. */
  toolRuns(): Promise<ToolRun[]>;
  stop?(): Promise<unknown>;
}

async function endpoints(mode: Mode, name: string): Promise<Endpoints> {
  if (mode === 'bridge') {
    const store = daemon.ctx.store;
    const config = RunConfig.parse({
      name,
      model: { name: MODEL },
      tasks: { file: 'x.jsonl' },
      algorithm: { tito: true },
    });
    const run = await store.createRun({ name, config });
    const r = await store.createRollout({ kind: 'run', run_id: run.id });
    await store.startAttempt(r.id, 'agents-cli');
    return {
      key: r.key,
      openai_base_url: `${daemon.url}/r/${r.id}/v1`,
      anthropic_base_url: `${daemon.url}/r/${r.id}`,
      calls: () => store.listLlmCalls(r.id),
      toolRuns: () => store.listToolRuns(r.id),
    };
  }
  if (mode === 'rollout') {
    const r = await daemon.api('POST', '/api/rollouts', {});
    expect(r.status).toBe(201);
    return {
      ...r.body,
      calls: async () => (await daemon.api('GET', `/api/rollouts/${r.body.id}`)).body.llm_calls,
      toolRuns: async () => (await daemon.api('GET', `/api/rollouts/${r.body.id}`)).body.tool_runs,
    };
  }
  const r = await daemon.api('POST', '/api/recordings', {
    name,
    upstream: { kind: 'vllm', base_url: fake.url },
  });
  expect(r.status).toBe(201);
  return {
    ...r.body,
    calls: async () => (await daemon.api('GET', `/api/recordings/${r.body.id}`)).body.calls,
    toolRuns: async () => (await daemon.api('GET', `/api/recordings/${r.body.id}`)).body.tool_runs,
    stop: () => daemon.api('POST', `/api/recordings/${r.body.id}/stop`, {}),
  };
}

/** Whether `value` holds `args`: as an object (Messages, Gemini) or as a JSON string (Chat, Responses). */
function holdsArguments(value: unknown, args: Record<string, unknown>): boolean {
  if (typeof value === 'string') {
    if (!value.startsWith('{')) return false;
    try {
      return holdsArguments(JSON.parse(value), args) || isDeepStrictEqual(JSON.parse(value), args);
    } catch {
      return false;
    }
  }
  if (value && typeof value === 'object') {
    if (isDeepStrictEqual(value, args)) return true;
    return Object.values(value).some((v) => holdsArguments(v, args));
  }
  return false;
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

describe('docs/agents.md', () => {
  it('names each CLI tested here with its pinned version and every variable the test sets for it', async () => {
    const docs = await readFile(resolve(__dirname, '../../docs/agents.md'), 'utf8');
    const home = await mkdtemp(join(tmpdir(), 'harness-rl-agents-docs-'));
    try {
      for (const agent of AGENTS) {
        expect(docs).toContain(`## ${agent.name} (\`${agent.package}\` ${agent.version})`);
        const setup = await agent.setup({
          home,
          work: home,
          model: 'm',
          key: 'k',
          openaiBaseUrl: 'http://127.0.0.1:1/v1',
          anthropicBaseUrl: 'http://127.0.0.1:1',
        });
        for (const name of Object.keys(setup.env)) expect(docs, `${agent.name}: ${name}`).toContain(name);
      }
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  });
});

describe.skipIf(!installed)('the coding-agent CLIs through the daemon', () => {
  for (const agent of AGENTS)
    for (const mode of ['rollout', 'recording', 'bridge'] as Mode[])
      it(`${agent.name} ${agent.version} on a ${mode}: writes the file with its own tool, exits 0, every call recorded as it was answered`, async () => {
        const dir = await mkdtemp(join(root, `${agent.id}-${mode}-`));
        const home = join(dir, 'home');
        const work = join(dir, 'work');
        await mkdir(home);
        await mkdir(work);
        scripts.set(work, agent);
        const ep = await endpoints(mode, `${agent.id} ${mode}`);
        const setup = await agent.setup({
          home,
          work,
          model: MODEL,
          key: ep.key,
          openaiBaseUrl: ep.openai_base_url,
          anthropicBaseUrl: ep.anthropic_base_url,
        });
        const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, ...setup.env };
        // nothing off this machine: every URL the CLI is given is the daemon's
        for (const v of Object.values(env)) expect(v).not.toMatch(/https?:\/\/(?!127\.0\.0\.1[:/])/);
        const producedBefore = fake.produced.length;
        const strace = process.env.HARNESS_RL_AGENTS_STRACE;
        const bin = resolve(AGENTS_BIN, agent.bin);
        const ran = await runCli(
          strace ? 'strace' : bin,
          strace
            ? [
                '-f',
                '-qq',
                '-s',
                '120',
                '-e',
                'trace=connect,sendto,sendmmsg,write',
                '-o',
                `${strace}.${agent.id}.${mode}`,
                bin,
                ...setup.args(taskPrompt(work)),
              ]
            : setup.args(taskPrompt(work)),
          env,
          work,
          120_000,
        );
        await ep.stop?.();
        const calls = await ep.calls();
        if (process.env.HARNESS_RL_AGENTS_DEBUG)
          console.log(
            agent.id,
            mode,
            ran,
            JSON.stringify(
              calls.map((c) => [c.wire_api, c.stream, c.status, c.tags, c.model, c.error, c.token_source]),
            ),
          );
        expect(ran.code, `${ran.stdout}\n${ran.stderr}`).toBe(0);
        expect(ran.stdout).toContain(FINAL_TEXT);
        expect(await readFile(join(work, 'hello.txt'), 'utf8')).toBe(`hello from ${agent.id}\n`);

        // every generation the backend made for this CLI is a recorded call
        expect(fake.produced.length - producedBefore).toBe(calls.length);
        for (const c of calls) {
          expect(c.status, `${c.error}`).toBe('ok');
          expect(c.wire_api).toBe(agent.wireApi);
          expect(c.prompt_ids?.length).toBeGreaterThan(0);
          expect(c.response_logprobs?.length).toBe(c.response_ids?.length);
          // the tokens are the backend's own
          const produced = fake.produced.find((p) => isDeepStrictEqual(p.prompt_ids, c.prompt_ids));
          expect(produced?.choices[0].ids).toEqual(c.response_ids);
          expect(produced?.choices[0].logprobs).toEqual(c.response_logprobs);
        }
        // the main calls: its tool reached the backend and was called, then the final answer; the
        // stored responses hold what the CLI acted on (the call's arguments, the text it printed)
        const main = calls.filter((c) => JSON.stringify(c.request).includes(`"name":"${agent.tool.name}"`));
        expect(main.length).toBe(2);
        for (const c of main) expect(c.stream).toBe(agent.streams);
        const [first, last] = main;
        expect(holdsArguments(first.response, agent.tool.arguments(work))).toBe(true);
        expect(JSON.stringify(last.response)).toContain(FINAL_TEXT);
        // the CLI resent what it got: the second call is bridged (on by default on rollouts and
        // recordings too, across the side calls between them), its prompt extends the first's prompt + response
        expect(last.token_source).toBe('bridge');
        expect(
          last.prompt_ids?.slice(0, (first.prompt_ids?.length ?? 0) + (first.response_ids?.length ?? 0)),
        ).toEqual([...(first.prompt_ids ?? []), ...(first.response_ids ?? [])]);
        // everything else is a side call (titles, checks): tagged so in a recording (a rollout keeps them untagged)
        const side = calls.filter((c) => !main.includes(c));
        if (mode === 'recording') for (const c of side) expect(c.tags).toContain('side');
        for (const c of main) expect(c.tags.filter((t) => t === 'side')).toEqual([]);

        // its own telemetry: the tool it ran is a tool run on the rollout (or recording), after the
        // call that asked for it and before the final one, with its duration, outcome and result size
        const toolRuns = agent.telemetry ? await ep.toolRuns() : [];
        if (agent.telemetry) {
          if (process.env.HARNESS_RL_AGENTS_DEBUG) console.log(agent.id, mode, JSON.stringify(toolRuns));
          const run = toolRuns.find((t) => t.tool === agent.tool.name);
          expect(run, JSON.stringify(toolRuns)).toBeDefined();
          expect(run?.success).toBe(true);
          expect(run?.duration_ms).toBeGreaterThanOrEqual(0);
          expect(run?.result_bytes).toBeGreaterThan(0);
          expect(Date.parse(run?.started_at ?? '')).toBeLessThanOrEqual(Date.parse(last.created_at));
        }

        // one benchmark line: calls, tokens, and the proxy's added time per call (its total minus the backend's)
        const added = calls.map((c) => {
          const p = fake.produced.find((x) => isDeepStrictEqual(x.prompt_ids, c.prompt_ids));
          return (c.total_ms ?? 0) - (p?.ms ?? 0);
        });
        console.log(
          JSON.stringify({
            bench: 'agents-cli',
            cli: agent.id,
            version: agent.version,
            mode,
            calls: calls.length,
            side_calls: side.length,
            prompt_tokens: sum(calls.map((c) => c.prompt_ids?.length ?? 0)),
            response_tokens: sum(calls.map((c) => c.response_ids?.length ?? 0)),
            proxy_added_ms_per_call: Math.round((sum(added) / calls.length) * 10) / 10,
            tool_runs: toolRuns.length,
            cli_wall_ms: ran.ms,
          }),
        );
      }, 150_000);
});
