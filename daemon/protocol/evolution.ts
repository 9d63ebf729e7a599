// Harness evolution: the `evolve:` block of a run config, candidates (harness folder snapshots with a
// parent, stored as patches), each regulariser's verdict, and an evolution's result.
import { z } from 'zod';
import { Id } from './bounds';
import { TaskSplit, Timestamp } from './entities';

export const EvolveConfig = z
  .object({
    proposer: z
      .array(z.string())
      .min(1)
      .describe(
        'argv run in a working copy of the parent (relative paths against the config folder): it reads the brief ($HARNESS_RL_BRIEF, Markdown; $HARNESS_RL_BRIEF_JSON) and edits the copy in place; OPENAI_BASE_URL/ANTHROPIC_BASE_URL point at a recording of the proxy',
      ),
    proposer_upstream: z
      .object({ kind: z.enum(['openai', 'anthropic', 'vllm', 'reference']), base_url: z.url().optional() })
      .strict()
      .default({ kind: 'reference' })
      .describe("where the proposer's recorded calls go (a coding agent's model)"),
    proposer_timeout_s: z.number().int().positive().default(600),
    generations: z.number().int().positive().max(50).default(2),
    children: z
      .number()
      .int()
      .positive()
      .max(20)
      .default(2)
      .describe('proposals per kept candidate per generation'),
    keep: z.number().int().positive().default(2).describe('best k per generation go on'),
    finalists: z
      .number()
      .int()
      .positive()
      .default(1)
      .describe('best candidates by train score evaluated on held-out'),
    attempts: z
      .number()
      .int()
      .positive()
      .max(20)
      .default(2)
      .describe('attempts per task in every evaluation'),
    seed: z.number().int().default(0),
    train_split: TaskSplit.default('train'),
    held_out_split: TaskSplit.default('test').describe('never shown to proposer, critic or selection'),
    budget: z
      .object({
        files: z.number().int().positive().default(2),
        hunks: z.number().int().positive().default(4),
        lines: z.number().int().positive().default(40).describe('lines added + removed'),
      })
      .strict()
      .or(z.literal(false))
      .default({ files: 2, hunks: 4, lines: 40 }),
    leak_check: z.boolean().default(true),
    critic: z
      .union([
        z.object({ command: z.array(z.string()).min(1) }).strict(),
        z
          .object({
            prompt: z.string().optional().describe('default: the stated prompt in daemon/evolve/critic.ts'),
            model: z.string().optional().describe("default: the run's model"),
          })
          .strict(),
        z.literal(false),
      ])
      .default({})
      .describe(
        'a command (diff on stdin, last stdout line {"verdict": "accept"|"reject", "reason"}) or an LLM call through the proxy',
      ),
    pruner: z
      .object({
        margin: z.number().default(0).describe('prune unless mean train reward beats the parent by more'),
      })
      .strict()
      .or(z.literal(false))
      .default({ margin: 0 }),
    novelty: z
      .object({ weight: z.number().nonnegative().default(0.05) })
      .strict()
      .or(z.literal(false))
      .default({ weight: 0.05 }),
  })
  .strict();

export const Verdict = z.object({
  verdict: z.enum(['accept', 'reject', 'abstain', 'off']),
  reason: z.string(),
});

export const CandidateStatus = z.enum(['proposed', 'rejected', 'evaluating', 'pruned', 'accepted', 'failed']);

export const Candidate = z.object({
  evolution_id: Id,
  /** Content address: SHA-256 (hex, first 24) of the folder's files. */
  hash: z.string(),
  parent: z.string().nullable(),
  generation: z.number().int(),
  status: CandidateStatus,
  stats: z.object({ files: z.number().int(), hunks: z.number().int(), lines: z.number().int() }),
  verdicts: z.record(z.string(), Verdict).describe('budget, leak, critic, pruner, novelty'),
  train_evaluation: Id.nullable(),
  held_out_evaluation: Id.nullable(),
  train_reward: z.number().nullable(),
  train_ci: z.tuple([z.number(), z.number()]).nullable(),
  tokens_per_task: z.number().nullable(),
  novelty: z.number().nullable(),
  held_out_reward: z.number().nullable(),
  selected: z.boolean(),
  proposer: z
    .object({
      exit_code: z.number().int().nullable(),
      seconds: z.number(),
      recording_id: Id.nullable(),
      log: z.string(),
    })
    .nullable(),
  created_at: Timestamp,
});

