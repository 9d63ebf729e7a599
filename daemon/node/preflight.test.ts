// `harness-rl node`'s start-up check: GPU assignment (CUDA_VISIBLE_DEVICES), the memory split when both
// roles share a card (vLLM unset takes all of it: vllm/config/cache.py:495), and the vLLM venv.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { type Claim, writeClaim } from './gpu-claims';
import { planNode, preflightNode } from './preflight';

const dir = mkdtempSync(join(tmpdir(), 'harness-rl-preflight-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let claims: string;
let env: NodeJS.ProcessEnv;
beforeEach(() => {
  claims = mkdtempSync(join(dir, 'claims-'));
  env = { HARNESS_RL_GPU_CLAIMS: claims, HARNESS_RL_VLLM_VENV: join(dir, 'venv') };
});
const other = (c: Partial<Claim>): Claim => ({
  role: 'trainer',
  pid: process.ppid, // alive, and not this process
  gpus: [0],
  memory_share: null,
  listen: '0.0.0.0:4302',
  ...c,
});
const inference = (extra: Partial<Parameters<typeof planNode>[0]> = {}) =>
  planNode({
    role: 'inference',
    listen: '0.0.0.0:4301',
    vllmUrl: 'http://127.0.0.1:8000',
    model: 'Qwen/Qwen3-1.7B',
    maxLoraRank: '32',
    gpus: [0],
    env,
    ...extra,
  });
const check = (plan: ReturnType<typeof planNode>, processes = []) =>
  preflightNode(plan, { builtFromModel: false, env, processes }).problems;

describe('GPU assignment', () => {
  it('--gpus becomes CUDA_VISIBLE_DEVICES of what the node starts, and tensor parallelism over them', () => {
    const plan = inference({ gpus: [2, 3] });
    expect(plan.env.CUDA_VISIBLE_DEVICES).toBe('2,3');
    expect(plan.command).toMatch(/--tensor-parallel-size 2$/);
    const trainer = planNode({
      role: 'trainer',
      listen: 'x:1',
      vllmUrl: 'http://h:1',
      trainerCmd: 'python -m t',
      gpus: [1],
    });
    expect(trainer.env).toEqual({ CUDA_VISIBLE_DEVICES: '1' });
  });

  it('refuses bad values naming the flag', () => {
    expect(() => inference({ gpuMemoryUtilization: '1.5' })).toThrow(/--gpu-memory-utilization 1\.5/);
    expect(() => inference({ maxLoraRank: '24' })).toThrow(/--max-lora-rank 24: vLLM takes one of/);
    expect(() =>
      planNode({
        role: 'trainer',
        listen: 'x:1',
        vllmUrl: 'http://h:1',
        trainerCmd: 't',
        gpuMemoryUtilization: '0.5',
      }),
    ).toThrow(/give it to the inference node/);
  });
});

describe('both roles on one GPU', () => {
  it('vLLM without a memory share next to a trainer node is refused naming that node; with one it starts', () => {
    writeClaim(claims, other({}));
    expect(check(inference())).toEqual([
      `--gpu-memory-utilization is missing and the GPU is shared with the trainer node agent (pid ${process.ppid}, 0.0.0.0:4302) on GPU 0: vLLM would take the whole card (give it e.g. 0.5 with --gpu-memory-utilization on the node)`,
    ]);
    expect(check(inference({ gpuMemoryUtilization: '0.45' }))).toEqual([]);
    expect(check(inference({ gpus: [1] }))).toEqual([]);
  });

  it('a trainer node next to a vLLM that was given the whole card is refused naming it', () => {
    writeClaim(claims, other({ role: 'inference', listen: '0.0.0.0:4301' }));
    const trainer = planNode({
      role: 'trainer',
      listen: 'x:4302',
      vllmUrl: 'http://h:1',
      trainerCmd: 'python -m t',
      gpus: [0],
    });
    expect(check(trainer)).toEqual([
      `the inference node agent (pid ${process.ppid}, 0.0.0.0:4301) on GPU 0 gives vLLM the whole card (no --gpu-memory-utilization): restart it with a share, or give this node other --gpus`,
    ]);
    // Without --gpus a node takes every GPU, so it shares GPU 0 too.
    const everywhere = planNode({
      role: 'trainer',
      listen: 'x:4302',
      vllmUrl: 'http://h:1',
      trainerCmd: 't',
    });
    expect(check(everywhere)).toHaveLength(1);
  });

  it('vLLM shares that leave the trainer under 10% of the card are refused', () => {
    writeClaim(claims, other({}));
    writeClaim(claims, other({ role: 'inference', memory_share: 0.5 }));
    expect(check(inference({ gpuMemoryUtilization: '0.3' }))).toEqual([]);
    expect(check(inference({ gpuMemoryUtilization: '0.45' }))).toEqual([
      'the vLLM memory shares on GPU 0 add up to 0.95, leaving the trainer under 10% of the card',
    ]);
  });

  it('claims of agents that died are removed, not held against the next one', () => {
    writeClaim(claims, other({ pid: 2 ** 22 + 12345 }));
    expect(check(inference())).toEqual([]);
    expect(readdirSync(claims)).toEqual([]);
  });

  it('another process nvidia-smi lists on the GPU counts as sharing it', () => {
    const problems = check(inference(), [{ pid: 4242, name: 'python3', usedMb: 30000, gpu: 0 }] as never);
    expect(problems).toEqual([expect.stringMatching(/shared with pid 4242 \(python3, 30000 MiB on GPU 0\)/)]);
  });
});

describe("vLLM's own venv", () => {
  it('a command built from --model needs the venv scripts/setup-vllm-venv.sh makes', () => {
    const plan = inference();
    expect(plan.command).toMatch(
      new RegExp(`^${join(dir, 'venv')}/bin/vllm serve Qwen/Qwen3-1.7B `.replace(/\//g, '\\/')),
    );
    const { problems } = preflightNode(plan, { builtFromModel: true, env, processes: [] });
    expect(problems).toEqual([
      expect.stringMatching(/vLLM is not installed in .*venv: run scripts\/setup-vllm-venv\.sh/),
    ]);
  });
});

describe('runs sharing one vLLM', () => {
  it('--max-loras K gives vLLM --max-loras K --max-cpu-loras K, with --max-lora-rank', () => {
    expect(inference({ maxLoras: '3' }).command).toMatch(
      /--enable-lora --max-lora-rank 32 --max-loras 3 --max-cpu-loras 3/,
    );
    expect(() => inference({ maxLoras: '0' })).toThrow(/--max-loras 0/);
    expect(() => inference({ maxLoras: '2', maxLoraRank: undefined })).toThrow(/goes with --max-lora-rank/);
  });
});

describe('a trainer under torchrun', () => {
  it('with more ranks than --gpus gives it is refused naming both', () => {
    const plan = planNode({
      role: 'trainer',
      listen: 'x:4302',
      vllmUrl: 'http://h:1',
      trainerCmd: 'torchrun --nproc-per-node 2 -m harness_rl_trainer --checkpoint-dir c',
      gpus: [1],
    });
    expect(check(plan)).toEqual(['torchrun --nproc-per-node 2 needs 2 GPUs; --gpus gives the trainer 1']);
    expect(check({ ...plan, gpus: [1, 2] })).toEqual([]);
  });
});

describe('a model family the parser table does not know', () => {
  it('is refused listing the parsers to choose from, and starts with the ones the node is given', () => {
    const unknown = inference({ model: 'acme/agent-7b', maxLoraRank: undefined });
    expect(check(unknown)).toEqual([
      expect.stringMatching(/^--enable-auto-tool-choice is missing/),
      expect.stringMatching(/^--tool-call-parser <the model family's parser: .*hermes.*llama3_json/),
    ]);
    const chosen = inference({ model: 'acme/agent-7b', toolCallParser: 'pythonic', maxLoraRank: undefined });
    expect(chosen.command).toMatch(/--enable-auto-tool-choice --tool-call-parser pythonic/);
    expect(check(chosen)).toEqual([]);
    expect(check(inference({ toolCallParser: 'qwen3_xml' }))).toEqual([]);
  });
});
