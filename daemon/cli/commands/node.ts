// `harness-rl node --role inference|trainer --listen HOST:PORT --token-file F …`: the node agent on a
// GPU machine. The daemon connects to it (ws:// or wss://); see daemon/node/agent.ts.
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { bindsLoopbackOnly, checkBind, NODE_BIND } from '../../config/bind';
import { newToken } from '../../config/token';
import { type NodeAgent, startNodeAgent } from '../../node/agent';
import { parseGpus } from '../../node/gpu';
import { claimsDir, writeClaim } from '../../node/gpu-claims';
import { InferenceRole } from '../../node/inference';
import { type NodePlan, planNode, preflightNode } from '../../node/preflight';
import { TrainerRole } from '../../node/trainer';
import type { NodeRole } from '../../protocol/node';
import { type CommandValues, parseCommandArgs } from '../args';

const USAGE = `usage: harness-rl node --role inference|trainer --listen HOST:PORT --token-file FILE [options]
  --listen       where the daemon connects (default 127.0.0.1:4300; 0.0.0.0:PORT to accept other
                 machines, which needs --tls-cert/--tls-key, or --allow-plain-ws, or an ssh tunnel)
  --token-file   the node's token (created with mode 0600 when missing); the run config's
                 inference.token / trainer.token must be the same
  --tls-cert, --tls-key   PEM files: serve wss:// instead of ws://
  --allow-plain-ws        serve ws:// beyond loopback anyway (logged on every start)
  --data         folder for received weights and checkpoints (default ~/.harness-rl-node)
  --gpus 0,1     the GPUs of what this node starts (CUDA_VISIBLE_DEVICES); default: every GPU. Both
                 roles on one GPU need vLLM's share of it (--gpu-memory-utilization)
  inference, one of:
    --model ID|DIR        start vLLM for this model from its own venv (scripts/setup-vllm-venv.sh),
                          with the tool/reasoning parsers of its family, --host 127.0.0.1 and
                          --generation-config vllm; with --max-lora-rank R for LoRA runs (rank <= R),
                          --max-loras K for K LoRA runs sharing it, --served-model-name (default base);
                          --tool-call-parser P [--reasoning-parser R] for a family not in
                          daemon/node/vllm-command.ts's table (vLLM's parser names)
    --vllm-cmd "CMD"      start this vLLM command instead (checked for the same flags at start)
    --vllm-url URL        an existing vLLM OpenAI server (e.g. http://127.0.0.1:8000); with --model or
                          --vllm-cmd: where the started one listens (default http://127.0.0.1:8000)
    --engine reference    the built-in reference engine
  --gpu-memory-utilization F   vLLM's share of its GPUs (0 < F <= 1), added to its command
  --keep-weights K      full-weight versions kept on disk per run (default 2)
  --model-files DIR     the served model's tokenizer files (tokenizer.json, tokenizer_config.json, its
                        chat template), sent to the daemon for bridged calls; default: the folder vLLM
                        serves (/v1/models root: a local folder, or a hub id in the Hugging Face cache)
  A started vLLM runs with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True and VLLM_SERVER_DEV_MODE=1 (LoRA
  hot-load; full-weight reload); the node refuses to start naming each missing flag or GPU clash.
  trainer, one of:
    --engine reference    the built-in reference trainer
    --trainer-cmd "CMD"   a process speaking the trainer protocol on stdio (python -m harness_rl_trainer …)
`;

const OPTIONS = {
  role: { type: 'string' },
  listen: { type: 'string' },
  'token-file': { type: 'string' },
  'tls-cert': { type: 'string' },
  'tls-key': { type: 'string' },
  'allow-plain-ws': { type: 'boolean' },
  data: { type: 'string' },
  'vllm-url': { type: 'string' },
  'vllm-cmd': { type: 'string' },
  'trainer-cmd': { type: 'string' },
  engine: { type: 'string' },
  model: { type: 'string' },
  'served-model-name': { type: 'string' },
  'max-lora-rank': { type: 'string' },
  'max-loras': { type: 'string' },
  'tool-call-parser': { type: 'string' },
  'reasoning-parser': { type: 'string' },
  gpus: { type: 'string' },
  'gpu-memory-utilization': { type: 'string' },
  'keep-weights': { type: 'string' },
  'model-files': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export async function run(argv: string[]): Promise<number> {
  const values = parseCommandArgs(argv, OPTIONS, USAGE);
  if (typeof values === 'number') return values;
  const fail = (message: string) => {
    process.stderr.write(`${message}\n${USAGE}`);
    return 2;
  };
  if (values.role !== 'inference' && values.role !== 'trainer')
    return fail('--role must be inference or trainer');
  if (!values['token-file']) return fail('--token-file is required');
  if (values.engine !== undefined && values.engine !== 'reference') return fail('--engine must be reference');
  if (Boolean(values['tls-cert']) !== Boolean(values['tls-key']))
    return fail('--tls-cert and --tls-key go together');
  const listen = values.listen ?? '127.0.0.1:4300';
  const m = /^(.*):(\d+)$/.exec(listen);
  if (!m) return fail(`--listen ${listen}: expected HOST:PORT`);
  const host = m[1].replace(/^\[(.*)\]$/, '$1');
  const port = Number(m[2]);
  try {
    await checkBind(host, Boolean(values['tls-cert']), values['allow-plain-ws'] === true, NODE_BIND);
  } catch (err) {
    return fail((err as Error).message);
  }
  if (values['allow-plain-ws'] && !values['tls-cert'] && !(await bindsLoopbackOnly(host)))
    process.stderr.write(
      `WARNING: --allow-plain-ws: serving ws:// on ${listen}; the token, every prompt and the weights cross the network unencrypted\n`,
    );
  const dataDir = resolve(values.data ?? join(homedir(), '.harness-rl-node'));
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });

  const log = (message: string, detail?: Record<string, unknown>) =>
    process.stderr.write(
      `${new Date().toISOString()} ${message}${detail ? ` ${JSON.stringify(detail)}` : ''}\n`,
    );
  let plan: NodePlan;
  try {
    plan = planFromArgs(values, values.role, listen);
  } catch (err) {
    return fail((err as Error).message);
  }
  const role = makeRole(values, plan, dataDir, log);
  if (typeof role === 'string') return fail(role);
  const { problems, claim } = preflightNode(plan, { builtFromModel: Boolean(values.model) });
  const what = values.role === 'inference' ? 'vLLM' : 'the trainer';
  if (problems.length > 0) {
    process.stderr.write(
      `harness-rl node: refusing to start${plan.command ? ` ${what}: ${plan.command}` : ''}\n${problems.map((p) => `  - ${p}\n`).join('')}`,
    );
    return 2;
  }
  const token = readToken(resolve(values['token-file']), values.role);
  if (!token) return fail(`${values['token-file']} is empty`);
  const tls =
    values['tls-cert'] && values['tls-key']
      ? { cert: readFileSync(values['tls-cert'], 'utf8'), key: readFileSync(values['tls-key'], 'utf8') }
      : undefined;
  if (plan.command) log(`starting ${what}`, { command: plan.command, env: plan.env });
  const unclaim = claim ? writeClaim(claimsDir(), claim) : () => {};
  let agent: NodeAgent;
  try {
    agent = await startNodeAgent({ host, port, token, tls, role, log });
  } catch (err) {
    unclaim();
    throw err;
  }
  await untilSignal(agent, values.role, unclaim);
  return 0;
}

