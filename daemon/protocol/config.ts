// The config file (harness.yaml or JSON): one schema for the daemon section and for runs.
// JSON Schema for editors is generated from these (`npm run schema` → harness-rl.schema.json).
import { z } from 'zod';
import { AlgorithmConfig } from './algorithm';
import { durationMs, durationS } from './bounds';
import { EvolveConfig } from './evolution';
import { HarnessSandbox, HarnessWorkers } from './placement';

const Endpoint = z.union([
  z.literal('reference').describe('the built-in reference engine'),
  z.url().describe('a vLLM-compatible base URL (http…/v1) or a node agent (ws(s)://host:port)'),
]);

const TlsCa = z
  .string()
  .optional()
  .describe(
    "absolute path of a PEM file with the CA that signed the node agents' certificates (wss:// with a self-signed certificate)",
  );

export const ModelConfig = z
  .object({
    name: z.string().min(1).default('reference').describe('the served model name harnesses ask for'),
    path: z
      .string()
      .optional()
      .describe(
        'the base model for the trainer: a folder on the trainer machine or a hub id (Qwen/Qwen3-1.7B; with HF_HUB_OFFLINE=1 it must be in the hub cache there)',
      ),
    lora: z
      .object({ rank: z.number().int().positive(), alpha: z.number().positive() })
      .strict()
      .optional()
      .describe('train a LoRA adapter instead of full weights'),
    from_run: z
      .object({
        run: z.string().min(1).describe('the run whose weights to start from'),
        version: z
          .number()
          .int()
          .nonnegative()
          .optional()
          .describe("its model version (default: the run's latest; the daemon writes the one it took)"),
      })
      .strict()
      .optional()
      .describe(
        "start from another run's weights at a model version (its checkpoint on the built-in engine: trainer reference): evaluations and evolutions at a run's checkpoint, a run that goes on from one",
      ),
  })
  .strict();

export const InferenceConfig = z
  .object({
    endpoints: z.array(Endpoint).min(1).default(['reference']),
    token: z.string().optional().describe('token for node agents'),
    tls_ca: TlsCa,
    timeout_ms: durationMs().default(120_000),
    while_loading: z
      .enum(['wait', 'reject'])
      .default('wait')
      .describe(
        'calls that find every backend loading new weights: wait for them, or get 429 with Retry-After',
      ),
    keep_weights: z
      .number()
      .int()
      .min(1)
      .default(2)
      .describe(
        "weight versions kept on the daemon's machine (copies fetched from the trainer node to send to inference nodes; full weights are GiBs each)",
      ),
    unsupported_tools: z
      .enum(['omit', 'reject'])
      .default('omit')
      .describe(
        "tools the backend cannot run (hosted tools such as Responses' web_search): leave them out of the backend request and tag the call tool-left-out:…, or answer 400",
      ),
  })
  .strict();

export const TrainerConfig = z
  .object({
    endpoint: Endpoint.default('reference'),
    token: z.string().optional().describe('token of the trainer node agent'),
    tls_ca: TlsCa,
  })
  .strict();

export const TasksConfig = z
  .object({
    file: z.string().describe('JSONL, one task input per line (relative to the config file)'),
    validation_fraction: z.number().min(0).max(0.5).default(0),
    test_fraction: z
      .number()
      .min(0)
      .max(0.5)
      .default(0)
      .describe('held-out tasks no run trains on: evaluations (--split test) and evolution score them once'),
    shuffle_seed: z.number().int().default(0),
    limit: z.number().int().positive().optional(),
  })
  .strict();

