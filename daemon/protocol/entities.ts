// The trace store's entities as they cross every boundary (REST, events, extension, webview).
// Token ids and logprobs are plain number arrays here; the store keeps them as binary blobs.
import { z } from 'zod';
import { Id } from './bounds';
import { AttemptFailure } from './failures';

export { Id };
export const Timestamp = z.string().describe('ISO 8601 time');
export const Json = z.unknown();

export const TokenIds = z.array(z.number().int().nonnegative());
export const Logprobs = z.array(z.number());

export const RunStatus = z.enum(['created', 'running', 'paused', 'stopped', 'finished', 'failed']);
/** What a run is for: training (it updates the model) or an evaluation's (it only scores a harness). */
export const RunKind = z.enum(['training', 'evaluation']);
export const RolloutStatus = z.enum(['queued', 'running', 'succeeded', 'failed', 'cancelled']);
/** A rollout in one of these is over: it takes no more calls. */
export const FINISHED_ROLLOUT: ReadonlySet<string> = new Set(['succeeded', 'failed', 'cancelled']);

/**
 * Whether the attempt that a rollout's calls belong to is over, by the rollout as an event shows it:
 * it finished, or it waits, queued, for its next attempt (whose calls start anew). What the daemon's
 * caches hold for the rollout may then go.
 */
export function attemptOver(rollout: { status: string; attempt_count: number }): boolean {
  return FINISHED_ROLLOUT.has(rollout.status) || (rollout.status === 'queued' && rollout.attempt_count > 0);
}
export const AttemptStatus = z.enum([
  'running',
  'succeeded',
  'failed',
  'timed_out',
  'unresponsive',
  'cancelled',
]);
/**
 * An answered call (200) that cannot be trained on, by what its answer lacks: no choice at all, no
 * prompt or response token ids, or logprobs that do not pair with its token ids one to one. The
 * call's `error` says it in words; the samples stage leaves such calls out and counts them.
 */
export const UntrainableStatus = z.enum(['no_choices', 'no_token_ids', 'logprobs_mismatch']);
export const LlmCallStatus = z.enum(['ok', ...UntrainableStatus.options, 'error', 'cancelled']);
/** Whether the harness got an answer (ok, or an answer that cannot be trained on). */
export function answered(status: string): boolean {
  return status === 'ok' || (UntrainableStatus.options as readonly string[]).includes(status);
}
/**
 * Why the samples stage left a call out of its rollout's trajectory: its status, or `text_only` for
 * an answered call without token ids (a provider pass-through, which never has them).
 */
export const CallExclusion = z.enum([
  ...UntrainableStatus.options,
  'error',
  'cancelled',
  'text_only',
  'imported',
  'constrained',
]);
/** The API the harness spoke to the proxy. */
export const WireApi = z.enum(['chat', 'completions', 'responses', 'messages', 'gemini']);
/**
 * Where the stored token ids came from: the backend, the token-in-token-out bridge, none (text only), or
 * `import`: a past session's text (daemon/import/) tokenized with a chosen model's template, which that
 * model never sampled: SFT-style or evaluation data, left out of RL samples unless asked for.
 */
export const TokenSource = z.enum(['backend', 'bridge', 'text', 'import']);
export const RolloutKind = z.enum(['run', 'standalone', 'recording']);

export const RolloutStats = z.object({
  samples: z.number().int().nonnegative(),
  prefix_breaks: z.number().int().nonnegative(),
  mask_tokens: z.number().int().nonnegative(),
  truncations: z.number().int().nonnegative(),
});

/** How a request's history differs from the previous call's messages and the response it got. */
export const HistoryChangeKind = z.enum([
  'message_removed',
  'role_changed',
  'whitespace',
  'content_edited',
  'tool_calls_edited',
  'tool_call_id_changed',
  'tools_changed',
  'template_options_changed',
]);
export const HistoryChange = z.object({
  index: z
    .number()
    .int()
    .nonnegative()
    .nullable()
    .describe('the message of the new request that changed (null: the tools or the template options)'),
  role: z.string().nullable().describe('its role (for message_removed: the role of the missing message)'),
  change: HistoryChangeKind,
  detail: z.string().describe('what changed, in words'),
});

