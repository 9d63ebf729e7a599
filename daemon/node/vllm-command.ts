// The vLLM command a node agent starts: the parsers each model family needs, the command built from
// --model (in the vLLM venv scripts/setup-vllm-venv.sh makes), and the preflight that names every flag
// a given --vllm-cmd lacks. Checked against vLLM 0.34.0's source (file:line in each rule).
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, join } from 'node:path';
import type { VllmFlags } from '../protocol/node';

/**
 * Tool-call and reasoning parsers per model family, matched on the model id or folder name (then on
 * config.json's architectures). Names from vLLM's registries: vllm/tool_parsers/__init__.py (hermes
 * :89, llama3_json :141, llama4_pythonic :149, mistral :173, openai :198, qwen3_coder :210) and
 * vllm/reasoning/__init__.py (deepseek_r1 :23, openai_gptoss :71, qwen3 :168).
 */
export const MODEL_PARSERS: {
  family: string;
  match: RegExp;
  arch?: RegExp;
  tool: string;
  reasoning?: string;
}[] = [
  { family: 'Qwen3-Coder', match: /qwen3-coder/i, tool: 'qwen3_coder' },
  { family: 'Qwen3', match: /qwen3/i, arch: /^Qwen3(Moe)?ForCausalLM$/, tool: 'hermes', reasoning: 'qwen3' },
  { family: 'QwQ', match: /qwq/i, tool: 'hermes', reasoning: 'deepseek_r1' },
  { family: 'Qwen2.5', match: /qwen2\.?5/i, arch: /^Qwen2ForCausalLM$/, tool: 'hermes' },
  {
    family: 'Llama 4',
    match: /llama-?4/i,
    arch: /^Llama4For(CausalLM|ConditionalGeneration)$/,
    tool: 'llama4_pythonic',
  },
  { family: 'Llama 3.x', match: /llama-?3/i, arch: /^LlamaForCausalLM$/, tool: 'llama3_json' },
  { family: 'Mistral', match: /mistral|ministral/i, arch: /^MistralForCausalLM$/, tool: 'mistral' },
  {
    family: 'gpt-oss',
    match: /gpt-oss/i,
    arch: /^GptOssForCausalLM$/,
    tool: 'openai',
    reasoning: 'openai_gptoss',
  },
];

export type ModelParsers = (typeof MODEL_PARSERS)[number];

/** The parsers of `model` (a hub id or a local folder), or null for a family not in the table. */
export function parsersFor(model: string): ModelParsers | null {
  const name = basename(model.replace(/\/+$/, ''));
  const byName = MODEL_PARSERS.find((p) => p.match.test(name));
  if (byName) return byName;
  try {
    const config = JSON.parse(readFileSync(join(model, 'config.json'), 'utf8')) as {
      architectures?: string[];
    };
    for (const arch of config.architectures ?? []) {
      const byArch = MODEL_PARSERS.find((p) => p.arch?.test(arch));
      if (byArch) return byArch;
    }
  } catch {}
  return null;
}

/** vLLM's allowed --max-lora-rank values and its default (vllm/config/lora.py:26 and :33). */
export const VLLM_LORA_RANKS = [1, 8, 16, 32, 64, 128, 256, 320, 512];
export const VLLM_DEFAULT_MAX_LORA_RANK = 16;

/** Where scripts/setup-vllm-venv.sh puts vLLM's own venv (HARNESS_RL_VLLM_VENV overrides). */
export function vllmVenv(env: NodeJS.ProcessEnv = process.env): string {
  return env.HARNESS_RL_VLLM_VENV || join(homedir(), '.harness-rl-node', 'vllm-venv');
}

