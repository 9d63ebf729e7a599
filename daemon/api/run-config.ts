// What the daemon settles in a run config before it stores it (runs, evaluations, evolutions alike):
// an evolved `harness.candidate` written out as the harness folder, and `model.from_run` pinned to a
// model version whose checkpoint it copied. A 400 names the field when either cannot be.
import { keepStartingWeights } from '../cluster/starting-weights';
import type { DaemonContext } from '../context';
import { CandidateError, withCandidateHarness } from '../evolve/candidate-harness';
import type { RunConfig } from '../protocol/config';
import { ApiError } from './errors';

async function withCandidate(ctx: DaemonContext, config: RunConfig): Promise<RunConfig> {
  try {
    return await withCandidateHarness(ctx.store, ctx.dataDir, config);
  } catch (err) {
    if (err instanceof CandidateError)
      throw new ApiError(400, 'invalid_candidate', err.message, 'config.harness.candidate');
    throw err;
  }
}

async function withStartingWeights(ctx: DaemonContext, config: RunConfig): Promise<RunConfig> {
  const from = config.model.from_run;
  if (!from) return config;
  const field = 'config.model.from_run';
  if (config.trainer.endpoint !== 'reference')
    throw new ApiError(
      400,
      'invalid_request',
      "model.from_run starts from the built-in engine's checkpoint: it needs trainer: reference",
      field,
    );
  const run = await ctx.store.getRun(from.run);
  if (!run) throw new ApiError(400, 'invalid_request', `no run ${from.run}`, `${field}.run`);
  const version = from.version ?? run.model_version;
  try {
    await keepStartingWeights(ctx.dataDir, run.id, version);
  } catch (err) {
    throw new ApiError(400, 'invalid_request', (err as Error).message, `${field}.version`);
  }
  return { ...config, model: { ...config.model, from_run: { run: run.id, version } } };
}

/** `config` as the daemon stores and runs it (see the header); `harnessGiven`: its folder is chosen apart. */
export async function settleRunConfig(
  ctx: DaemonContext,
  config: RunConfig,
  harnessGiven = false,
): Promise<RunConfig> {
  return withStartingWeights(ctx, harnessGiven ? config : await withCandidate(ctx, config));
}