/** The token-in-token-out bridge's decision for a call (LlmCall.bridge). */
export const BridgeRecord = z.object({
  reused_tokens: z.number().int().nonnegative().optional().describe('tokens taken from the previous call'),
  prompt_tokens: z.number().int().nonnegative().optional(),
  fallback: z.string().optional().describe('why the bridge rendered the request as text instead'),
  change: HistoryChange.optional().describe('the history change that made it fall back'),
  tokenizer: z
    .enum(['daemon', 'backend'])
    .optional()
    .describe(
      "who rendered the template and tokenized the new messages: the daemon, from the served model's own files (config model_files), or the backend's /tokenize and /detokenize",
    ),
  tokenizer_check: z
    .string()
    .optional()
    .describe(
      "what checking the daemon's rendering against the backend's /tokenize found (on first use and a sample of calls), or why the daemon's was not used",
    ),
});

/**
 * The sampling parameters of one llm call as the backend got them (LlmCall.sampling). null: not sent,
 * so the backend's default applied (vLLM: the model's generation_config.json unless started with
 * `--generation-config vllm`, config/model.py get_diff_sampling_param).
 */
export const CallSampling = z.object({
  temperature: z.number().nullable(),
  top_p: z.number().nullable(),
  top_k: z.number().int().nullable().describe('0 or -1: no top-k truncation'),
  min_p: z.number().nullable(),
  repetition_penalty: z.number().nullable(),
  presence_penalty: z.number().nullable(),
  frequency_penalty: z.number().nullable(),
  seed: z.number().int().nullable(),
  max_tokens: z.number().int().nullable(),
  source: z
    .enum(['run', 'request'])
    .describe(
      "run: the proxy set them from the run's algorithm.sampling (a training rollout); request: as the harness sent them",
    ),
  overridden: z
    .record(z.string(), z.unknown())
    .nullable()
    .describe("the harness's own values the run's sampling replaced (null: none)"),
  constrained: z
    .array(z.string())
    .optional()
    .describe(
      "a training call's request fields that constrained decoding (logit_bias, min_tokens, response_format, tool_choice …), so its logprobs are not the policy's: its response tokens stay out of the loss (absent: none)",
    ),
});

export const PrefixBreak = z.object({
  call_index: z.number().int().nonnegative().describe('index of the call whose prompt broke the prefix'),
  position: z.number().int().nonnegative().describe('first differing token position'),
  expected: TokenIds.describe('tokens of the running sequence from the break on (a short window)'),
  actual: TokenIds.describe('tokens of the new prompt from the break on (a short window)'),
  expected_text: z.string().nullable(),
  actual_text: z.string().nullable(),
  class: z.enum(['template', 'retokenized', 'other']),
  bridge_fallback: z
    .string()
    .nullable()
    .optional()
    .describe("why the bridge did not reuse the previous call's tokens for this call (null: it was off)"),
  change: HistoryChange.nullable()
    .optional()
    .describe('which message of the call changed, and how, compared with the previous call and its response'),
});

export const Run = z.object({
  id: Id,
  name: z.string(),
  status: RunStatus,
  kind: RunKind.describe(
    "training, or an evaluation's run (harness-rl eval, an evolution's candidates): never trains",
  ),
  config: Json.describe('the run config as validated (RunConfig)'),
  step: z.number().int().nonnegative(),
  model_version: z.number().int().nonnegative(),
  error: z.string().nullable(),
  created_at: Timestamp,
  updated_at: Timestamp,
  base_dir: z
    .string()
    .nullable()
    .optional()
    .describe("the run config's folder: relative paths and the harness command resolve against it"),
});

