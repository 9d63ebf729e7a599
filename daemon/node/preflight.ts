// `harness-rl node`'s start-up check: the command it will run (the vLLM command built from --model, or
// --vllm-cmd with the node's memory share added), the GPUs it gets (CUDA_VISIBLE_DEVICES from --gpus), and
// every problem that would stop or spoil a run — each missing vLLM flag, each GPU clash — named at once.

import type { GpuProcess } from './gpu';
import { type Claim, claimClashes, claimsDir, otherClaims, sharers } from './gpu-claims';
import {
  buildVllmCommand,
  preflightVllm,
  VLLM_LORA_RANKS,
  vllmInstalled,
  withMemoryShare,
} from './vllm-command';

export interface NodePlan {
  role: 'inference' | 'trainer';
  listen: string;
  /** The command the node starts (undefined: it starts none, e.g. --vllm-url or --engine reference). */
  command?: string;
  gpus: number[] | null;
  memoryShare: number | null;
  /** Added to the started process's environment. */
  env: Record<string, string>;
  /** --tool-call-parser was given to the node. */
  parserChosen?: boolean;
}

export interface PlanInput {
  role: 'inference' | 'trainer';
  listen: string;
  vllmUrl: string;
  vllmCmd?: string;
  trainerCmd?: string;
  model?: string;
  servedModelName?: string;
  maxLoraRank?: string;
  maxLoras?: string;
  toolCallParser?: string;
  reasoningParser?: string;
  gpus?: number[];
  gpuMemoryUtilization?: string;
  env?: NodeJS.ProcessEnv;
}

/** Builds the plan, or throws with the usage problem (a bad flag value). */
export function planNode(i: PlanInput): NodePlan {
  const share = i.gpuMemoryUtilization === undefined ? undefined : Number(i.gpuMemoryUtilization);
  if (share !== undefined && !(share > 0 && share <= 1))
    throw new Error(`--gpu-memory-utilization ${i.gpuMemoryUtilization}: a fraction of the card in (0, 1]`);
  if (share !== undefined && i.role !== 'inference')
    throw new Error("--gpu-memory-utilization is vLLM's share of the card: give it to the inference node");
  const rank = i.maxLoraRank === undefined ? undefined : Number(i.maxLoraRank);
  if (rank !== undefined && !VLLM_LORA_RANKS.includes(rank))
    throw new Error(`--max-lora-rank ${i.maxLoraRank}: vLLM takes one of ${VLLM_LORA_RANKS.join(', ')}`);
  const loras = i.maxLoras === undefined ? undefined : Number(i.maxLoras);
  if (loras !== undefined && !(Number.isInteger(loras) && loras >= 1))
    throw new Error(`--max-loras ${i.maxLoras}: a whole number >= 1 (the runs sharing this vLLM)`);
  if (loras !== undefined && rank === undefined) throw new Error('--max-loras goes with --max-lora-rank');
  const env: Record<string, string> = {};
  if (i.gpus) env.CUDA_VISIBLE_DEVICES = i.gpus.join(',');
  let command: string | undefined;
  if (i.role === 'trainer') command = i.trainerCmd;
  else if (i.vllmCmd) command = withMemoryShare(i.vllmCmd, share);
  else if (i.model)
    command = buildVllmCommand({
      model: i.model,
      port: Number(new URL(i.vllmUrl).port || 8000),
      servedModelName: i.servedModelName,
      maxLoraRank: rank,
      maxLoras: loras,
      toolCallParser: i.toolCallParser,
      reasoningParser: i.reasoningParser,
      gpuMemoryUtilization: share,
      tensorParallelSize: i.gpus?.length,
      env: i.env,
    });
  if (command && i.role === 'inference') {
    env.VLLM_ALLOW_RUNTIME_LORA_UPDATING = 'True';
    env.VLLM_SERVER_DEV_MODE = '1';
  }
  const fromCmd =
    command && i.role === 'inference' ? /--gpu-memory-utilization[= ](\S+)/.exec(command) : null;
  return {
    role: i.role,
    listen: i.listen,
    command,
    gpus: i.gpus ?? null,
    memoryShare: fromCmd ? Number(fromCmd[1]) : null,
    env,
    parserChosen: i.toolCallParser !== undefined,
  };
}

/** Every problem with the plan (empty: start). `processes` is nvidia-smi's list (tests pass their own). */
export function preflightNode(
  plan: NodePlan,
  options: { builtFromModel: boolean; env?: NodeJS.ProcessEnv; processes?: GpuProcess[] } = {
    builtFromModel: false,
  },
): { problems: string[]; claim: Claim | null } {
  const env = options.env ?? process.env;
  if (!plan.command) return { problems: [], claim: null };
  const claim: Claim = {
    role: plan.role,
    pid: process.pid,
    gpus: plan.gpus,
    memory_share: plan.memoryShare,
    listen: plan.listen,
  };
  const dir = claimsDir(env);
  const problems = claimClashes(claim, otherClaims(dir));
  if (plan.role === 'trainer') {
    // torchrun starts one rank per GPU: more ranks than --gpus gives would put two on one card.
    const nproc = /--nproc[-_]per[-_]node[= ](\d+)/.exec(plan.command)?.[1];
    if (nproc && plan.gpus && Number(nproc) > plan.gpus.length)
      problems.push(
        `torchrun --nproc-per-node ${nproc} needs ${nproc} GPUs; --gpus gives the trainer ${plan.gpus.join(',')}`,
      );
  }
  if (plan.role === 'inference') {
    if (options.builtFromModel) {
      const missing = vllmInstalled(env);
      if (missing) problems.push(missing);
    }
    problems.push(
      ...preflightVllm(plan.command, {
        gpus: plan.gpus,
        sharedWith: sharers(claim, dir, options.processes),
        env: { ...env, ...plan.env },
        parserChosen: plan.parserChosen,
      }),
    );
  }
  return { problems, claim };
}