type Values = { [k: string]: string | boolean | undefined };

/** What the node will start (vLLM or the trainer, with which flags and GPUs), from its command line. */
function planFromArgs(values: CommandValues<typeof OPTIONS>, role: NodeRole, listen: string): NodePlan {
  return planNode({
    role,
    listen,
    vllmUrl: values['vllm-url'] ?? 'http://127.0.0.1:8000',
    vllmCmd: values['vllm-cmd'],
    trainerCmd: values['trainer-cmd'],
    model: values.model,
    servedModelName: values['served-model-name'],
    maxLoraRank: values['max-lora-rank'],
    maxLoras: values['max-loras'],
    toolCallParser: values['tool-call-parser'],
    reasoningParser: values['reasoning-parser'],
    gpus: values.gpus === undefined ? undefined : parseGpus(values.gpus),
    gpuMemoryUtilization: values['gpu-memory-utilization'],
  });
}

/** The role the flags ask for, or the usage problem. */
function makeRole(
  values: Values,
  plan: NodePlan,
  dataDir: string,
  log: (message: string, detail?: Record<string, unknown>) => void,
): InferenceRole | TrainerRole | string {
  const engine = values.engine as 'reference' | undefined;
  const str = (k: string) => values[k] as string | undefined;
  const keepWeights = Number(str('keep-weights') ?? 2);
  if (!Number.isInteger(keepWeights) || keepWeights < 1) return '--keep-weights must be a whole number >= 1';
  if (values.role === 'trainer') {
    if (Boolean(engine) === Boolean(str('trainer-cmd')))
      return 'the trainer role takes one of --engine reference or --trainer-cmd';
    return new TrainerRole({ dataDir, engine, trainerCmd: str('trainer-cmd'), env: plan.env, log });
  }
  // --vllm-url alone fronts a running server; with --vllm-cmd or --model it says where the started one listens.
  const backends = [str('vllm-cmd') ?? str('model') ?? str('vllm-url'), engine].filter(Boolean).length;
  if (backends !== 1 || (str('vllm-cmd') && str('model')))
    return 'the inference role takes one of --model, --vllm-url, --vllm-cmd or --engine reference';
  if (!plan.command && str('vllm-url'))
    log('fronting a vLLM this node did not start: it cannot check its flags (see README, "GPU machines")', {
      vllm_url: str('vllm-url'),
    });
  return new InferenceRole({
    dataDir,
    vllmUrl: plan.command ? (str('vllm-url') ?? 'http://127.0.0.1:8000') : str('vllm-url'),
    vllmCmd: plan.command,
    env: plan.env,
    keepWeights,
    engine,
    modelFiles: str('model-files'),
    log,
  });
}

/** The node's token, from its file (created with mode 0600 when missing). */
function readToken(tokenFile: string, role: string): string {
  if (!existsSync(tokenFile)) {
    mkdirSync(dirname(tokenFile), { recursive: true });
    writeFileSync(tokenFile, `${newToken()}\n`, { mode: 0o600, flag: 'wx' });
    process.stderr.write(`created a node token in ${tokenFile} (put it in the run config's ${role}.token)\n`);
  }
  chmodSync(tokenFile, 0o600);
  return readFileSync(tokenFile, 'utf8').trim();
}

/** Prints the node's URL and runs until SIGINT or SIGTERM, then stops the agent and removes its GPU claim. */
function untilSignal(agent: NodeAgent, role: string, unclaim: () => void): Promise<void> {
  return new Promise<void>((done) => {
    let stopping = false;
    const stop = () => {
      if (stopping) return;
      stopping = true;
      void agent.close().finally(() => {
        unclaim();
        process.off('SIGINT', stop);
        process.off('SIGTERM', stop);
        // Anything that still holds the event loop must not keep a stopped agent alive.
        setTimeout(() => process.exit(0), 2000).unref();
        done();
      });
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    // Printed once the signals are handled: whoever reads the URL may stop the agent at once.
    process.stdout.write(`${JSON.stringify({ node: { url: agent.url, role, node_id: agent.nodeId } })}\n`);
  });
}
