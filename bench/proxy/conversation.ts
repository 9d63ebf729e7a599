// proxy.conversation 16 agent conversations at once, each resending its growing history (12 turns,
//                  then anew), on rollouts with the token bridge on and off: calls/s, the proxy's CPU
//                  per call and the share of calls bridged (no pass-through can bridge)
import { emit, round } from '../emit';
import { converse, type Rate } from './drive';
import type { Goals } from './goals';
import { inRounds, load, type Measured, type Phase } from './measure';
import { CONVERSATIONS, type Conversations, type Proxied } from './targets';

/** Every conversation of `targets` at once for `ms`: calls/s. */
async function converseAll(targets: Conversations['bridged'], ms: number): Promise<Rate> {
  const end = performance.now() + ms;
  const calls = (await Promise.all(targets.map((t) => converse(t, end)))).reduce((a, b) => a + b, 0);
  return { rate: (calls * 1000) / ms, calls, tokens: 0 };
}

/** One proxy's line, with the share of its bridged rollouts' calls the bridge served. */
async function emitConversation(p: Phase, proxy: Proxied, bridged: Measured, native: Measured) {
  const c = proxy.conversations as Conversations;
  const ids = c.bridged.map((t) => t.id).join(',');
  const sources = (await (await fetch(`${c.origin}/bench/token-sources?rollouts=${ids}`)).json()) as Record<
    string,
    number
  >;
  const all = Object.values(sources).reduce((a, b) => a + b, 0);
  const goal = p.goals.get(proxy.store) as Goals;
  goal.bridged = round(bridged.cpuUs / bridged.calls, 0);
  goal.native = round(native.cpuUs / native.calls, 0);
  emit('proxy.conversation', {
    store: proxy.store,
    conversations: CONVERSATIONS,
    rounds: p.rounds,
    bridged_rps: round(bridged.rate, 1),
    native_rps: round(native.rate, 1),
    bridged_cpu_us_per_call: round(bridged.cpuUs / bridged.calls, 0),
    native_cpu_us_per_call: round(native.cpuUs / native.calls, 0),
    bridged_share: round((sources.bridge ?? 0) / (all || 1)),
    ...load(),
  });
}

export async function conversation(p: Phase): Promise<void> {
  // Every proxy's bridged and native rollouts in the same rounds (rotating order, BENCH_ROUNDS): a
  // change is judged against BENCH_BASELINE's build minute by minute, not phase after phase.
  const withConversations = p.t.proxies.filter((x) => x.conversations?.bridged.length);
  const results = await inRounds(
    p,
    withConversations.flatMap((x) => {
      const c = x.conversations as Conversations;
      return [
        {
          proc: x.proc,
          fn: () => converseAll(c.bridged, p.ms),
          window: x.windows,
          phase: 'conversation_bridged',
        },
        {
          proc: x.proc,
          fn: () => converseAll(c.native, p.ms),
          window: x.windows,
          phase: 'conversation_native',
        },
      ];
    }),
    'conversation',
  );
  for (const [i, x] of withConversations.entries())
    await emitConversation(p, x, results[2 * i], results[2 * i + 1]);
}
