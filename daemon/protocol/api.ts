// REST request and response bodies. The server validates with these, the OpenAPI document is
// generated from them, and the extension and webviews import the same types.
import { z } from 'zod';
import { cursorOf, httpUrl, storedText } from './bounds';
import { RunConfig } from './config';
import {
  Attempt,
  Group,
  Id,
  Json,
  LlmCall,
  PrefixBreak,
  Recording,
  Reward,
  Rollout,
  RolloutStatus,
  Run,
  RunKind,
  ToolRun,
} from './entities';

export const ErrorBody = z.object({
  error: z.object({ message: z.string(), field: z.string().nullable(), code: z.string() }),
});

export const Health = z.object({ ok: z.literal(true), version: z.string(), store: z.string() });

/** One inference backend the proxy routes to, as it stands now. */
export const BackendStatus = z.object({
  url: z.string(),
  name: z.string(),
  run_id: Id.nullable().describe('the run whose rollouts it serves (only those); null = shared'),
  model_version: z.number().int().nullable(),
  outstanding: z.number().int().describe('requests in flight'),
  total: z.number().int().describe('requests sent since it was added'),
  healthy: z.boolean(),
  last_error: z.string().nullable(),
  models: z.array(z.string()).nullable().describe('served model names (null until known)'),
});

export const CreateRolloutBody = z
  .object({
    run_id: Id.optional(),
    input: Json.optional(),
    max_attempts: z.number().int().positive().max(100).optional(),
    tito: z
      .boolean()
      .optional()
      .describe(
        "token-in-token-out bridge for a standalone rollout (default: on where the backend returns token ids); a run's rollouts follow its algorithm.tito",
      ),
  })
  .strict()
  .refine((b) => b.run_id === undefined || b.tito === undefined, {
    path: ['tito'],
    message: "a run's rollouts follow the run's algorithm.tito: leave tito out when run_id is given",
  });
export const CreatedRollout = z.object({
  id: Id,
  key: z.string().describe('bearer key scoped to this rollout'),
  openai_base_url: z.string(),
  anthropic_base_url: z.string(),
});

export const RolloutQuery = z
  .object({
    run_id: Id.optional(),
    group_id: Id.optional(),
    status: RolloutStatus.optional(),
    min_reward: z.coerce.number().optional(),
    max_reward: z.coerce.number().optional(),
    has_reward: z.enum(['true', 'false']).optional(),
    cursor: cursorOf('ro').optional(),
    limit: z.coerce.number().int().min(1).max(1000).default(100),
  })
  .strict();

export const RolloutDetail = Rollout.extend({
  attempts: z.array(Attempt),
  rewards: z.array(Reward),
  llm_calls: z.array(LlmCall),
  prefix_breaks: z.array(PrefixBreak),
  tool_runs: z.array(ToolRun).default([]).describe('tool executions the harness reported over OTLP'),
});

export const RewardBody = z
  .object({
    value: z.number().finite(),
    source: storedText().max(100).optional(),
    detail: Json.optional(),
  })
  .strict();

export const FailBody = z.object({ error: storedText().max(10_000) }).strict();

export const CreateRunBody = z
  .object({
    config: RunConfig,
    base_dir: z.string().optional().describe('folder that relative paths in the config resolve against'),
  })
  .strict();

export const RunQuery = z
  .object({
    cursor: cursorOf('run').optional(),
    limit: z.coerce.number().int().min(1).max(1000).default(100),
    kind: RunKind.optional().describe('only runs of this kind'),
  })
  .strict();

export const GroupQuery = z
  .object({
    status: RolloutStatus.optional().describe('only groups with a rollout of this status'),
    min_reward: z.coerce.number().optional().describe('only groups with a rollout rewarded at least this'),
    max_reward: z.coerce.number().optional().describe('only groups with a rollout rewarded at most this'),
    cursor: cursorOf('grp').optional(),
    limit: z.coerce.number().int().min(1).max(1000).default(100),
  })
  .strict();

export const CreateRecordingBody = z
  .object({
    name: storedText().min(1).max(200).optional(),
    upstream: z
      .object({
        kind: z.enum(['openai', 'anthropic', 'vllm', 'reference']),
        base_url: httpUrl().optional(),
      })
      .strict()
      .optional(),
    tito: z
      .boolean()
      .optional()
      .describe(
        'token-in-token-out bridge for the recorded calls (default: on where the upstream returns token ids: vllm, reference)',
      ),
    scoped: z
      .boolean()
      .optional()
      .describe(
        "record only the calls that present this recording's key, beside the active recording (which it neither stops nor replaces); default false",
      ),
  })
  .strict()
  .refine((b) => b.tito !== true || ['vllm', 'reference', undefined].includes(b.upstream?.kind), {
    path: ['tito'],
    message:
      'a provider pass-through recording (openai, anthropic) keeps text only: it has no token ids to bridge',
  });
export const CreatedRecording = Recording.extend({
  key: z.string(),
  openai_base_url: z.string(),
  anthropic_base_url: z.string(),
});

export type ErrorBody = z.infer<typeof ErrorBody>;
export type CreateRolloutBody = z.infer<typeof CreateRolloutBody>;
export type CreatedRollout = z.infer<typeof CreatedRollout>;
export type RolloutQuery = z.infer<typeof RolloutQuery>;
export type GroupQuery = z.infer<typeof GroupQuery>;
export type RolloutDetail = z.infer<typeof RolloutDetail>;
export type RewardBody = z.infer<typeof RewardBody>;
export type CreateRunBody = z.infer<typeof CreateRunBody>;
export type CreateRecordingBody = z.infer<typeof CreateRecordingBody>;
export type CreatedRecording = z.infer<typeof CreatedRecording>;
export { Group, Run };

// Added by the API owner (additive): query and detail shapes of the remaining routes.
export const ModelVersionQuery = z.object({ run_id: Id.optional() }).strict();
export const EventsQuery = z
  .object({
    run_id: Id.optional().describe(
      'only events of this run (runs, metrics, its groups and rollouts, their calls and rewards)',
    ),
    ticket: z
      .string()
      .min(1)
      .optional()
      .describe('a single-use ticket from POST /api/events/ticket, for clients that cannot set headers'),
  })
  .strict();
/** POST /api/events/ticket: opens one event socket (`?ticket=`) within a short time; no token in URLs. */
export const EventsTicket = z.object({
  ticket: z.string(),
  expires_at: z.string().describe('ISO time after which the ticket no longer opens a socket'),
});
export type EventsTicket = z.infer<typeof EventsTicket>;
export const GroupDetail = Group.extend({ rollouts: z.array(Rollout) });
export const RecordingDetail = Recording.extend({
  calls: z.array(LlmCall),
  tool_runs: z.array(ToolRun).default([]),
});
/** For actions that take no fields (complete, cancel, stop): an empty body or `{}`. */
export const EmptyBody = z.object({}).strict();
/** The path of a route about one thing: `:id`. */
export const IdParams = z.object({ id: Id }).strict();
export type GroupDetail = z.infer<typeof GroupDetail>;
export type RecordingDetail = z.infer<typeof RecordingDetail>;
export type BackendStatus = z.infer<typeof BackendStatus>;
