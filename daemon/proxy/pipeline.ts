// One proxied LLM call: pick a backend, send the (chat or completions) request with token ids and
// logprobs turned on, hand the answer back in the harness's wire format (streaming through), and
// record it — always before the final byte reaches the harness, failures and cancellations included.

import { WholeResponse } from '../http';
import type { NewLlmCall } from '../protocol/entities';
import { JsonText } from '../store/json-text';
import type { BackendKind } from './assemble';
import type { BackendPool } from './backends';
import type { BridgeMemory } from './bridge';
import type { Call } from './call';
import { type BridgeFn, type Dispatched, dispatch, type FixedTarget, onePool } from './dispatch';
import { ProxyError } from './errors';
import type { Json } from './json';
import type { Output } from './output';
import type { PromptIdsMemo } from './prompt-ids';
import { answerFields, fieldsOf } from './record-fields';
import { AS_REQUESTED, callSampling, type SamplingPlan } from './sampling';
import { type AnswerRecord, finishStream } from './stream';
import { finishWhole } from './whole';

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
  // Copied and set, not `{...opts, extra}`: see fieldsOf on a property after a spread.
  const o: RunOptions = Object.assign({}, opts);
  o.extra = fieldsOf({ sampling: callSampling(opts.body, plan) }, opts.extra ?? {});
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
  const base = fieldsOf(
    {
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
    },
    o.extra ?? {},
    { sampling: callSampling(d.body, plan) },
  );
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
    const res = d.res;
    const ctype = String(res.headers['content-type'] ?? '');
    if (
      !o.stream ||
      res instanceof WholeResponse ||
      res.statusCode !== 200 ||
      !ctype.includes('text/event-stream')
    )
      await finishWhole(call, d, o, base, recordOf);
    else await finishStream(call, { ...d, res }, o, recordOf);
  } finally {
    d.release();
    call.setAbort(null);
  }
}
