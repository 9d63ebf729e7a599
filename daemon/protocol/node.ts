// The node protocol: what the daemon and a node agent (`harness-rl node`) say over one WebSocket,
// and what a node agent and a trainer process (`--trainer-cmd`, the Python trainer) say over stdio.
// Every message is one binary frame (see frames.ts): a JSON header validated here, then raw bytes
// (token arrays, HTTP bodies, file chunks). `npm run schema -- --node` writes the JSON Schema of
// these headers for the Python side (trainer/harness_rl_trainer/protocol.schema.json).
import { z } from 'zod';
import { durationMs } from './bounds';
import { PolicyLossConfig, TrainResult } from './training';

/** Bumped on any change a peer of the previous version would misread. */
export const NODE_PROTOCOL_VERSION = 1;

export const NodeRole = z.enum(['inference', 'trainer']);

const Id = z.string().min(1).max(200).describe('request id, unique per connection; replies carry it');

/** A file of a weights folder: enough to tell whether a copy is already there. */
export const WeightsFile = z.object({
  name: z
    .string()
    .min(1)
    .regex(/^[\w.-]+$/, 'a plain file name')
    .describe('file name inside the weights folder'),
  size: z.number().int().nonnegative(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
});

/**
 * An inference node answers tunnelled GETs under this path itself (never its backend): with `?model=`
 * the manifest of the served model's tokenizer files (ModelFilesManifest), under `/<name>?model=` one
 * file's bytes. The daemon tokenizes bridged calls from them (daemon/tokenize/remote.ts).
 */
export const MODEL_FILES_PATH = '/harness-rl/model-files';
/** The files of a model folder a node serves: what the daemon's chat tokenizer reads. */
export const MODEL_FILE_NAMES = [
  'tokenizer.json',
  'tokenizer_config.json',
  'chat_template.jinja',
  'generation_config.json',
] as const;

/** The weights of one model version, as a trainer wrote them. */
export const WeightsRef = z.object({
  version: z.number().int().nonnegative(),
  format: z
    .enum(['lora', 'full', 'reference'])
    .describe(
      'lora: adapter_config.json + adapter_model.safetensors (vLLM /v1/load_lora_adapter); full: a safetensors model folder; reference: the built-in engine checkpoint',
    ),
  path: z.string().describe('the folder on the trainer machine'),
  files: z.array(WeightsFile),
});

/** What the trainer returns per step (TrainResult plus the weights it wrote and free-form metrics). */
export const TrainerStepResult = TrainResult.extend({
  weights: WeightsRef.nullable(),
  metrics: z
    .record(z.string(), z.number().nullable())
    .default({})
    .describe('grad_norm, peak_memory_mb, logprob_abs_diff_mean, logprob_abs_diff_max, logprob_corr, …'),
});

/** The tokenizer files a node has for a served model (those of MODEL_FILE_NAMES its folder holds). */
export const ModelFilesManifest = z.object({
  model: z.string(),
  files: z.array(WeightsFile),
});

/** How the model of a run is set up on a trainer (sent once per run and connection, before batches). */
export const OpenRun = z.object({
  run_id: z.string().min(1),
  model: z.object({
    name: z.string(),
    path: z.string().optional(),
    lora: z.object({ rank: z.number().int().positive(), alpha: z.number().positive() }).optional(),
  }),
  seed: z.number().int(),
});

/** The last step a trainer applied (so a step sent again is answered, not applied twice). */
export const LastStep = z.object({ key: z.string(), result: TrainerStepResult });

const GpuHealth = z.object({
  index: z.number().int(),
  name: z.string(),
  memory_used_mb: z.number(),
  memory_total_mb: z.number(),
  utilization: z.number().describe('percent'),
});

/** What a run checks, when it starts, of the vLLM an inference node started. */
export const VllmFlags = z.object({
  enable_lora: z.boolean(),
  max_lora_rank: z.number().int().positive().describe('--max-lora-rank (vLLM default 16)'),
  logprobs_mode: z
    .string()
    .describe('--logprobs-mode (vLLM default raw_logprobs: before temperature; vllm/config/model.py:305)'),
});
export type VllmFlags = z.infer<typeof VllmFlags>;

export const NodeHealth = z.object({
  role: NodeRole,
  backend: z.string().describe('what the node fronts: vllm-url …, vllm-cmd, reference, trainer-cmd'),
  ready: z.boolean().describe('the backend answers (inference) or the trainer process is up'),
  queue_depth: z.number().int().nonnegative().describe('requests waiting (e.g. while weights load)'),
  in_flight: z.number().int().nonnegative(),
  loading: z.boolean().describe('weights are being loaded; new calls wait'),
  versions: z.record(z.string(), z.number().int()).describe('model version served (or trained) per run id'),
  gpus: z.array(GpuHealth),
  uptime_s: z.number(),
  restarts: z.number().int().nonnegative().describe('backend or trainer process restarts'),
  last_error: z.string().nullable(),
  vllm: VllmFlags.nullable()
    .optional()
    .describe(
      'the flags of the vLLM this node started; null or absent: unknown (a vLLM it fronts by URL, the reference engine, a trainer)',
    ),
});

/**
 * Samples as columns in the payload, little-endian, in this order: old_logprobs (f64; NaN where
 * unknown), loss_weights (f64), input_ids (i32), advantages (f32), loss_mask (u8). Each column holds
 * every sample's tokens back to back (sample i has `lengths[i]`); the payload starts 8-byte aligned.
 */
export const PackedSamples = z.object({
  rollout_ids: z.array(z.string()),
  group_ids: z.array(z.string()),
  indexes: z.array(z.number().int().nonnegative()),
  lengths: z.array(z.number().int().positive()),
  temperatures: z
    .array(z.number().positive())
    .optional()
    .describe("each sample's sampling temperature; the trainer divides its logits by it (absent: all 1)"),
});

/** `NodeInfo.detail` of a node agent in the store (GET /api/nodes, the Nodes view). */
export const NodeDetail = z.object({
  connected: z.boolean().nullable(),
  run_ids: z.array(z.string()).describe('runs using the node now'),
  health: NodeHealth.nullable().describe('its last health report'),
  error: z.string().nullable().describe('why it is not connected, or its last error'),
});

/** Every frame header, daemon ⇄ node agent. `t` names the message. */
export const NodeMessage = z.discriminatedUnion('t', [
  // Handshake: the daemon speaks first; the node answers hello or refused.
  z.object({ t: z.literal('hello'), protocol_version: z.number().int(), daemon: z.string().optional() }),
  z.object({
    t: z.literal('welcome'),
    protocol_version: z.number().int(),
    node_id: z.string(),
    role: NodeRole,
    health: NodeHealth,
  }),
  z.object({ t: z.literal('refused'), message: z.string() }),
  z.object({ t: z.literal('health'), health: NodeHealth }),

  // Inference: an HTTP request to the node's backend, tunnelled. The request body is the payload.
  z.object({
    t: z.literal('http'),
    id: Id,
    method: z.enum(['GET', 'POST']),
    path: z.string().startsWith('/'),
    headers: z.record(z.string(), z.string()).default({}),
    deadline_ms: durationMs().describe('the node gives up after this long without a byte'),
  }),
  z.object({
    t: z.literal('http_head'),
    id: Id,
    status: z.number().int(),
    headers: z.record(z.string(), z.string()),
  }),
  z.object({ t: z.literal('http_data'), id: Id }), // payload: the next bytes of the body
  z.object({ t: z.literal('http_end'), id: Id }),
  z.object({
    t: z.literal('http_error'),
    id: Id,
    kind: z.enum(['connect', 'timeout', 'aborted', 'other']),
    message: z.string(),
  }),
  z.object({ t: z.literal('cancel'), id: Id }),

  // Weights (inference): is this version's folder there already? Else its files are sent, then loaded.
  z.object({ t: z.literal('weights_check'), id: Id, weights: WeightsRef, run_id: z.string() }),
  z.object({ t: z.literal('weights_present'), id: Id, present: z.boolean() }),
  z.object({
    t: z.literal('file'),
    id: Id,
    name: z.string(),
    offset: z.number().int().nonnegative(),
    last: z.boolean(),
  }), // payload: file bytes at offset
  z.object({
    t: z.literal('weights_load'),
    id: Id,
    key: z.string().describe('idempotency key: <run_id>:<version>'),
    run_id: z.string(),
    model: z.string().describe('the served model name harnesses ask for (the LoRA adapter name)'),
    weights: WeightsRef,
  }),
  z.object({ t: z.literal('weights_loaded'), id: Id, key: z.string(), version: z.number().int() }),

  // Trainer: open a run, train batches (payload: packed samples), fetch the weights of a version.
  z.object({ t: z.literal('open'), id: Id, run: OpenRun }),
  z.object({
    t: z.literal('opened'),
    id: Id,
    version: z.number().int().nonnegative(),
    last: LastStep.nullable(),
    weights: WeightsRef.nullable(),
  }),
  z.object({
    t: z.literal('train'),
    id: Id,
    key: z.string().describe('idempotency key: <run_id>:<step>; a key seen before is answered, not applied'),
    run_id: z.string(),
    step: z.number().int().nonnegative(),
    model_version: z.number().int().nonnegative(),
    loss: PolicyLossConfig,
    samples: PackedSamples,
  }),
  z.object({ t: z.literal('trained'), id: Id, key: z.string(), result: TrainerStepResult }),
  z.object({ t: z.literal('weights_fetch'), id: Id, run_id: z.string(), version: z.number().int() }),
  z.object({ t: z.literal('files_end'), id: Id, weights: WeightsRef }),

  z.object({ t: z.literal('ok'), id: Id }),
  z.object({ t: z.literal('error'), id: Id, message: z.string(), field: z.string().optional() }),
]);

export type NodeRole = z.infer<typeof NodeRole>;
export type WeightsFile = z.infer<typeof WeightsFile>;
export type WeightsRef = z.infer<typeof WeightsRef>;
export type TrainerStepResult = z.infer<typeof TrainerStepResult>;
export type OpenRun = z.infer<typeof OpenRun>;
export type LastStep = z.infer<typeof LastStep>;
export type NodeHealth = z.infer<typeof NodeHealth>;
export type NodeDetail = z.infer<typeof NodeDetail>;
export type NodeMessage = z.infer<typeof NodeMessage>;
export type ModelFilesManifest = z.infer<typeof ModelFilesManifest>;
export type PackedSamples = z.infer<typeof PackedSamples>;
export type NodeMessageOf<T extends NodeMessage['t']> = Extract<NodeMessage, { t: T }>;