export const HarnessConfig = z
  .object({
    command: z
      .array(z.string())
      .min(1)
      .optional()
      .describe(
        "argv run per rollout (in the run config's folder) by the daemon's own workers, or by `harness-rl worker`; gets HARNESS_RL_* and OPENAI_BASE_URL env",
      ),
    dir: z
      .string()
      .optional()
      .describe(
        "the folder the command runs in (relative to the config's folder; default that folder); the verifier still runs in the config's folder",
      ),
    candidate: z
      .string()
      .regex(/^[A-Za-z0-9_-]+\/[0-9a-f]{24}$/, 'an evolved candidate as "<evolution id>/<candidate hash>"')
      .optional()
      .describe(
        'run an evolved harness: "<evolution id>/<candidate hash>" (harness-rl evolve); the daemon writes the candidate\'s files into a folder of its own, which replaces harness.dir (the stored config keeps both)',
      ),
    workers: HarnessWorkers.optional(),
    sandbox: HarnessSandbox.default('none').describe("where each attempt's harness runs"),
    concurrency: z.number().int().positive().default(8),
    timeout_s: durationS().default(600),
    max_attempts: z
      .number()
      .int()
      .positive()
      .default(2)
      .describe('attempts per rollout whose failures are the harness’s own (exit code, no reward, verifier)'),
    infrastructure_retries: z
      .number()
      .int()
      .nonnegative()
      .default(3)
      .describe(
        'further attempts per rollout after failures that are not the harness’s (a sandbox that did not start, a lost worker or node, a backend error, the deadline); they never count as a reward',
      ),
    mode: z
      .enum(['spawn', 'persistent'])
      .default('spawn')
      .describe(
        'spawn: `command` starts once per rollout; persistent: it starts once per concurrency slot and takes rollouts one after another, one JSON line each on stdin, answering one JSON line {"rollout_id", "reward"} (or {"rollout_id", "error"}) on stdout; a process that dies is restarted and its rollout failed as infrastructure',
      ),
    reward: z
      .enum(['harness', 'verifier'])
      .default('harness')
      .describe('harness: the harness posts the reward; verifier: the verifier command computes it'),
    verifier: z
      .array(z.string())
      .optional()
      .describe(
        'argv run by the worker after the harness succeeded (reward: verifier), in the same folder, within timeout_s; gets {task, output, stdout, rollout_id, …} as JSON on stdin and in $HARNESS_RL_VERIFY_INPUT; its last stdout line {"reward": x} or x is the reward',
      ),
  })
  .strict()
  .superRefine((harness, ctx) => {
    if (typeof harness.workers === 'object' && !harness.command?.length)
      ctx.addIssue({
        code: 'custom',
        path: ['command'],
        message: 'harness.workers.ray runs harness.command on the Ray nodes: give it as an argv list',
      });
    // Added by the cluster owner (additive): a verifier setting that would silently do nothing is an error.
    if (harness.reward === 'verifier' && !harness.verifier?.length) {
      ctx.addIssue({
        code: 'custom',
        path: ['verifier'],
        message: 'reward: verifier needs harness.verifier, the verifier command as an argv list',
      });
    } else if (harness.reward !== 'verifier' && harness.verifier !== undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['reward'],
        message: 'harness.verifier is set but reward is "harness": set reward: verifier to run it',
      });
    }
  });

/** Who runs a run's rollouts: the daemon's own workers (a command is given and workers is not external), Ray actors the run started, or others. */
export function workersMode(
  harness: Pick<HarnessConfig, 'command' | 'workers'>,
): 'daemon' | 'external' | 'ray' {
  if (typeof harness.workers === 'object') return 'ray';
  return harness.command?.length && harness.workers !== 'external' ? 'daemon' : 'external';
}

export const ScheduleConfig = z
  .object({
    mode: z.enum(['sync', 'async']).default('sync'),
    max_staleness: z.number().int().nonnegative().default(0),
    groups_per_step: z.number().int().positive().default(4).describe('batch size in groups'),
    steps: z.number().int().positive().default(10),
    validate_every: z.number().int().nonnegative().default(0),
    checkpoint_every: z.number().int().nonnegative().default(0),
    seed: z.number().int().default(0),
    dynamic_sampling: z
      .object({
        max_rounds: z
          .number()
          .int()
          .positive()
          .max(100)
          .default(3)
          .describe(
            'extra rounds of groups_per_step groups a step may sample before it trains on what it has',
          ),
      })
      .strict()
      .optional()
      .describe(
        "DAPO's dynamic sampling: a step whose finished groups hold fewer than groups_per_step informative ones (rewards not all equal) samples another round of groups (the next tasks in the seeded order), up to max_rounds more, then trains on the first groups_per_step informative groups; zero-variance groups are dropped (it implies algorithm.drop_zero_variance_groups)",
      ),
  })
  .strict();

