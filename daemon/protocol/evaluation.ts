// Evaluations: a task split run through a harness at a fixed model version, no training; and the
// paired comparison of two of them. One schema each for REST, CLI, extension and dashboard.
import { z } from 'zod';
import { Id } from './bounds';
import { RunConfig } from './config';
import { TaskSplit, Timestamp } from './entities';

export const EvalSplit = TaskSplit;
export const EvaluationStatus = z.enum(['running', 'finished', 'failed', 'stopped']);
/** infrastructure: the daemon, a backend or a worker failed (retried, never scored); harness: scored 0. */
export const EvalFailureKind = z.enum(['infrastructure', 'harness']);

export const EvalTaskResult = z.object({
  task_id: Id,
  index: z.number().int(),
  /** The task input's `id` when it has one, else its index: what pairs tasks across evaluations. */
  key: z.string(),
  /** Scored attempts' rewards, in attempt order (harness failures as 0). */
  rewards: z.array(z.number()),
  passes: z.number().int(),
  pass_at_1: z.number(),
  pass_at_k: z.number(),
  mean_reward: z.number().nullable(),
  /** Per scored attempt: prompt and completion tokens of its llm calls, and how many calls. */
  prompt_tokens: z.number(),
  completion_tokens: z.number(),
  calls: z.number(),
  /** Rollout ids of the scored attempts (their trajectories). */
  rollouts: z.array(Id),
  failures: z.array(z.object({ kind: EvalFailureKind, reason: z.string() })),
});

export const EvaluationSummary = z.object({
  tasks: z.number().int(),
  attempts: z.number().int(),
  scored: z.number().int().describe('attempts scored (harness failures count as 0; infrastructure ones not)'),
  unscored_tasks: z.number().int().describe('tasks with no scored attempt (only infrastructure failures)'),
  mean_reward: z.number().nullable(),
  ci_low: z.number().nullable(),
  ci_high: z.number().nullable(),
  ci: z.string().describe('how the interval was made'),
  pass_threshold: z.number(),
  pass_at_1: z.number().nullable(),
  pass_at_k: z.number().nullable(),
  prompt_tokens_per_task: z.number().nullable(),
  completion_tokens_per_task: z.number().nullable(),
  policy_tokens_per_task: z.number().nullable().describe('prompt + completion tokens per task and attempt'),
  calls_per_task: z.number().nullable(),
  wall_s: z.number(),
  failures: z.record(z.string(), z.number().int()).describe('failed attempts by reason'),
  infrastructure_retries: z.number().int(),
});

export const Evaluation = z.object({
  id: Id,
  name: z.string(),
  /** The run that holds its tasks, rollouts and calls (no training steps). */
  run_id: Id,
  split: EvalSplit,
  attempts: z.number().int().positive(),
  harness_dir: z.string().nullable(),
  model_version: z.number().int().nullable(),
  seed: z.number().int(),
  status: EvaluationStatus,
  error: z.string().nullable(),
  created_at: Timestamp,
  finished_at: Timestamp.nullable(),
  summary: EvaluationSummary.nullable(),
  tasks: z.array(EvalTaskResult).nullable(),
});

/**
 * A running evaluation's attempts (task × attempt slots), live as `evaluation_progress` events: each
 * counted by its latest rollout; a rollout retried after an infrastructure failure counts in `retried`,
 * not as a failed attempt.
 */
export const EvaluationProgress = z.object({
  evaluation_id: Id,
  run_id: Id,
  total: z.number().int().nonnegative(),
  queued: z.number().int().nonnegative(),
  running: z.number().int().nonnegative(),
  /** succeeded + failed */
  finished: z.number().int().nonnegative(),
  succeeded: z.number().int().nonnegative(),
  failed: z.number().int().nonnegative().describe('failed or cancelled, not retried'),
  retried: z.number().int().nonnegative().describe('rollouts run again after an infrastructure failure'),
});

export const CreateEvaluationBody = z
  .object({
    config: RunConfig,
    base_dir: z.string().optional().describe('folder that relative paths in the config resolve against'),
    split: EvalSplit.default('train'),
    attempts: z.number().int().positive().max(100).default(1).describe('attempts per task (k of pass@k)'),
    harness_dir: z
      .string()
      .optional()
      .describe("the harness folder the command runs in (default the config's harness.dir or folder)"),
    seed: z
      .number()
      .int()
      .default(0)
      .describe("seeds each attempt's sampling (HARNESS_RL_SEED) and the bootstrap"),
    pass_threshold: z.number().default(1).describe('an attempt passes when its reward is at least this'),
    infrastructure_retries: z.number().int().min(0).max(10).default(2),
    name: z.string().min(1).max(200).optional(),
  })
  .strict();

/** Start an evolution: a run config with an `evolve:` block (protocol/evolution.ts). */
export const CreateEvolutionBody = z
  .object({
    config: RunConfig.refine((c) => c.evolve !== undefined, {
      path: ['evolve'],
      message: 'an evolution needs the evolve block in the run config',
    }),
    base_dir: z.string().optional().describe('folder that relative paths in the config resolve against'),
    harness_dir: z
      .string()
      .optional()
      .describe("the root candidate's folder (default the config's harness.dir, else its folder)"),
  })
  .strict();

export const EvaluationQuery = z
  .object({ cursor: z.string().optional(), limit: z.coerce.number().int().positive().optional() })
  .strict();

export const CompareQuery = z.object({ a: Id, b: Id, seed: z.coerce.number().int().default(0) }).strict();

export const Comparison = z.object({
  a: Id,
  b: Id,
  /** Tasks both evaluations scored, by key. */
  paired_tasks: z.number().int(),
  per_task: z.array(
    z.object({
      key: z.string(),
      a: z.number(),
      b: z.number(),
      diff: z.number(),
      a_tokens: z.number(),
      b_tokens: z.number(),
    }),
  ),
  mean_diff: z.number().nullable().describe('mean over paired tasks of (b − a) mean reward'),
  ci_low: z.number().nullable(),
  ci_high: z.number().nullable(),
  method: z.string(),
  sign_test: z.object({
    wins: z.number().int(),
    losses: z.number().int(),
    ties: z.number().int(),
    p: z.number(),
  }),
  significant: z.boolean().describe('the 95 % paired bootstrap interval excludes 0'),
  tokens: z.object({
    a_per_task: z.number().nullable(),
    b_per_task: z.number().nullable(),
    change: z.number().nullable().describe('(b − a) / a'),
  }),
});

export type EvalSplit = z.infer<typeof EvalSplit>;
export type EvalFailureKind = z.infer<typeof EvalFailureKind>;
export type EvalTaskResult = z.infer<typeof EvalTaskResult>;
export type EvaluationSummary = z.infer<typeof EvaluationSummary>;
export type Evaluation = z.infer<typeof Evaluation>;
export type EvaluationProgress = z.infer<typeof EvaluationProgress>;
export type CreateEvaluationBody = z.infer<typeof CreateEvaluationBody>;
export type Comparison = z.infer<typeof Comparison>;
export type CreateEvolutionBody = z.infer<typeof CreateEvolutionBody>;