/** Which part of a run's tasks: train (trained on), validation (checked during training), test (held out). */
export const TaskSplit = z.enum(['train', 'validation', 'test']);

export const Task = z.object({
  id: Id,
  run_id: Id,
  index: z.number().int().nonnegative(),
  split: TaskSplit,
  input: Json,
});

/**
 * `complete`: its step trained on it. `dropped`: it finished but its step left it out (schedule.dynamic_sampling:
 * its rewards were all equal, or the step held groups_per_step informative groups already). `failed`: no rollout
 * of it succeeded, or it lost one and algorithm.incomplete_groups is drop. `cancelled`: its step never finished
 * (the run stopped or failed, or a restarted daemon began the step again).
 */
export const GroupStatus = z.enum(['pending', 'running', 'complete', 'dropped', 'failed', 'cancelled']);
export const Group = z.object({
  id: Id,
  run_id: Id,
  task_id: Id.nullable(),
  step: z.number().int().nonnegative().describe('model version the group was sampled with'),
  size: z.number().int().positive(),
  status: GroupStatus,
  created_at: Timestamp,
  task_input: Json.optional().describe(
    "the task's input (what the group's rollouts were given), null without a task",
  ),
});

export const Rollout = z.object({
  id: Id,
  kind: RolloutKind,
  run_id: Id.nullable(),
  group_id: Id.nullable(),
  task_id: Id.nullable(),
  recording_id: Id.nullable(),
  input: Json,
  status: RolloutStatus,
  attempt_count: z.number().int().nonnegative(),
  max_attempts: z.number().int().positive(),
  reward: z.number().nullable().describe('the latest reward value, null until one is given'),
  error: z.string().nullable(),
  failure: AttemptFailure.nullable()
    .optional()
    .describe('why its latest failed attempt failed (null: none failed, or it succeeded since)'),
  infrastructure_retries: z
    .number()
    .int()
    .nonnegative()
    .optional()
    .describe('attempts failed for the infrastructure it may retry (harness.infrastructure_retries)'),
  stats: RolloutStats.nullable(),
  tito: z
    .boolean()
    .nullable()
    .optional()
    .describe(
      'token-in-token-out bridge for a standalone rollout (null: on where the backend returns token ids; runs use algorithm.tito)',
    ),
  created_at: Timestamp,
  updated_at: Timestamp,
  started_at: Timestamp.nullable(),
  finished_at: Timestamp.nullable(),
});

export const Attempt = z.object({
  id: Id,
  rollout_id: Id,
  index: z.number().int().positive(),
  status: AttemptStatus,
  worker: z.string().nullable(),
  error: z.string().nullable(),
  failure: AttemptFailure.nullable()
    .optional()
    .describe('why it failed: infrastructure (retried, never a reward) or harness (null: it did not fail)'),
  started_at: Timestamp,
  heartbeat_at: Timestamp,
  finished_at: Timestamp.nullable(),
});

export const Usage = z.object({
  prompt_tokens: z.number().int().nonnegative(),
  completion_tokens: z.number().int().nonnegative(),
});

