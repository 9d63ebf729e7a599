// The verifier of a run with `harness.reward: verifier`: after the harness finished a rollout, the
// worker runs `harness.verifier` (argv) on the task, the harness's final output and stdout; the reward
// it prints is the rollout's reward (source 'verifier'). A verifier that exits nonzero, times out or
// prints no reward fails the attempt: a rollout is never silently rewarded 0.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { answered, type LlmCall } from '../protocol/entities';
import { AttemptFailedError, EXIT_TEMPFAIL, infrastructure } from '../protocol/failures';
import { exitText, lastLine, noRewardLine, runProcess } from './command';

/** Any JSON value. */
type Json = unknown;

/** What a verifier is given: as JSON on stdin and in the file $HARNESS_RL_VERIFY_INPUT. */
export interface VerifierInput {
  run_id: string | null;
  rollout_id: string;
  attempt_id: string;
  /** The task input (also $HARNESS_RL_TASK). */
  task: Json;
  /** The text of the last assistant message: the response of the rollout's last llm call; null without one. */
  output: string | null;
  /** The tail of the harness's stdout (64 KiB); "" for a harness that is not a command. */
  stdout: string;
  /** The reward the harness gave itself (posted or its last stdout line), if any; it does not count. */
  harness_reward: number | null;
}

export interface Verdict {
  reward: number;
  /** Stored with the reward (e.g. which tests passed). */
  detail?: Json;
}

/** A verifier: resolves to the reward or rejects with why there is none. Stop when `signal` aborts. */
export type Verifier = (input: VerifierInput, signal: AbortSignal) => Promise<Verdict>;

/**
 * A verifier's reward: its last non-empty stdout line, either `{"reward": x}` (optionally with a
 * `"detail"`, stored with the reward) or a bare number `x`; x must be finite. Anything else: undefined.
 */
export function parseVerdict(stdout: string): Verdict | undefined {
  const last = lastLine(stdout);
  if (!last) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(last);
  } catch {
    return undefined;
  }
  if (typeof parsed === 'number') return Number.isFinite(parsed) ? { reward: parsed } : undefined;
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return undefined;
  const { reward, detail } = parsed as { reward?: unknown; detail?: Json };
  if (typeof reward !== 'number' || !Number.isFinite(reward)) return undefined;
  return detail === undefined ? { reward } : { reward, detail };
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const partsText = (parts: unknown, types: string[]): string =>
  Array.isArray(parts)
    ? parts
        .filter((p): p is Obj => isObj(p) && types.includes(String(p.type)) && typeof p.text === 'string')
        .map((p) => p.text as string)
        .join('')
    : '';

/** The assistant text of one recorded response, per wire API ("" for a response with only tool calls). */
export function responseText(call: Pick<LlmCall, 'wire_api' | 'response'>): string {
  const response = call.response;
  if (!isObj(response)) return '';
  switch (call.wire_api) {
    case 'chat': {
      const choice = Array.isArray(response.choices) ? response.choices[0] : undefined;
      const content = isObj(choice) && isObj(choice.message) ? choice.message.content : undefined;
      return typeof content === 'string' ? content : partsText(content, ['text']);
    }
    case 'completions': {
      const choice = Array.isArray(response.choices) ? response.choices[0] : undefined;
      return isObj(choice) && typeof choice.text === 'string' ? choice.text : '';
    }
    case 'messages':
      return partsText(response.content, ['text']);
    case 'responses': {
      if (typeof response.output_text === 'string') return response.output_text;
      const items = Array.isArray(response.output) ? response.output : [];
      return items
        .filter((item): item is Obj => isObj(item) && item.type === 'message')
        .map((item) => partsText(item.content, ['output_text', 'text']))
        .join('');
    }
  }
  return '';
}

/**
 * The harness's final output: the assistant text of the last successful llm call of the attempt
 * (calls tagged "side", e.g. title generation, left out); null when it made none.
 */
export function finalOutput(calls: LlmCall[], attemptId?: string): string | null {
  const own = attemptId ? calls.filter((c) => c.attempt_id === attemptId) : calls;
  const last = (own.length > 0 ? own : calls)
    .filter((c) => answered(c.status) && c.response !== null && !c.tags.includes('side'))
    .sort((a, b) => a.seq - b.seq)
    .at(-1);
  return last ? responseText(last) : null;
}

/**
 * A verifier that runs `argv` (in `cwd`): the input as JSON on stdin and in the file named by
 * $HARNESS_RL_VERIFY_INPUT, plus $HARNESS_RL_TASK, $HARNESS_RL_ROLLOUT_ID, $HARNESS_RL_ATTEMPT_ID and
 * $HARNESS_RL_RUN_ID. It must exit 0 with a reward (parseVerdict) as its last stdout line.
 */
export function commandVerifier(
  argv: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Verifier {
  if (argv.length === 0) throw new Error('no verifier command given');
  return async (input, signal) => {
    const json = JSON.stringify(input);
    const dir = await mkdtemp(join(tmpdir(), 'harness-rl-verify-'));
    try {
      const file = join(dir, 'input.json');
      await writeFile(file, json);
      const result = await runProcess(argv, {
        cwd: options.cwd,
        env: {
          ...process.env,
          ...options.env,
          HARNESS_RL_VERIFY_INPUT: file,
          HARNESS_RL_TASK: JSON.stringify(input.task ?? null),
          HARNESS_RL_ROLLOUT_ID: input.rollout_id,
          HARNESS_RL_ATTEMPT_ID: input.attempt_id,
          HARNESS_RL_RUN_ID: input.run_id ?? '',
        },
        stdin: json,
        signal,
      });
      if (signal.aborted) throw signal.reason;
      if (result.code === EXIT_TEMPFAIL)
        throw new AttemptFailedError(
          `verifier reported an infrastructure failure (${exitText(result)})`,
          infrastructure('reported'),
        );
      if (result.code !== 0) throw new Error(exitText(result));
      const verdict = parseVerdict(result.stdout);
      if (!verdict)
        throw new Error(`printed no reward: ${noRewardLine(result.stdout, '{"reward": x} or a number x')}`);
      return verdict;
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  };
}
