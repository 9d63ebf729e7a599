// One proxied LLM call: pick a backend, send the (chat or completions) request with token ids and
// logprobs turned on, hand the answer back in the harness's wire format (streaming through), and
// record it — always before the final byte reaches the harness, failures and cancellations included.

import { readText } from '../http';
import type { NewLlmCall } from '../protocol/entities';
import { JsonText } from '../store/json-text';
import type { BackendKind } from './assemble';
import type { BackendPool } from './backends';
import type { BridgeMemory } from './bridge';
import type { Call } from './call';
import { type BridgeFn, type Dispatched, dispatch, type FixedTarget, onePool, sendFailure } from './dispatch';
import { backendErrorMessage, ProxyError } from './errors';
import { parseAnswer } from './fast-paths';
import type { Json } from './json';
import type { Output } from './output';
import type { PromptIdsMemo } from './prompt-ids';
import { answerFields, fieldsOf } from './record-fields';
import { AS_REQUESTED, callSampling, type SamplingPlan } from './sampling';
import { type AnswerRecord, finishStream } from './stream';
import { completionToChat } from './tito';

export interface RunOptions {
  kind: BackendKind;
  /** The body as the backend should get it (extras already added). */
  body: Json;
  /** Its JSON text, when known (backendText). */
  bodyText?: string | null;
  stream: boolean;
  output: Output;
  target: FixedTarget | null;
  /** Extra fields for the record. */
  extra?: Partial<NewLlmCall>;
  /** Token-in-token-out: bridge chat requests of this rollout through recorded tokens. */
  tito?: BridgeMemory;
  /** Whose sampling parameters `body` carries (absent: the harness's own). */
  sampling?: SamplingPlan;
  /** The rollouts' last prompt ids, which a whole chat answer's may continue. */
  promptIds?: PromptIdsMemo;
}

/** The whole life of one call through the pool or a fixed vLLM/OpenAI target. Never throws. */
export async function runCall(call: Call, pool: BackendPool, opts: RunOptions): Promise<void> {
  const plan = opts.sampling ?? AS_REQUESTED;
  // Until the backend is known, the record's sampling is the body's; then the body it got (bridged or not).
  const o: RunOptions = { ...opts, extra: { sampling: callSampling(opts.body, plan), ...opts.extra } };
  call.stream = o.stream;
  call.onClientClose(() => {
    call.cancel({
      sampling: o.extra?.sampling,
      ...(call.snapshot?.() ?? { backend_request: o.body, ...o.extra }),
    });
  });
  const scope = call.scope;
  const memory = o.tito;
  const bridge: BridgeFn | undefined =
    memory && scope && o.kind === 'chat'
      ? (b, sent) => memory.decide(scope.rolloutId, scope.attemptId, sent, b.root, b.maxModelLen)
      : undefined;
  let d: Dispatched;
  try {
    d = await dispatch(call, o.target ? onePool(o.target) : pool, o.kind, o.body, bridge, o.bodyText);
  } catch (e) {
    const err = e instanceof ProxyError ? e : new ProxyError(502, String(e));
    if (err.status === 499) return;
    await call.fail(
      err,
      { ...(call.snapshot?.() ?? { backend_request: o.body, model: o.body.model ?? null }), ...o.extra },
      o.output,
    );
    return;
  }
  const base: Partial<NewLlmCall> = {
    backend_request: new JsonText(d.payload, d.body),
    model: typeof d.body.model === 'string' ? d.body.model : null,
    model_version: d.modelVersion,
    backend: d.backendName,
    queue_ms: d.queueMs,
    bridge: d.bridged
      ? {
          reused_tokens: d.bridged.reused_tokens,
          prompt_tokens: d.bridged.prompt_ids.length,
          ...d.bridged.note,
        }
      : d.fallback,
    ...o.extra,
    sampling: callSampling(d.body, plan),
  };
  const source = d.bridged ? 'bridge' : 'backend';
  const asked = o.target?.extras ?? true;
  // Both answer paths, whole and streamed, end here: the record's fields are built in this one place.
  const recordOf: AnswerRecord = (json, respond, times, done) => {
    // Before `respond`: the output strips the extras in place.
    const answered = answerFields(json, o.kind, source, asked);
    call.choices = answered.choices;
    if (done && memory && scope && json) memory.remember(scope.rolloutId, scope.attemptId, d.chatBody, json);
    return fieldsOf(base, answered.fields, { response: respond(json) }, times());
  };
  call.snapshot = () => base;
  try {
    const ctype = String(d.res.headers['content-type'] ?? '');
    if (!o.stream || d.res.statusCode !== 200 || !ctype.includes('text/event-stream'))
      await finishWhole(call, d, o, base, recordOf);
    else await finishStream(call, d, o, recordOf);
  } finally {
    d.release();
    call.setAbort(null);
  }
}

