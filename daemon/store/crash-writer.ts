// For test/e2e/store-durability.test.ts: records llm calls forever and prints `ack <id> <n>` for each
// call once its write resolved, so the test can kill -9 this process mid-stream and check that every
// acknowledged call survived intact. Usage: tsx crash-writer.ts <store spec> <data dir> <rollout id>
import type { NewLlmCall } from '../protocol/entities';
import { openStore } from './open';

/** The call number n, deterministic so the test can rebuild what must have been stored. */
export function crashCall(rolloutId: string, n: number): NewLlmCall {
  const promptIds = Array.from({ length: 512 + (n % 7) }, (_, i) => (n * 7919 + i * 104729) % 2 ** 31);
  const responseIds = Array.from({ length: 64 + (n % 5) }, (_, i) => (n + i * 31) % 151_000);
  return {
    rollout_id: rolloutId,
    attempt_id: null,
    recording_id: null,
    wire_api: 'chat',
    stream: n % 2 === 0,
    request: { model: 'crash', n, messages: [{ role: 'user', content: `call ${n} ☃` }] },
    backend_request: null,
    response: { n, text: 'y'.repeat(n % 100) },
    prompt_ids: promptIds,
    response_ids: responseIds,
    response_logprobs: responseIds.map((_, i) => -Math.abs(Math.sin(n * 1000 + i))),
    token_source: 'backend',
    bridge: null,
    finish_reason: 'stop',
    usage: { prompt_tokens: promptIds.length, completion_tokens: responseIds.length },
    model: 'crash',
    model_version: 0,
    backend: 'test',
    status: 'ok',
    error: null,
    http_status: 200,
    tags: [],
    queue_ms: null,
    ttft_ms: null,
    total_ms: n,
  };
}

async function main(): Promise<void> {
  const [spec, dataDir, rolloutId] = process.argv.slice(2);
  const store = await openStore(spec, dataDir);
  process.stdout.write('ready\n');
  let n = 0;
  for (;;) {
    // Alternate single calls and small batches: both paths must be durable once they resolve.
    const size = n % 3 === 0 ? 1 + (n % 4) : 1;
    const calls = Array.from({ length: size }, (_, i) => crashCall(rolloutId, n + i));
    const saved = size === 1 ? [await store.recordLlmCall(calls[0])] : await store.recordLlmCalls(calls);
    process.stdout.write(saved.map((c, i) => `ack ${c.id} ${n + i}\n`).join(''));
    n += size;
  }
}

if (process.argv[1]?.endsWith('crash-writer.ts')) {
  main().catch((err) => {
    process.stderr.write(`crash-writer: ${(err as Error).stack}\n`);
    process.exit(1);
  });
}