/** Splits a shell command into words (quotes and backslashes; enough to read flags, not to run it). */
export function shellWords(command: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let quote: '"' | "'" | null = null;
  for (let i = 0; i < command.length; i++) {
    const c = command[i];
    if (quote) {
      if (c === quote) quote = null;
      else if (c === '\\' && quote === '"' && i + 1 < command.length) word += command[++i];
      else word += c;
    } else if (c === '"' || c === "'") {
      quote = c;
      inWord = true;
    } else if (c === '\\' && i + 1 < command.length) {
      word += command[++i];
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (inWord) words.push(word);
  return words;
}

/** What a vLLM command says, as far as the preflight needs it. */
export interface VllmCommand {
  /** The command is vLLM's server (`vllm serve`, `-m vllm.entrypoints.openai.api_server`) or its stand-in. */
  isVllm: boolean;
  model: string | null;
  /** Each --flag's value ('' for a switch); `--flag=value` and `--flag value` both read. */
  flags: Map<string, string>;
  /** VAR=value words before the program. */
  env: Map<string, string>;
}

const SWITCHES = new Set([
  '--enable-lora',
  '--enable-auto-tool-choice',
  '--enforce-eager',
  '--trust-remote-code',
]);

export function parseVllmCommand(command: string): VllmCommand {
  const words = shellWords(command);
  const env = new Map<string, string>();
  let i = 0;
  if (words[i] === 'env') i++;
  for (; i < words.length && /^[A-Za-z_]\w*=/.test(words[i]); i++) {
    const eq = words[i].indexOf('=');
    env.set(words[i].slice(0, eq), words[i].slice(eq + 1));
  }
  const rest = words.slice(i);
  const serveAt = rest.findIndex((w, k) => k > 0 && w === 'serve' && /(^|\/)vllm$/.test(rest[k - 1]));
  const moduleAt = rest.findIndex(
    (w, k) =>
      k > 0 &&
      rest[k - 1] === '-m' &&
      (w === 'vllm.entrypoints.openai.api_server' || w === 'harness_rl_trainer.serve'),
  );
  const isVllm = serveAt >= 0 || moduleAt >= 0;
  const flags = new Map<string, string>();
  let model: string | null = null;
  const from = serveAt >= 0 ? serveAt + 1 : moduleAt >= 0 ? moduleAt + 1 : rest.length;
  for (let k = from; k < rest.length; k++) {
    const w = rest[k];
    if (w.startsWith('--')) {
      const eq = w.indexOf('=');
      if (eq > 0) flags.set(w.slice(0, eq), w.slice(eq + 1));
      else if (SWITCHES.has(w) || k + 1 >= rest.length || rest[k + 1].startsWith('--')) flags.set(w, '');
      else flags.set(w, rest[++k]);
    } else if (serveAt >= 0 && k === from) model = w;
  }
  model ??= flags.get('--model') ?? null;
  return { isVllm, model, flags, env };
}

export interface BuildOptions {
  model: string;
  port: number;
  servedModelName?: string;
  maxLoraRank?: number;
  /** Adapters batched at once and kept in memory (runs sharing this vLLM; vllm/config/lora.py:35, :42). */
  maxLoras?: number;
  /** The parsers for a family the table does not know (or to override it). */
  toolCallParser?: string;
  reasoningParser?: string;
  gpuMemoryUtilization?: number;
  tensorParallelSize?: number;
  env?: NodeJS.ProcessEnv;
}

const quoteWord = (w: string) => (/^[\w@%+=:,./-]+$/.test(w) ? w : `'${w.replace(/'/g, `'\\''`)}'`);

/** The flags a run checks when it starts (null: not a vLLM command, unknown). */
export function vllmFlags(command: string): VllmFlags | null {
  const cmd = parseVllmCommand(command);
  if (!cmd.isVllm) return null;
  return {
    enable_lora: cmd.flags.has('--enable-lora'),
    max_lora_rank: Number(cmd.flags.get('--max-lora-rank') ?? VLLM_DEFAULT_MAX_LORA_RANK),
    logprobs_mode: cmd.flags.get('--logprobs-mode') ?? 'raw_logprobs',
  };
}

/** The vLLM command the node starts for --model: vLLM's own venv, every flag the preflight asks for. */
export function buildVllmCommand(o: BuildOptions): string {
  const known = parsersFor(o.model);
  const tool = o.toolCallParser ?? known?.tool;
  const reasoning = o.reasoningParser ?? known?.reasoning;
  const words = [join(vllmVenv(o.env), 'bin', 'vllm'), 'serve', o.model];
  words.push(
    '--served-model-name',
    o.servedModelName ?? 'base',
    '--host',
    '127.0.0.1',
    '--port',
    String(o.port),
  );
  // Logprobs after temperature (vllm/config/model.py:305, sampler v1/worker/gpu/sample/sampler.py:170):
  // the same as raw at neutral sampling, and what a run sampling at T != 1 must record.
  words.push('--generation-config', 'vllm', '--logprobs-mode', 'processed_logprobs');
  if (tool) words.push('--enable-auto-tool-choice', '--tool-call-parser', tool);
  if (reasoning) words.push('--reasoning-parser', reasoning);
  if (o.maxLoraRank !== undefined) words.push('--enable-lora', '--max-lora-rank', String(o.maxLoraRank));
  if (o.maxLoras !== undefined)
    words.push('--max-loras', String(o.maxLoras), '--max-cpu-loras', String(o.maxLoras));
  if (o.gpuMemoryUtilization !== undefined)
    words.push('--gpu-memory-utilization', String(o.gpuMemoryUtilization));
  if (o.tensorParallelSize && o.tensorParallelSize > 1)
    words.push('--tensor-parallel-size', String(o.tensorParallelSize));
  return words.map(quoteWord).join(' ');
}

export interface PreflightOptions {
  /** GPUs the node gives vLLM (--gpus), null: every visible one. */
  gpus: number[] | null;
  /** Another node agent (or process) uses these GPUs too: vLLM must state its share of memory. */
  sharedWith: string | null;
  /** The env the node starts vLLM with (the agent's own plus what it adds). */
  env: NodeJS.ProcessEnv;
  /** The node was told the parser (--tool-call-parser): not checked against the family table. */
  parserChosen?: boolean;
}

/** Every problem of a --vllm-cmd, each naming the flag to add; empty when it can run a training run. */
export function preflightVllm(command: string, o: PreflightOptions): string[] {
  const cmd = parseVllmCommand(command);
  if (!cmd.isVllm) return [];
  const problems: string[] = [];
  const flag = (name: string) => cmd.flags.get(name);
  const envOf = (name: string) => cmd.env.get(name) ?? o.env[name];

  // Without --host vLLM listens on every interface (vllm/entrypoints/common/cli_args.py:294, host None);
  // dev mode adds unauthenticated /collective_rpc and /pause there (launchers/api_server/routers.py:46).
  const host = flag('--host');
  if (host === undefined) problems.push('--host 127.0.0.1 is missing: vLLM would listen on every interface');
  else if (!['127.0.0.1', 'localhost', '::1'].includes(host))
    problems.push(`--host ${host}: use --host 127.0.0.1 (dev mode serves /collective_rpc without a token)`);

  // Tools with tool_choice auto (the default when tools are sent, chat_completion/protocol.py:992) are
  // refused without both flags (vllm/renderers/online_renderer.py:276).
  const parsers = cmd.model ? parsersFor(cmd.model) : null;
  const want = parsers
    ? ` ${parsers.tool}`
    : ` <the model family's parser: ${[...new Set(MODEL_PARSERS.map((p) => p.tool))].join(', ')}, …; vllm/tool_parsers/__init__.py>`;
  if (flag('--enable-auto-tool-choice') === undefined)
    problems.push(`--enable-auto-tool-choice is missing: vLLM answers 400 to every call with tools`);
  const tool = flag('--tool-call-parser');
  if (!tool) problems.push(`--tool-call-parser${want} is missing`);
  else if (parsers && tool !== parsers.tool && !o.parserChosen)
    problems.push(
      `--tool-call-parser ${tool}: ${parsers.family} models need --tool-call-parser ${parsers.tool}`,
    );
  if (parsers?.reasoning && !flag('--reasoning-parser'))
    problems.push(
      `--reasoning-parser ${parsers.reasoning} is missing (${parsers.family} thinks before it answers)`,
    );

  // "auto" (the default) applies the model's generation_config.json sampling defaults to requests that
  // omit them (vllm/config/model.py:372); training samples at the run's own settings.
  if (flag('--generation-config') !== 'vllm')
    problems.push(
      "--generation-config vllm is missing: vLLM would sample with the model's generation_config.json",
    );

  // The *_logits modes put logits where the answer's logprobs go (v1/worker/gpu/sample/sampler.py:179).
  const logprobsMode = flag('--logprobs-mode');
  if (logprobsMode === 'raw_logits' || logprobsMode === 'processed_logits')
    problems.push(
      `--logprobs-mode ${logprobsMode}: vLLM would return logits as logprobs; use processed_logprobs`,
    );

  if (flag('--max-lora-rank') !== undefined) {
    const rank = Number(flag('--max-lora-rank'));
    if (!VLLM_LORA_RANKS.includes(rank))
      problems.push(
        `--max-lora-rank ${flag('--max-lora-rank')}: vLLM takes one of ${VLLM_LORA_RANKS.join(', ')}`,
      );
    if (flag('--enable-lora') === undefined) problems.push('--max-lora-rank without --enable-lora');
  }
  if (
    flag('--enable-lora') !== undefined &&
    !/^(1|true)$/i.test(envOf('VLLM_ALLOW_RUNTIME_LORA_UPDATING') ?? '')
  )
    problems.push('VLLM_ALLOW_RUNTIME_LORA_UPDATING=True is not set: /v1/load_lora_adapter is not served');
  if (envOf('VLLM_SERVER_DEV_MODE') !== '1')
    problems.push(
      'VLLM_SERVER_DEV_MODE=1 is not set: full weights cannot be reloaded (/pause, /collective_rpc)',
    );

  const tp = Number(flag('--tensor-parallel-size') ?? flag('-tp') ?? 1);
  if (o.gpus && tp > o.gpus.length)
    problems.push(`--tensor-parallel-size ${tp} needs ${tp} GPUs; --gpus gives it ${o.gpus.join(',')}`);
  // Unset, vLLM takes the whole card (vllm/config/cache.py:216 and :495, 1.0 with the extensible KV cache).
  if (o.sharedWith && flag('--gpu-memory-utilization') === undefined)
    problems.push(
      `--gpu-memory-utilization is missing and the GPU is shared with ${o.sharedWith}: vLLM would take the whole card (give it e.g. 0.5 with --gpu-memory-utilization on the node)`,
    );
  return problems;
}

/** A --vllm-cmd with --gpu-memory-utilization added when the node states it and the command does not. */
export function withMemoryShare(command: string, share: number | undefined): string {
  if (share === undefined || parseVllmCommand(command).flags.has('--gpu-memory-utilization')) return command;
  return `${command} --gpu-memory-utilization ${share}`;
}

/** The vllm executable a built command runs is there (else: the command that makes it). */
export function vllmInstalled(env: NodeJS.ProcessEnv = process.env): string | null {
  const bin = join(vllmVenv(env), 'bin', 'vllm');
  return existsSync(bin)
    ? null
    : `vLLM is not installed in ${vllmVenv(env)}: run scripts/setup-vllm-venv.sh on this machine (or give --vllm-cmd)`;
}
