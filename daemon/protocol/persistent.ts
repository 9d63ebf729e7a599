// The stdin protocol of a persistent harness (`harness.mode: persistent`): the worker starts the
// command once per concurrency slot with HARNESS_RL_PERSISTENT=1 and writes one line per rollout; the
// harness answers with one line naming the rollout. Every other stdout line is the rollout's output.
import { z } from 'zod';

/** One rollout, as one JSON line on the harness's stdin. */
export const PersistentRollout = z.object({
  rollout_id: z.string(),
  attempt_id: z.string(),
  task: z.unknown().describe('the task input (what HARNESS_RL_TASK holds for a spawned harness)'),
  model: z.string(),
  env: z
    .record(z.string(), z.string())
    .describe('what a spawned harness finds in its env: OPENAI_BASE_URL, OPENAI_API_KEY, HARNESS_RL_* …'),
});

/** The harness's answer, one JSON line on its stdout: a reward (or none, when it posted it) or an error. */
export const PersistentResult = z.union([
  z
    .object({ rollout_id: z.string(), reward: z.number().finite().optional() })
    .strict()
    .describe('the rollout finished (no reward: the harness posted it itself)'),
  z
    .object({
      rollout_id: z.string(),
      error: z.string(),
      infrastructure: z
        .boolean()
        .optional()
        .describe('true: not the harness’s failure (its sandbox, a service it needs): retried'),
    })
    .strict(),
]);

export type PersistentRollout = z.infer<typeof PersistentRollout>;
export type PersistentResult = z.infer<typeof PersistentResult>;

/** The env variable that tells a harness command it runs persistent. */
export const PERSISTENT_ENV = 'HARNESS_RL_PERSISTENT';
