// A coding task in SWE-bench's instance format, as synthesis writes it and import/validate/the verifier
// read it. The SWE-bench fields keep their names and meaning (FAIL_TO_PASS / PASS_TO_PASS also as the
// JSON-encoded strings the Hugging Face dataset uses); `harness_rl` says where the snapshot is and how
// the tests run.
import { z } from 'zod';

/** A list of test ids, or that list JSON-encoded in a string (SWE-bench on Hugging Face). */
const TestList = z.preprocess(
  (v) => {
    if (typeof v !== 'string') return v;
    try {
      return JSON.parse(v);
    } catch {
      return v;
    }
  },
  z.array(z.string(), { error: 'not a list of test ids (nor one JSON-encoded in a string)' }),
);

export const TaskMutation = z.object({
  file: z.string(),
  line: z.number().int(),
  operator: z.string(),
  description: z.string(),
});

export const TaskRuntime = z.object({
  /** The snapshot (the buggy tree) in the store, by content hash. */
  snapshot: z.string().regex(/^[0-9a-f]{64}$/, 'a sha256 tree hash'),
  /** The snapshot store: absolute, or relative to the JSONL file's folder. */
  store: z.string().min(1),
  /** The repository's test command (pytest or vitest), run in the snapshot's root. */
  test_cmd: z.string().min(1),
  /** Per test run. */
  timeout_s: z.number().positive(),
  lang: z.enum(['python', 'typescript']).optional(),
  mutation: TaskMutation.optional(),
  /** How the statement was written: 'tests' (from the failing tests, no model) or the model's name. */
  statement_by: z.string().optional(),
});

export const TaskInstance = z
  .object({
    instance_id: z.string().min(1),
    repo: z.string().min(1),
    base_commit: z.string().min(1),
    /** The gold patch (unified diff) that fixes the task. */
    patch: z.string(),
    test_patch: z.string().default(''),
    problem_statement: z.string(),
    FAIL_TO_PASS: TestList,
    PASS_TO_PASS: TestList,
    created_at: z.string().optional(),
    harness_rl: TaskRuntime.optional(),
  })
  .passthrough();
export type TaskInstance = z.infer<typeof TaskInstance>;
/** An instance whose snapshot is in a store here: what validate and the verifier run. */
export type RunnableTask = TaskInstance & { harness_rl: z.infer<typeof TaskRuntime> };

export const TaskVerdict = z.object({
  reward: z.number().min(0).max(1),
  /** Why the reward is below 1 (empty when it is 1). */
  reason: z.string(),
  fail_to_pass: z.object({ passed: z.number().int(), total: z.number().int() }),
  pass_to_pass: z.object({ passed: z.number().int(), total: z.number().int() }),
  /** The first tests that did not pass, with their message. */
  failing: z.array(z.object({ test: z.string(), message: z.string().optional() })),
  timed_out: z.boolean(),
  sandboxed: z.boolean(),
});
export type TaskVerdict = z.infer<typeof TaskVerdict>;