export const LlmCall = z.object({
  id: Id,
  rollout_id: Id.nullable(),
  attempt_id: Id.nullable(),
  recording_id: Id.nullable(),
  seq: z.number().int().nonnegative().describe('order of the call within its rollout or recording'),
  wire_api: WireApi,
  stream: z.boolean(),
  request: Json.describe('the request as the harness sent it (secrets redacted)'),
  backend_request: Json.nullable().describe('the request as sent to the backend'),
  response: Json.nullable().describe('the response as returned to the harness (streams assembled)'),
  prompt_ids: TokenIds.nullable(),
  response_ids: TokenIds.nullable(),
  response_logprobs: Logprobs.nullable(),
  token_source: TokenSource,
  bridge: Json.nullable().describe(
    'token-in-token-out bridge decision (BridgeRecord): reused prefix length or fallback reason',
  ),
  sampling: CallSampling.nullable()
    .default(null)
    .describe(
      'the sampling parameters the backend got (null: not known, e.g. calls recorded before they were)',
    ),
  finish_reason: z.string().nullable(),
  usage: Usage.nullable(),
  model: z.string().nullable(),
  model_version: z.number().int().nonnegative().nullable(),
  backend: z.string().nullable(),
  status: LlmCallStatus,
  error: z.string().nullable(),
  http_status: z.number().int().nullable(),
  tags: z.array(z.string()).describe('e.g. "side" for title/count_tokens/small-model calls of a recording'),
  queue_ms: z.number().nonnegative().nullable(),
  ttft_ms: z.number().nonnegative().nullable(),
  total_ms: z.number().nonnegative().nullable(),
  created_at: Timestamp,
});

/** What the proxy hands to the store; the store assigns id, seq and created_at (an import gives its own time). */
export const NewLlmCall = LlmCall.omit({ id: true, seq: true, created_at: true }).extend({
  sampling: CallSampling.nullish(),
  created_at: Timestamp.optional().describe(
    "when the call was made (imported sessions); absent: the store's now",
  ),
});

export const Reward = z.object({
  id: Id,
  rollout_id: Id,
  value: z.number().finite(),
  source: z.string().describe('who gave it: api, verifier, human, harness'),
  detail: Json.nullable(),
  created_at: Timestamp,
});

/**
 * A tool execution the harness reported over OTLP (its own telemetry: Claude Code's and Codex's
 * tool_result events, GenAI `execute_tool` spans), kept on its rollout beside the llm calls.
 */
export const ToolRun = z.object({
  id: Id,
  rollout_id: Id,
  tool: z.string(),
  call_id: z.string().nullable().describe("the model's tool call id (tool_use_id, call_id) when reported"),
  started_at: Timestamp,
  duration_ms: z.number().nonnegative().nullable(),
  success: z.boolean().nullable(),
  result_bytes: z.number().int().nonnegative().nullable().describe('size of the tool result, as reported'),
  error: z.string().nullable(),
  source: z.string().describe('the event or span it came from, e.g. claude_code.tool_result'),
  agent: z.string().nullable().describe("the reporting program's service.name"),
  attributes: z.record(z.string(), Json).describe('the remaining attributes (redacted, long values cut)'),
  created_at: Timestamp,
});
export const NewToolRun = ToolRun.omit({ id: true, rollout_id: true, created_at: true });

export const ModelVersion = z.object({
  run_id: Id.nullable(),
  version: z.number().int().nonnegative(),
  path: z.string().nullable().describe('checkpoint or adapter location'),
  metrics: Json.nullable(),
  created_at: Timestamp,
});

export const NodeKind = z.enum(['inference', 'trainer']);
export const NodeInfo = z.object({
  id: Id,
  name: z.string(),
  kind: NodeKind,
  url: z.string(),
  status: z.enum(['connecting', 'ready', 'busy', 'unhealthy', 'gone']),
  model_version: z.number().int().nonnegative().nullable(),
  detail: Json.nullable(),
  last_seen_at: Timestamp,
});

export const RecordingStatus = z.enum(['active', 'stopped']);
export const Recording = z.object({
  id: Id,
  name: z.string(),
  status: RecordingStatus,
  upstream: Json.describe('where calls go: {kind: "openai"|"anthropic"|"vllm", base_url} — never the key'),
  rollout_id: Id.describe('the rollout that collects the session calls'),
  scoped: z
    .boolean()
    .optional()
    .describe(
      'true: records only the calls that present its key; it neither stops the active recording nor becomes it',
    ),
  created_at: Timestamp,
  stopped_at: Timestamp.nullable(),
});

