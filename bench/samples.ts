// samples.build: 1,024 rollouts in groups of 8, 16 calls each, 1,024 new tokens per call (256 new prompt
// tokens + 768 response tokens with logprobs): ~16.8M sample tokens, ~130M prompt tokens to prefix-check.
// The figure uses every call's ids in arrays of their own, as the store hands them out; beside it, the
// same calls as views of one buffer per rollout. Baseline: the same sample token ids copied into
// exact-size Int32Arrays with TypedArray.set and nothing else.
// samples.memory: ArrayBuffer and RSS growth during one build, against the bytes of the sample arrays the
// build must produce (ids 4 + mask 1 + advantages 4 + old logprobs 8 + loss weights 8 = 25 per token).
// Both run in a child process with --expose-gc; timings are the best of 5 with a full GC before each.
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { buildSamples, type TrajectoryArrays } from '../daemon/samples';
import { emit, round } from './emit';

const ROLLOUTS = 1024;
const GROUP = 8;
const CALLS = 16;
const NEW_PROMPT = 256;
const RESPONSE = 768;
const SAMPLE_BYTES_PER_TOKEN = 4 + 1 + 4 + 8 + 8;

/**
 * `separate`: every call's ids and logprobs in arrays of their own, as the store hands them out (the
 * figure). `shared`: calls are views into one buffer per rollout, as an engine that keeps a rollout's
 * tokens together would pass them (less for the GC to track; reported beside it).
 */
function makeTrajectories(layout: 'separate' | 'shared' = 'separate'): {
  trajectories: TrajectoryArrays[];
  inputBytes: number;
} {
  let seed = 12345;
  const next = () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed;
  };
  const trajectories: TrajectoryArrays[] = [];
  let inputBytes = 0;
  for (let r = 0; r < ROLLOUTS; r++) {
    const full = new Int32Array(CALLS * (NEW_PROMPT + RESPONSE));
    for (let i = 0; i < full.length; i++) full[i] = next() % 151_000;
    const allLogprobs = new Float64Array(CALLS * RESPONSE);
    for (let i = 0; i < allLogprobs.length; i++) allLogprobs[i] = -(next() % 1000) / 100;
    const calls: TrajectoryArrays['calls'] = [];
    for (let k = 0; k < CALLS; k++) {
      const promptEnd = k * (NEW_PROMPT + RESPONSE) + NEW_PROMPT;
      const logprobs = allLogprobs.subarray(k * RESPONSE, (k + 1) * RESPONSE);
      calls.push(
        layout === 'separate'
          ? {
              prompt_ids: full.slice(0, promptEnd), // its own copy, like a decoded blob
              response_ids: full.slice(promptEnd, promptEnd + RESPONSE),
              response_logprobs: logprobs.slice(),
            }
          : {
              prompt_ids: full.subarray(0, promptEnd),
              response_ids: full.subarray(promptEnd, promptEnd + RESPONSE),
              response_logprobs: logprobs,
            },
      );
      if (layout === 'separate') inputBytes += (promptEnd + RESPONSE) * 4 + RESPONSE * 8;
    }
    if (layout === 'shared') inputBytes += full.byteLength + allLogprobs.byteLength;
    trajectories.push({
      rollout_id: `r${r}`,
      group_id: `g${Math.floor(r / GROUP)}`,
      reward: next() % 2,
      calls,
    });
  }
  return { trajectories, inputBytes };
}

const options = { merge: 'exact', advantage: 'grpo', loss_agg: 'token-mean' } as const;

/** The baseline: every sample token id copied once into an exact-size array. */
function copyBaseline(trajectories: TrajectoryArrays[]): number {
  let tokens = 0;
  for (const t of trajectories) {
    const last = t.calls[t.calls.length - 1];
    const out = new Int32Array(last.prompt_ids.length + last.response_ids.length);
    let pos = 0;
    for (const c of t.calls) {
      const p = c.prompt_ids as Int32Array;
      out.set(p.subarray(pos), pos);
      out.set(c.response_ids as Int32Array, p.length);
      pos = p.length + c.response_ids.length;
    }
    tokens += out.length;
  }
  return tokens;
}