/**
 * Thresholds on each step's train/inference agreement (StepValidation) and clip fraction: a step past one
 * pauses the run (`run resume` lifts it). Each `<figure>_max` / `<figure>_min` names a per-step metric.
 */
export const ValidationConfig = z
  .object({
    logprob_diff_mean_max: z
      .number()
      .nonnegative()
      .optional()
      .describe('mean |trainer − rollout logprob| above this pauses'),
    logprob_diff_max_max: z
      .number()
      .nonnegative()
      .optional()
      .describe('max |trainer − rollout logprob| above this pauses'),
    prob_correlation_min: z
      .number()
      .min(-1)
      .max(1)
      .optional()
      .describe('correlation of trainer and rollout token probabilities below this pauses'),
    tis_weight_mean_min: z.number().nonnegative().optional().describe('mean TIS weight below this pauses'),
    tis_weight_mean_max: z.number().nonnegative().optional().describe('mean TIS weight above this pauses'),
    tis_capped_fraction_max: z
      .number()
      .min(0)
      .max(1)
      .optional()
      .describe('share of tokens whose TIS weight hit tis_cap above this pauses'),
    clip_fraction_max: z.number().min(0).max(1).optional().describe('PPO clip fraction above this pauses'),
    after_step: z
      .number()
      .int()
      .nonnegative()
      .default(0)
      .describe('steps before this one are not checked (warm-up)'),
    patience: z
      .number()
      .int()
      .positive()
      .default(1)
      .describe(
        'consecutive steps past a threshold before the run pauses (counted since the run last started)',
      ),
    min_tokens: z
      .number()
      .int()
      .nonnegative()
      .default(1)
      .describe('a step with fewer tokens with a rollout logprob is not checked on the agreement figures'),
  })
  .strict();

export const RunConfig = z
  .object({
    name: z.string().min(1).max(200),
    model: ModelConfig.default({ name: 'reference' }),
    inference: InferenceConfig.default({
      endpoints: ['reference'],
      timeout_ms: 120_000,
      while_loading: 'wait',
      keep_weights: 2,
      unsupported_tools: 'omit',
    }),
    trainer: TrainerConfig.default({ endpoint: 'reference' }),
    tasks: TasksConfig,
    harness: HarnessConfig.default({
      concurrency: 8,
      timeout_s: 600,
      max_attempts: 2,
      infrastructure_retries: 3,
      mode: 'spawn',
      reward: 'harness',
      sandbox: 'none',
    }),
    algorithm: AlgorithmConfig.default(AlgorithmConfig.parse({})),
    schedule: ScheduleConfig.default(ScheduleConfig.parse({})),
    validation: ValidationConfig.optional().describe(
      "thresholds on each step's train/inference agreement; a step past one pauses the run",
    ),
    evolve: EvolveConfig.optional().describe(
      'harness evolution (`harness-rl evolve CONFIG`); runs ignore it',
    ),
  })
  .strict()
  .superRefine((run, ctx) => {
    // One rollout per group has one reward: every group would be uniform, every step would refill in vain.
    if (run.schedule.dynamic_sampling && run.algorithm.n < 2)
      ctx.addIssue({
        code: 'custom',
        path: ['schedule', 'dynamic_sampling'],
        message: `schedule.dynamic_sampling needs groups of at least 2 rollouts (algorithm.n is ${run.algorithm.n}): a group of one rollout is never informative`,
      });
  });

