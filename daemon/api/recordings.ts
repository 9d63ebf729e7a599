// The routes of recordings: start one (a scoped key for a person's own agent), list, show with its
// calls, stop. Part of the route table in routes.ts.
import { z } from 'zod';
import { holdSecrets, splitSecrets } from '../config/held-secrets';
import { CreatedRecording, CreateRecordingBody, EmptyBody, IdParams, RecordingDetail } from '../protocol/api';
import { Recording } from '../protocol/entities';
import { notFound } from './errors';
import { type AnyRoute, route } from './route';

export const recordingRoutes: AnyRoute[] = [
  route({
    method: 'POST',
    path: '/api/recordings',
    summary: 'start recording a session: get a scoped key and base URLs to point an agent at',
    auth: 'token',
    body: CreateRecordingBody,
    response: CreatedRecording,
    status: 201,
    handler: async ({ ctx, body }) => {
      const { value: upstream, held } = splitSecrets(body.upstream ?? { kind: 'reference' });
      const recording = await ctx.store.createRecording({
        name: body.name ?? `recording ${new Date().toISOString()}`,
        upstream,
        tito: body.tito,
        scoped: body.scoped,
      });
      holdSecrets(ctx.dataDir, `recording:${recording.id}`, held);
      // Recording keys work on the unscoped proxy paths: each records into its own recording.
      const base = ctx.baseUrl();
      return { ...recording, openai_base_url: `${base}/v1`, anthropic_base_url: base };
    },
  }),
  route({
    method: 'GET',
    path: '/api/recordings',
    summary: 'recordings',
    auth: 'token',
    response: z.array(Recording),
    handler: async ({ ctx }) => ctx.store.listRecordings(),
  }),
  route({
    method: 'GET',
    path: '/api/recordings/:id',
    summary: 'a recording with its calls and the tool runs its agent reported',
    auth: 'token',
    params: IdParams,
    response: RecordingDetail,
    handler: async ({ ctx, params }) => {
      const recording = await ctx.store.getRecording(params.id);
      if (!recording) throw notFound('recording', params.id);
      const [calls, tool_runs] = await Promise.all([
        ctx.store.listRecordingCalls(recording.id),
        ctx.store.listToolRuns(recording.rollout_id),
      ]);
      return { ...recording, calls, tool_runs };
    },
  }),
  route({
    method: 'POST',
    path: '/api/recordings/:id/stop',
    summary: 'stop a recording',
    auth: 'token',
    params: IdParams,
    body: EmptyBody,
    response: Recording,
    handler: async ({ ctx, params }) => {
      const recording = await ctx.store.getRecording(params.id);
      if (!recording) throw notFound('recording', params.id);
      return ctx.store.stopRecording(params.id);
    },
  }),
];