/**
 * What a `candidate` event says happened: added (first stored), status (its status changed: evaluating,
 * accepted, rejected, pruned, failed), scored (a train or held-out score arrived), selected (kept for
 * the next generation), updated (anything else).
 */
export const CandidateChange = z.enum(['added', 'status', 'scored', 'selected', 'updated']);

export const FilePatch = z.object({
  path: z.string(),
  /** Unified hunks: lines starting ' ', '-', '+'. */
  hunks: z.array(
    z.object({
      old_start: z.number().int(),
      old_lines: z.number().int(),
      new_start: z.number().int(),
      new_lines: z.number().int(),
      lines: z.array(z.string()),
    }),
  ),
  deleted: z.boolean().optional(),
});

export const EvolutionResult = z.object({
  best: z.string().nullable(),
  root: z.string(),
  train_change: z.number().nullable(),
  held_out_change: z.number().nullable(),
  held_out: z.object({ root: z.number().nullable(), best: z.number().nullable() }),
  policy_token_change: z
    .number()
    .nullable()
    .describe('(best − root) / root, policy tokens per held-out task'),
  candidates: z.number().int(),
  by_status: z.record(z.string(), z.number().int()),
  held_out_evaluations: z.number().int(),
  overhead_s: z.number().describe('snapshot, diff, regularisers and bookkeeping'),
  evaluation_s: z.number(),
  proposer_s: z.number(),
});

export const Evolution = z.object({
  id: Id,
  name: z.string(),
  status: z
    .enum(['running', 'finished', 'failed', 'stopped', 'interrupted'])
    .describe('interrupted: the daemon stopped while it ran (POST …/resume goes on from there)'),
  error: z.string().nullable(),
  harness_dir: z.string(),
  created_at: Timestamp,
  finished_at: Timestamp.nullable(),
  result: EvolutionResult.nullable(),
});

export const EvolutionDetail = Evolution.extend({
  candidates: z.array(Candidate.extend({ diff: z.string().describe('unified diff against the parent') })),
});

export const CandidateFiles = z.object({ hash: z.string(), files: z.record(z.string(), z.string()) });

/**
 * The name of candidate `hash`'s evaluation (and its run) on `split` in evolution `id`: one per pair, and
 * how a resumed evolution finds the evaluations it had started.
 */
export const candidateEvaluationName = (id: string, hash: string, split: z.infer<typeof TaskSplit>) =>
  `evolve ${id} ${hash} ${split}`;

/** The parts of a candidate evaluation's name (candidateEvaluationName); null for any other name. */
export function parseCandidateEvaluationName(
  name: string,
): { evolution: string; hash: string; split: z.infer<typeof TaskSplit> } | null {
  const m = /^evolve (evo_\w+) ([0-9a-f]+) (\w+)$/.exec(name);
  const split = TaskSplit.safeParse(m?.[3]);
  return m && split.success ? { evolution: m[1]!, hash: m[2]!, split: split.data } : null;
}

/** The name of the recording of generation `generation`'s proposer or critic in evolution `id`. */
export const evolutionRecordingName = (id: string, generation: number, role: 'proposer' | 'critic') =>
  `evolve ${id} g${generation} ${role}`;

/** The parts of a proposer's or critic's recording name (evolutionRecordingName); null for any other. */
export function parseEvolutionRecordingName(
  name: string,
): { evolution: string; generation: number; role: 'proposer' | 'critic' } | null {
  const m = /^evolve (evo_\w+) g(\d+) (proposer|critic)$/.exec(name);
  return m ? { evolution: m[1]!, generation: Number(m[2]), role: m[3] as 'proposer' | 'critic' } : null;
}

export type EvolveConfig = z.infer<typeof EvolveConfig>;
export type Verdict = z.infer<typeof Verdict>;
export type Candidate = z.infer<typeof Candidate>;
export type CandidateStatus = z.infer<typeof CandidateStatus>;
export type CandidateChange = z.infer<typeof CandidateChange>;
export type FilePatch = z.infer<typeof FilePatch>;
export type Evolution = z.infer<typeof Evolution>;
export type EvolutionResult = z.infer<typeof EvolutionResult>;
export type EvolutionDetail = z.infer<typeof EvolutionDetail>;
export type CandidateFiles = z.infer<typeof CandidateFiles>;
