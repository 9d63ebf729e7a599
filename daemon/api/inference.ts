// The routes of what serves the models: one llm call whole, model versions, the proxy's backends and
// the inference and trainer nodes. Part of the route table in routes.ts.
import { z } from 'zod';
import { BackendStatus, IdParams, ModelVersionQuery } from '../protocol/api';
import { LlmCall, ModelVersion, NodeInfo } from '../protocol/entities';
import { notFound } from './errors';
import { type AnyRoute, route } from './route';

export const inferenceRoutes: AnyRoute[] = [
  route({
    method: 'GET',
    path: '/api/llm-calls/:id',
    summary: 'one llm call with its bodies, token ids and logprobs',
    auth: 'token',
    params: IdParams,
    response: LlmCall,
    handler: async ({ ctx, params }) => {
      const call = await ctx.store.getLlmCall(params.id);
      if (!call) throw notFound('llm call', params.id);
      return call;
    },
  }),
  route({
    method: 'GET',
    path: '/api/model-versions',
    summary: 'model versions (of one run with ?run_id=)',
    auth: 'token',
    query: ModelVersionQuery,
    response: z.array(ModelVersion),
    handler: async ({ ctx, query }) => ctx.store.listModelVersions(query.run_id),
  }),
  route({
    method: 'GET',
    path: '/api/backends',
    summary: "the proxy's inference backends: which run each serves, version, load and health",
    auth: 'token',
    response: z.array(BackendStatus),
    handler: async ({ ctx }) => ctx.backends?.() ?? [],
  }),
  route({
    method: 'GET',
    path: '/api/nodes',
    summary: 'inference and trainer nodes with their health and versions',
    auth: 'token',
    response: z.array(NodeInfo),
    handler: async ({ ctx }) => ctx.store.listNodes(),
  }),
];