/** One row of a run's per-step metrics (mean reward, loss, kl, entropy, clip fraction, tokens/s …). */
export const RunMetrics = z.object({
  run_id: Id,
  step: z.number().int().nonnegative(),
  metrics: z.record(z.string(), z.number().nullable()),
  created_at: Timestamp,
});

export const Page = <T extends z.ZodTypeAny>(item: T) =>
  z.object({ items: z.array(item), next_cursor: z.string().nullable() });

/** Who runs a run's rollouts right now (GET /api/runs/:id/workers and the `workers` event). */
export const RunWorkers = z.object({
  run_id: Id,
  mode: z
    .enum(['daemon', 'external', 'ray'])
    .describe(
      "daemon: the daemon runs harness.command itself; external: others' workers claim rollouts; ray: worker actors on a Ray cluster the run started",
    ),
  ray: z
    .object({
      address: z.string(),
      job_id: z.string().nullable().describe('the Ray job (submission id) that runs the workers'),
      status: z.string().nullable().describe("the job's Ray status (PENDING, RUNNING, STOPPED…)"),
    })
    .optional()
    .describe('mode ray: the Ray job of the run'),
  workers: z
    .array(
      z.object({
        name: z.string(),
        daemon: z.boolean().describe('one of the daemon’s own workers'),
        last_seen: Timestamp,
      }),
    )
    .describe('the workers that claimed or sent a heartbeat lately'),
  last_seen_at: Timestamp.nullable().describe('when any worker was last seen (null: never)'),
  command: z.string().describe('the shell command that attaches a worker to this run'),
  error: z.string().nullable().describe("why the daemon's own workers are not running (they restart)"),
});
export type RunWorkers = z.infer<typeof RunWorkers>;

/** The kept output (stdout and stderr, interleaved, its tail) of an attempt a daemon worker ran. */
export const AttemptOutput = z.object({
  attempt_id: Id,
  output: z.string(),
  truncated: z.boolean().describe('earlier output was dropped (only the tail is kept)'),
});
export type AttemptOutput = z.infer<typeof AttemptOutput>;

export type Run = z.infer<typeof Run>;
export type RunStatus = z.infer<typeof RunStatus>;
export type RunKind = z.infer<typeof RunKind>;
export type Task = z.infer<typeof Task>;
export type Group = z.infer<typeof Group>;
export type GroupStatus = z.infer<typeof GroupStatus>;
export type Rollout = z.infer<typeof Rollout>;
export type RolloutStatus = z.infer<typeof RolloutStatus>;
export type RolloutKind = z.infer<typeof RolloutKind>;
export type RolloutStats = z.infer<typeof RolloutStats>;
export type PrefixBreak = z.infer<typeof PrefixBreak>;
export type HistoryChange = z.infer<typeof HistoryChange>;
export type BridgeRecord = z.infer<typeof BridgeRecord>;
export type CallSampling = z.infer<typeof CallSampling>;
export type Attempt = z.infer<typeof Attempt>;
export type AttemptStatus = z.infer<typeof AttemptStatus>;
export type LlmCall = z.infer<typeof LlmCall>;
export type LlmCallStatus = z.infer<typeof LlmCallStatus>;
export type UntrainableStatus = z.infer<typeof UntrainableStatus>;
export type CallExclusion = z.infer<typeof CallExclusion>;
export type NewLlmCall = z.infer<typeof NewLlmCall>;
export type WireApi = z.infer<typeof WireApi>;
export type Reward = z.infer<typeof Reward>;
export type ToolRun = z.infer<typeof ToolRun>;
export type NewToolRun = z.infer<typeof NewToolRun>;
export type ModelVersion = z.infer<typeof ModelVersion>;
export type NodeInfo = z.infer<typeof NodeInfo>;
export type Recording = z.infer<typeof Recording>;
export type RunMetrics = z.infer<typeof RunMetrics>;
export type Page<T> = { items: T[]; next_cursor: string | null };
