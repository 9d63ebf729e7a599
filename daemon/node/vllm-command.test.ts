// The vLLM command a node starts or is given: the parsers per model family, the command built from
// --model, and the preflight naming each flag vLLM 0.34 needs (its source file:line in vllm-command.ts).
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { planNode } from './preflight';
import {
  buildVllmCommand,
  parsersFor,
  parseVllmCommand,
  preflightVllm,
  shellWords,
  vllmFlags,
  withMemoryShare,
} from './vllm-command';

const dir = mkdtempSync(join(tmpdir(), 'harness-rl-vllm-cmd-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const devEnv = { VLLM_SERVER_DEV_MODE: '1', VLLM_ALLOW_RUNTIME_LORA_UPDATING: 'True' };
const ok = { gpus: null, sharedWith: null, env: devEnv };

describe('the parsers of a model family', () => {
  it('names hermes + qwen3 for Qwen3, hermes for Qwen2.5, llama3_json for Llama 3.x (vLLM registry names)', () => {
    expect(parsersFor('Qwen/Qwen3-1.7B')).toMatchObject({ tool: 'hermes', reasoning: 'qwen3' });
    expect(parsersFor('Qwen/Qwen3-Coder-30B-A3B-Instruct')).toMatchObject({ tool: 'qwen3_coder' });
    expect(parsersFor('Qwen/Qwen2.5-7B-Instruct')).toMatchObject({ family: 'Qwen2.5', tool: 'hermes' });
    expect(parsersFor('Qwen/Qwen2.5-7B-Instruct')?.reasoning).toBeUndefined();
    expect(parsersFor('meta-llama/Llama-3.1-8B-Instruct')).toMatchObject({ tool: 'llama3_json' });
    expect(parsersFor('some/unknown-model')).toBeNull();
  });

  it("reads a local folder's config.json architectures when its name says nothing", () => {
    const model = join(dir, 'my-finetune');
    rmSync(model, { recursive: true, force: true });
    mkdirSync(model);
    writeFileSync(join(model, 'config.json'), JSON.stringify({ architectures: ['Qwen3ForCausalLM'] }));
    expect(parsersFor(model)).toMatchObject({ family: 'Qwen3', tool: 'hermes', reasoning: 'qwen3' });
  });
});

describe('a vLLM command', () => {
  it('is read word by word (quotes, --flag=value, env prefixes)', () => {
    expect(shellWords(`a "b c" 'd e' f\\ g`)).toEqual(['a', 'b c', 'd e', 'f g']);
    const c = parseVllmCommand(
      'CUDA_VISIBLE_DEVICES=0 vllm serve Qwen/Qwen3-1.7B --enable-lora --max-lora-rank=32 --port 8000',
    );
    expect(c.isVllm).toBe(true);
    expect(c.model).toBe('Qwen/Qwen3-1.7B');
    expect(c.env.get('CUDA_VISIBLE_DEVICES')).toBe('0');
    expect(c.flags.get('--enable-lora')).toBe('');
    expect(c.flags.get('--max-lora-rank')).toBe('32');
    expect(parseVllmCommand('python -m harness_rl_trainer.serve --model /m').model).toBe('/m');
    expect(parseVllmCommand('sh start-my-server.sh').isVllm).toBe(false);
  });

  it('built from --model carries every flag the preflight asks for, in the vLLM venv', () => {
    const cmd = buildVllmCommand({
      model: 'Qwen/Qwen3-1.7B',
      port: 8001,
      maxLoraRank: 32,
      gpuMemoryUtilization: 0.45,
      env: { HARNESS_RL_VLLM_VENV: '/opt/vllm-venv' },
    });
    expect(cmd).toBe(
      '/opt/vllm-venv/bin/vllm serve Qwen/Qwen3-1.7B --served-model-name base --host 127.0.0.1 --port 8001 --generation-config vllm --logprobs-mode processed_logprobs --enable-auto-tool-choice --tool-call-parser hermes --reasoning-parser qwen3 --enable-lora --max-lora-rank 32 --gpu-memory-utilization 0.45',
    );
    expect(preflightVllm(cmd, ok)).toEqual([]);
  });

  it('refuses --logprobs-mode raw_logits/processed_logits: vLLM would answer logits where the logprobs go', () => {
    const base =
      'vllm serve Qwen/Qwen3-1.7B --host 127.0.0.1 --generation-config vllm --enable-auto-tool-choice --tool-call-parser hermes --reasoning-parser qwen3';
    const env = { VLLM_SERVER_DEV_MODE: '1' };
    for (const mode of ['raw_logits', 'processed_logits'])
      expect(preflightVllm(`${base} --logprobs-mode ${mode}`, { ...ok, env })).toEqual([
        `--logprobs-mode ${mode}: vLLM would return logits as logprobs; use processed_logprobs`,
      ]);
    expect(preflightVllm(`${base} --logprobs-mode processed_logprobs`, { ...ok, env })).toEqual([]);
  });

  it("reads the flags a run checks at start, with vLLM's defaults where a flag is absent", () => {
    expect(
      vllmFlags('vllm serve m --enable-lora --max-lora-rank=64 --logprobs-mode processed_logprobs'),
    ).toEqual({
      enable_lora: true,
      max_lora_rank: 64,
      logprobs_mode: 'processed_logprobs',
    });
    expect(vllmFlags('vllm serve m')).toEqual({
      enable_lora: false,
      max_lora_rank: 16,
      logprobs_mode: 'raw_logprobs',
    });
    expect(vllmFlags('python my_server.py --port 8000')).toBeNull();
  });

  it("the README's old command is refused naming each missing flag (tool calls would get 400)", () => {
    const problems = preflightVllm(
      'vllm serve Qwen/Qwen3-1.7B --served-model-name base --enable-lora --max-lora-rank 32 --port 8000',
      { gpus: null, sharedWith: 'the trainer node agent (pid 7, 0.0.0.0:4302) on GPU 0', env: {} },
    );
    expect(problems.join('\n')).toMatch(/--host 127\.0\.0\.1 is missing/);
    expect(problems.join('\n')).toMatch(/--enable-auto-tool-choice is missing/);
    expect(problems.join('\n')).toMatch(/--tool-call-parser hermes is missing/);
    expect(problems.join('\n')).toMatch(/--reasoning-parser qwen3 is missing/);
    expect(problems.join('\n')).toMatch(/--generation-config vllm is missing/);
    expect(problems.join('\n')).toMatch(/VLLM_ALLOW_RUNTIME_LORA_UPDATING=True is not set/);
    expect(problems.join('\n')).toMatch(/VLLM_SERVER_DEV_MODE=1 is not set/);
    expect(problems.join('\n')).toMatch(
      /--gpu-memory-utilization is missing and the GPU is shared with the trainer node agent/,
    );
    expect(problems).toHaveLength(8);
  });

  it('refuses a host on every interface, a wrong parser, a bad LoRA rank and too few GPUs for tensor parallelism', () => {
    const problems = preflightVllm(
      'vllm serve meta-llama/Llama-3.1-8B-Instruct --host 0.0.0.0 --generation-config vllm --enable-auto-tool-choice --tool-call-parser hermes --max-lora-rank 24 --tensor-parallel-size 2',
      { ...ok, gpus: [0] },
    );
    expect(problems).toEqual([
      '--host 0.0.0.0: use --host 127.0.0.1 (dev mode serves /collective_rpc without a token)',
      '--tool-call-parser hermes: Llama 3.x models need --tool-call-parser llama3_json',
      '--max-lora-rank 24: vLLM takes one of 1, 8, 16, 32, 64, 128, 256, 320, 512',
      '--max-lora-rank without --enable-lora',
      '--tensor-parallel-size 2 needs 2 GPUs; --gpus gives it 0',
    ]);
  });

  it("a command that is not vLLM's server is not checked, and the node's memory share is added once", () => {
    expect(preflightVllm('sh my-server.sh', { ...ok, env: {} })).toEqual([]);
    expect(withMemoryShare('vllm serve m', 0.5)).toBe('vllm serve m --gpu-memory-utilization 0.5');
    expect(withMemoryShare('vllm serve m --gpu-memory-utilization 0.3', 0.5)).toBe(
      'vllm serve m --gpu-memory-utilization 0.3',
    );
  });
});

describe('the documented node commands', () => {
  it('every `harness-rl node --role inference` command in the README and examples/gpu starts a vLLM that passes the preflight', () => {
    const docs = ['README.md', 'examples/gpu/run.yaml'].map((f) =>
      readFileSync(join(__dirname, '../..', f), 'utf8').replace(/\\\n#?\s*/g, ' '),
    );
    const commands = docs.flatMap((d) => d.match(/harness-rl node --role inference[^\n]*/g) ?? []);
    expect(commands.length).toBeGreaterThanOrEqual(2);
    for (const line of commands) {
      const words = shellWords(line);
      const flag = (name: string) => {
        const i = words.indexOf(name);
        return i >= 0 ? words[i + 1] : undefined;
      };
      const plan = planNode({
        role: 'inference',
        listen: flag('--listen') ?? '',
        vllmUrl: flag('--vllm-url') ?? 'http://127.0.0.1:8000',
        vllmCmd: flag('--vllm-cmd'),
        model: flag('--model'),
        maxLoraRank: flag('--max-lora-rank'),
        gpus: flag('--gpus')?.split(',').map(Number),
        gpuMemoryUtilization: flag('--gpu-memory-utilization'),
      });
      const problems = preflightVllm(plan.command ?? '', {
        gpus: plan.gpus,
        sharedWith: 'the trainer node',
        env: plan.env,
      });
      expect(problems, line).toEqual([]);
    }
  });
});