/** The daemon's OTLP/HTTP span export (an unset field falls back to the standard OTEL_EXPORTER_OTLP_* variables). */
export const OtlpConfig = z
  .object({
    endpoint: z
      .url()
      .optional()
      .describe(
        'the traces URL, e.g. http://127.0.0.1:4318/v1/traces (default: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or OTEL_EXPORTER_OTLP_ENDPOINT + /v1/traces)',
      ),
    headers: z
      .record(z.string(), z.string())
      .optional()
      .describe(
        'HTTP headers sent with each export, e.g. an authorization header (default: OTEL_EXPORTER_OTLP_HEADERS)',
      ),
    protocol: z
      .enum(['http/protobuf', 'http/json'])
      .optional()
      .describe(
        'default: OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf',
      ),
    content: z
      .boolean()
      .default(false)
      .describe(
        'export message content (gen_ai.input.messages, gen_ai.output.messages), redacted like the store',
      ),
    max_queue: z
      .number()
      .int()
      .positive()
      .max(1_000_000)
      .default(4096)
      .describe('spans held for export at most; more are dropped and counted'),
    delay_ms: durationMs().default(2000).describe('how often a batch of spans leaves'),
  })
  .strict();

export const DaemonConfig = z
  .object({
    port: z.number().int().min(0).max(65535).default(4100),
    host: z.string().default('127.0.0.1'),
    data: z.string().optional().describe('data folder (default ~/.harness-rl)'),
    store: z.string().default('sqlite').describe('"sqlite" or a postgres://… URL'),
    backends: z.array(z.url()).default([]).describe('vLLM-compatible inference backends'),
    model_files: z
      .record(z.string().min(1), z.string().min(1))
      .default({})
      .describe(
        'served model name → a local folder with its tokenizer.json and tokenizer_config.json (chat_template.jinja): the token bridge then renders and tokenizes in the daemon, asking the backend nothing',
      ),
    tokenizer_check_every: z
      .number()
      .int()
      .min(0)
      .default(64)
      .describe(
        "the daemon's own rendering is checked against the backend's /tokenize on its first bridged call and then every n-th (0: only the first); on a disagreement that backend's calls of that model go back to its /tokenize",
      ),
    body_limit_bytes: z
      .number()
      .int()
      .positive()
      .default(32 * 1024 * 1024),
    backend_timeout_ms: durationMs()
      .default(300_000)
      .describe('a backend that sends no byte for this long fails the call (an idle limit)'),
    call_deadline_ms: durationMs()
      .default(1_800_000)
      .describe(
        'the longest a streamed call may take in all, however often the backend sends keep-alive comments',
      ),
    side_models: z
      .string()
      .optional()
      .describe(
        'regular expression (case-insensitive) of model names whose recorded calls are tagged "side" (default: haiku|mini|nano|lite as a name part)',
      ),
    metrics: z
      .boolean()
      .default(true)
      .describe('serve Prometheus metrics at GET /metrics (daemon token required)'),
    otlp: OtlpConfig.optional().describe(
      'OpenTelemetry span export (rollouts as traces, LLM calls as GenAI spans); also on when OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set',
    ),
  })
  .strict();

/** The whole file: a `daemon` section and/or a `run` section. */
export const ConfigFile = z.object({ daemon: DaemonConfig.optional(), run: RunConfig.optional() }).strict();

export type RunConfig = z.infer<typeof RunConfig>;
export type RunConfigInput = z.input<typeof RunConfig>;
export type ScheduleConfig = z.infer<typeof ScheduleConfig>;
export type ValidationConfig = z.infer<typeof ValidationConfig>;
export type HarnessConfig = z.infer<typeof HarnessConfig>;
export type DaemonConfig = z.infer<typeof DaemonConfig>;
export type DaemonConfigInput = z.input<typeof DaemonConfig>;
export type ConfigFile = z.infer<typeof ConfigFile>;

/** A stored run config as the API shows it: node tokens replaced (the daemon keeps them to reconnect). */
export function withoutSecrets(config: unknown): unknown {
  if (config === null || typeof config !== 'object') return config;
  const c = config as Record<string, unknown>;
  const hide = (part: unknown) =>
    part !== null && typeof part === 'object' && typeof (part as { token?: unknown }).token === 'string'
      ? { ...(part as object), token: '(hidden)' }
      : part;
  return { ...c, inference: hide(c.inference), trainer: hide(c.trainer) };
}
export type OtlpConfig = z.infer<typeof OtlpConfig>;