type Gc = () => void;

/** Best of `runs` (wall and CPU seconds), a full GC before each so one run's garbage is not the next one's cost. */
function best(runs: number, gc: Gc, f: () => void): { wall: number; cpu: number } {
  let wall = Number.POSITIVE_INFINITY;
  let cpu = Number.POSITIVE_INFINITY;
  for (let i = 0; i < runs; i++) {
    gc();
    const c0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    f();
    wall = Math.min(wall, Number(process.hrtime.bigint() - t0) / 1e9);
    const c = process.cpuUsage(c0);
    cpu = Math.min(cpu, (c.user + c.system) / 1e6);
  }
  return { wall, cpu };
}

/** Runs in a child started with --expose-gc; prints the two figures as JSON lines. */
function child(): void {
  const gc = (globalThis as { gc?: Gc }).gc;
  if (!gc) throw new Error('run with --expose-gc');
  const { trajectories, inputBytes } = makeTrajectories();
  const line = (o: object) => process.stdout.write(`${JSON.stringify(o)}\n`);

  // memory first, on a fresh heap: ArrayBuffer and RSS growth across one build, no GC in between (so
  // anything the build allocated and dropped would still be counted)
  gc();
  const before = process.memoryUsage();
  let built: ReturnType<typeof buildSamples> | null = buildSamples(trajectories, options);
  const after = process.memoryUsage();
  const tokens = built.summary.tokens;
  const tokenBytes = tokens * SAMPLE_BYTES_PER_TOKEN;
  const peakExtra = after.arrayBuffers - before.arrayBuffers;
  built = null;
  const memory = {
    token_bytes: tokenBytes,
    input_bytes: inputBytes,
    peak_extra_bytes: peakExtra,
    rss_extra_bytes: after.rss - before.rss,
    ratio: round(peakExtra / tokenBytes, 3),
    rss_ratio: round((after.rss - before.rss) / tokenBytes, 3),
  };

  let copied = 0;
  const copy = best(5, gc, () => {
    copied = copyBaseline(trajectories);
  });
  const build = best(5, gc, () => {
    buildSamples(trajectories, options);
  });
  if (copied !== tokens) throw new Error(`baseline copied ${copied} tokens, build made ${tokens}`);
  // the same build on the shared-buffer layout, in this process once the first input is gone
  const sharedInput = makeTrajectories('shared').trajectories;
  trajectories.length = 0;
  const shared = best(5, gc, () => {
    buildSamples(sharedInput, options);
  });
  line({
    bench: 'samples.build',
    rollouts: ROLLOUTS,
    tokens,
    seconds: round(build.wall, 4),
    trajectories_per_s: Math.round(ROLLOUTS / build.wall),
    tokens_per_s: Math.round(tokens / build.wall),
    cpu_tokens_per_s: Math.round(tokens / build.cpu),
    baseline_copy_tokens_per_s: Math.round(tokens / copy.wall),
    ratio_to_copy: round(copy.wall / build.wall, 3),
    shared_input_tokens_per_s: Math.round(tokens / shared.wall),
    shared_input_cpu_tokens_per_s: Math.round(tokens / shared.cpu),
    load_avg_1m: round(loadavg()[0], 2),
  });
  line({ bench: 'samples.memory', ...memory });
}

export default async function bench(): Promise<void> {
  const tsx = fileURLToPath(import.meta.resolve('tsx'));
  const run = spawnSync(
    process.execPath,
    [
      '--expose-gc',
      '--import',
      pathToFileURL(tsx).href,
      fileURLToPath(import.meta.url),
      '--samples-bench-child',
    ],
    { encoding: 'utf8', maxBuffer: 1 << 20 },
  );
  if (run.status !== 0) throw new Error(`samples bench child failed: ${run.stderr}`);
  for (const l of run.stdout.trim().split('\n')) {
    const { bench: name, ...figures } = JSON.parse(l) as { bench: string } & Record<string, number>;
    emit(name, figures);
  }
}

if (process.argv.includes('--samples-bench-child')) child();
