// The routes of harness evolution: start one from a run config with an `evolve:` block, list, show
// (with its candidate tree, verdicts and diffs), stop, and a candidate's files (for adopting it).
// Part of the route table in routes.ts.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { z } from 'zod';
import { candidateTree } from '../evolve/candidate-harness';
import { unifiedDiff } from '../evolve/diff';
import { EmptyBody, IdParams } from '../protocol/api';
import { Id, Page } from '../protocol/entities';
import { CreateEvolutionBody, EvaluationQuery } from '../protocol/evaluation';
import { CandidateFiles, Evolution, EvolutionDetail } from '../protocol/evolution';
import type { StoredEvolution } from '../store/store';
import { ApiError, notFound } from './errors';
import { oneHarness } from './evaluations';
import { type AnyRoute, route } from './route';
import { settleRunConfig } from './run-config';

const CandidateParams = z.object({ id: Id, hash: z.string().regex(/^[0-9a-f]{24}$/) }).strict();

const shown = ({ config: _c, base_dir: _b, ...e }: StoredEvolution): Evolution => e;

export const evolutionRoutes: AnyRoute[] = [
  route({
    method: 'POST',
    path: '/api/evolutions',
    summary:
      'evolve a harness: propose, regularise, evaluate and select candidates (the evolve block of the config)',
    auth: 'token',
    body: CreateEvolutionBody,
    response: Evolution,
    status: 201,
    handler: async ({ ctx, body }) => {
      const base = body.base_dir === undefined ? undefined : resolve(body.base_dir);
      // An evolution can start from an evolved candidate (its files are the root) and a run's weights.
      oneHarness(body);
      const config = await settleRunConfig(ctx, body.config);
      // Its folder is where Adopt Candidate writes: the config's harness folder, not the daemon's copy of
      // a candidate (the loop reads the root from the candidate itself).
      const dir = resolve(base ?? '.', body.harness_dir ?? body.config.harness.dir ?? '.');
      if (!existsSync(dir))
        throw new ApiError(400, 'invalid_request', `no harness folder ${dir}`, 'harness_dir');
      const e = await ctx.store.createEvolution({
        name: `evolve ${body.config.name}`,
        harness_dir: dir,
        config,
        base_dir: base ?? null,
      });
      await ctx.evolutions?.start(e.id);
      return shown(e);
    },
  }),
  route({
    method: 'GET',
    path: '/api/evolutions',
    summary: 'evolutions, newest first (paged)',
    auth: 'token',
    query: EvaluationQuery,
    response: Page(Evolution),
    handler: async ({ ctx, query }) => {
      const page = await ctx.store.listEvolutions(query);
      return { ...page, items: page.items.map(shown) };
    },
  }),
  route({
    method: 'GET',
    path: '/api/evolutions/:id',
    summary: 'an evolution with its candidate tree: scores, intervals, tokens, novelty, verdicts, diffs',
    auth: 'token',
    params: IdParams,
    response: EvolutionDetail,
    handler: async ({ ctx, params }) => {
      const e = await ctx.store.getEvolution(params.id);
      if (!e) throw notFound('evolution', params.id);
      const candidates = (await ctx.store.listCandidates(e.id)).map(({ patch, ...c }) => ({
        ...c,
        diff: unifiedDiff(patch),
      }));
      return { ...shown(e), candidates };
    },
  }),
  route({
    method: 'GET',
    path: '/api/evolutions/:id/candidates/:hash/files',
    summary: "a candidate's files (its ancestors' patches applied), to open or adopt it",
    auth: 'token',
    params: CandidateParams,
    response: CandidateFiles,
    handler: async ({ ctx, params }) => {
      const candidates = await ctx.store.listCandidates(params.id);
      if (!candidates.some((c) => c.hash === params.hash)) throw notFound('candidate', params.hash, 'hash');
      return { hash: params.hash, files: Object.fromEntries(candidateTree(candidates, params.hash)) };
    },
  }),
  route({
    method: 'POST',
    path: '/api/evolutions/:id/resume',
    summary:
      'go on with an evolution that is not running (interrupted by a daemon stop, or stopped) from what it stored: candidates already evaluated are not evaluated again',
    auth: 'token',
    params: IdParams,
    body: EmptyBody,
    response: Evolution,
    handler: async ({ ctx, params }) => {
      const e = await ctx.store.getEvolution(params.id);
      if (!e) throw notFound('evolution', params.id);
      if (e.status === 'running' || e.status === 'finished')
        throw new ApiError(409, 'conflict', `evolution ${e.id} is ${e.status}: nothing to resume`, 'status');
      await ctx.evolutions?.resume(e.id);
      return shown((await ctx.store.getEvolution(e.id)) ?? e);
    },
  }),
  route({
    method: 'POST',
    path: '/api/evolutions/:id/stop',
    summary: 'stop an evolution (its running evaluation is left to finish)',
    auth: 'token',
    params: IdParams,
    body: EmptyBody,
    response: Evolution,
    handler: async ({ ctx, params }) => {
      const e = await ctx.store.getEvolution(params.id);
      if (!e) throw notFound('evolution', params.id);
      await ctx.evolutions?.stop(e.id);
      return shown((await ctx.store.getEvolution(e.id)) ?? e);
    },
  }),
];