async function finishWhole(
  call: Call,
  d: Dispatched,
  o: RunOptions,
  base: Partial<NewLlmCall>,
  recordOf: AnswerRecord,
): Promise<void> {
  let text: string;
  try {
    text = await readText(d.res);
  } catch (e) {
    if (call.settled) return;
    await call.fail(sendFailure(e, d.backendName), base, o.output);
    return;
  }
  if (call.settled) return;
  const status = d.res.statusCode ?? 502;
  // A bridged call's prompt ids are the bridge's own, and a harness that will not see vLLM's logprob
  // entries needs only their logprobs: neither is made into objects (the bulk of an answer's bytes).
  const scope = call.scope;
  let json = parseAnswer(text, {
    kind: o.kind,
    bridged: d.bridged !== null,
    entries: o.output.logprobEntries,
    prompt:
      o.promptIds && scope && status === 200 ? { memo: o.promptIds, rolloutId: scope.rolloutId } : undefined,
  });
  if (status >= 400) {
    const message = `backend ${d.backendName} answered ${status}: ${backendErrorMessage(text)}`;
    await call.fail(
      new ProxyError(status >= 500 ? 502 : status, message, null, 'backend_error'),
      {
        ...base,
        response: json ?? text.slice(0, 10_000),
      },
      o.output,
    );
    return;
  }
  // vLLM answers a stream request with an event stream, JSON only for errors (>= 400, above) and
  // for requests without `stream` (vllm/entrypoints/openai/chat_completion/api_router.py:69-82): a
  // 200 JSON answer means the backend ignored `stream`. The harness asked for events and its client
  // cannot read JSON there, so it is a recorded 502 rather than an answer in the wrong shape.
  if (o.stream) {
    await call.fail(
      new ProxyError(
        502,
        `backend ${d.backendName} answered ${d.res.headers['content-type'] ?? 'no content type'} instead of an event stream to a streamed request: ${text.slice(0, 200)}`,
        null,
        'backend_not_streamed',
      ),
      { ...base, response: json ?? text.slice(0, 10_000) },
      o.output,
    );
    return;
  }
  if (!json || typeof json !== 'object' || !Array.isArray(json.choices)) {
    const what = 'a response that is not a completion';
    await call.fail(
      new ProxyError(
        502,
        `backend ${d.backendName} returned ${what}: ${text.slice(0, 200)}`,
        null,
        'backend_garbage',
      ),
      { ...base, response: json ?? text.slice(0, 10_000) },
      o.output,
    );
    return;
  }
  if (d.bridged)
    json = completionToChat(json, {
      model: String(d.chatBody.model),
      prompt_ids: d.bridged.prompt_ids,
      thinking: d.bridged.thinking,
    });
  let answer = '';
  let fields: Partial<NewLlmCall>;
  try {
    fields = recordOf(
      json,
      (j) => {
        const out = o.output.finish(j);
        answer = JSON.stringify(out);
        return new JsonText(answer, out);
      },
      () => {
        const total = call.elapsed();
        return { http_status: 200, ttft_ms: total, total_ms: total };
      },
      true,
    );
  } catch (e) {
    await call.fail(
      new ProxyError(502, `could not translate the backend response: ${String(e)}`),
      base,
      o.output,
    );
    return;
  }
  await call.answer(200, { 'content-type': 'application/json' }, answer, fields, o.output);
}
