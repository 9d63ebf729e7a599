// `harness-rl samples --input FILE [--merge exact|none] [--advantage grpo|drgrpo|rloo|reinforce]
//   [--loss-agg …] [--max-len N]`: trajectories JSONL → samples JSONL + one summary line on stdout
// (shared/spec/samples.md). Every line is read and validated first; any bad line is reported on stderr
// with its line number, rollout and field, and nothing is written to stdout.
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { errorText } from '../../error-text';
import { AdvantageEstimator, LossAggregation, MergeMode } from '../../protocol/algorithm';
import type { BuildResult } from '../../samples';
import {
  buildSamples,
  formatLineError,
  parseTrajectories,
  toSampleJson,
  trajectoryArrays,
} from '../../samples';

export const SAMPLES_USAGE = `usage: harness-rl samples --input FILE [--merge exact|none]
    [--advantage grpo|drgrpo|rloo|reinforce]
    [--loss-agg token-mean|seq-mean-token-mean|seq-mean-token-sum|seq-mean-token-sum-norm]
    [--max-len N] > samples.jsonl
  FILE is trajectories JSONL ("-" reads stdin). --max-len is required for seq-mean-token-sum-norm.`;

export class UsageError extends Error {}

/** Parses a positive integer option value or throws a UsageError naming the option. */
export function positiveInt(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) <= 0) {
    throw new UsageError(`--${name} must be a positive integer, got "${value}"`);
  }
  return Number(value);
}

/** One enum option, validated with its zod schema. */
export function enumOption<T extends string>(
  name: string,
  schema: { safeParse(v: unknown): { success: true; data: T } | { success: false } },
  value: string | undefined,
  fallback: T,
  choices: readonly string[],
): T {
  if (value === undefined) return fallback;
  const r = schema.safeParse(value);
  if (!r.success) throw new UsageError(`--${name} must be one of ${choices.join(', ')}, got "${value}"`);
  return r.data;
}

/** Writes lines to a stream, waiting for drain so big outputs do not pile up in memory. */
export async function writeLines(out: NodeJS.WritableStream, lines: Iterable<string>): Promise<void> {
  let chunk = '';
  for (const line of lines) {
    chunk += `${line}\n`;
    if (chunk.length >= 1 << 20) {
      if (!out.write(chunk)) await new Promise<void>((r) => out.once('drain', () => r()));
      chunk = '';
    }
  }
  if (chunk !== '') await new Promise<void>((r, j) => out.write(chunk, (e) => (e ? j(e) : r())));
}

/** The output lines: one SampleJson per sample (input order, then index), then `{"summary": …}`. */
export function* sampleLines(built: BuildResult, summary: object = spec(built)): Generator<string> {
  for (const s of built.samples) yield JSON.stringify(toSampleJson(s));
  yield JSON.stringify({ summary });
}

/** Exactly the summary fields of the spec. */
function spec(built: BuildResult) {
  const { trajectories, samples, prefix_breaks, excluded, mask_tokens } = built.summary;
  return { trajectories, samples, prefix_breaks, excluded, mask_tokens };
}

async function readInput(path: string): Promise<string> {
  if (path !== '-') return readFile(path, 'utf8');
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function run(argv: string[]): Promise<number> {
  let values: Record<string, string | boolean | undefined>;
  let merge: MergeMode;
  let advantage: AdvantageEstimator;
  let lossAgg: LossAggregation;
  let maxLen: number | undefined;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        input: { type: 'string', short: 'i' },
        merge: { type: 'string' },
        advantage: { type: 'string' },
        'loss-agg': { type: 'string' },
        'max-len': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }));
    if (values.help) {
      process.stdout.write(`${SAMPLES_USAGE}\n`);
      return 0;
    }
    if (typeof values.input !== 'string' || values.input === '')
      throw new UsageError('--input FILE is required');
    merge = enumOption('merge', MergeMode, values.merge as string | undefined, 'exact', MergeMode.options);
    advantage = enumOption(
      'advantage',
      AdvantageEstimator,
      values.advantage as string | undefined,
      'grpo',
      AdvantageEstimator.options,
    );
    lossAgg = enumOption(
      'loss-agg',
      LossAggregation,
      values['loss-agg'] as string | undefined,
      'token-mean',
      LossAggregation.options,
    );
    maxLen = positiveInt('max-len', values['max-len'] as string | undefined);
    if (lossAgg === 'seq-mean-token-sum-norm' && maxLen === undefined) {
      throw new UsageError('--loss-agg seq-mean-token-sum-norm needs --max-len N');
    }
  } catch (err) {
    const message = errorText(err);
    process.stderr.write(`harness-rl samples: ${message}\n${SAMPLES_USAGE}\n`);
    return 2;
  }

  let text: string;
  try {
    text = await readInput(values.input as string);
  } catch (err) {
    process.stderr.write(
      `harness-rl samples: cannot read ${values.input}: ${err instanceof Error ? err.message : err}\n`,
    );
    return 1;
  }
  const { trajectories, errors } = parseTrajectories(text);
  if (errors.length > 0) {
    const shown = errors.slice(0, 50).map(formatLineError);
    if (errors.length > shown.length) shown.push(`… and ${errors.length - shown.length} more`);
    process.stderr.write(
      `harness-rl samples: ${values.input}: invalid input, nothing written\n${shown.join('\n')}\n`,
    );
    return 1;
  }
  const built = buildSamples(trajectories.map(trajectoryArrays), {
    merge,
    advantage,
    loss_agg: lossAgg,
    max_len: maxLen,
  });
  await writeLines(process.stdout, sampleLines(built));
  return 0;
}
