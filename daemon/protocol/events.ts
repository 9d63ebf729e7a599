// Live events streamed on GET /api/events (WebSocket, one JSON object per message).
import { z } from 'zod';
import {
  Group,
  Id,
  LlmCall,
  NodeInfo,
  Recording,
  Reward,
  Rollout,
  Run,
  RunMetrics,
  RunWorkers,
  ToolRun,
} from './entities';
import { Evaluation, EvaluationProgress } from './evaluation';
import { Candidate, CandidateChange, Evolution } from './evolution';

/** An llm call as announced live: everything but the bulky request/response bodies and token arrays. */
export const LlmCallSummary = LlmCall.omit({
  request: true,
  backend_request: true,
  response: true,
  prompt_ids: true,
  response_ids: true,
  response_logprobs: true,
}).extend({ prompt_tokens: z.number().int().nullable(), response_tokens: z.number().int().nullable() });

export const DaemonEvent = z.discriminatedUnion('type', [
  z.object({ type: z.literal('run'), run: Run }),
  z.object({ type: z.literal('run_metrics'), metrics: RunMetrics }),
  z.object({ type: z.literal('group'), group: Group }),
  z.object({ type: z.literal('rollout'), rollout: Rollout }),
  z.object({ type: z.literal('llm_call'), call: LlmCallSummary }),
  z.object({ type: z.literal('reward'), reward: Reward }),
  z.object({ type: z.literal('recording'), recording: Recording }),
  z.object({ type: z.literal('node'), node: NodeInfo }),
  z.object({ type: z.literal('model_version'), run_id: Id.nullable(), version: z.number().int() }),
  z.object({ type: z.literal('workers'), workers: RunWorkers }),
  z.object({ type: z.literal('tool_runs'), rollout_id: Id, tool_runs: z.array(ToolRun) }),
  /** Created, or its status, model version or figures changed (`tasks`, the per-task rows: GET it). */
  z.object({ type: z.literal('evaluation'), evaluation: Evaluation.omit({ tasks: true }) }),
  z.object({ type: z.literal('evaluation_progress'), progress: EvaluationProgress }),
  /** Created, or its status or result changed. */
  z.object({ type: z.literal('evolution'), evolution: Evolution }),
  /** A candidate stored or changed (its patch: GET the evolution). */
  z.object({ type: z.literal('candidate'), change: CandidateChange, candidate: Candidate }),
]);

export type LlmCallSummary = z.infer<typeof LlmCallSummary>;
export type DaemonEvent = z.infer<typeof DaemonEvent>;
export type DaemonEventType = DaemonEvent['type'];
