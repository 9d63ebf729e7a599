// The proxy's per-chunk work on a stream, without sockets: fake-vllm's SSE bytes for one long chat
// answer (recorded once, as node:http delivered them) fed through the relay (StreamRelay.read: SSE
// → harness frames) and the record's assembly at the end, in this process.
//   proxy.stream_chunk  us_per_chunk: with the chunk scanner (what the proxy runs);
//                       parsed_us_per_chunk: every chunk through JSON.parse (the scanner's fallback);
//                       end_us_per_call: the assembled answer and its token fields after the stream
// Cases: `plain` (the harness asked for no extras: logprobs and ids stripped from every frame) and
// `extras` (it asked for logprobs and token ids: frames go out whole, logprob entries kept), and
// `messages` (Anthropic Messages through the translator, which takes each chunk as an object).
// CPU time (this process's user + system: other load on the machine does not count), median over
// alternating rounds, so drift hits both paths alike.
import { Agent, request } from 'node:http';
import { loadavg } from 'node:os';
import { nativeOutput, type Output, translatedOutput } from '../daemon/proxy/output';
import { tokensOf } from '../daemon/proxy/record-fields';
import { StreamRelay } from '../daemon/proxy/relay';
import { messagesTranslator } from '../daemon/proxy/translate/messages';
import { child, emit, quantile, root, round } from './emit';

const FAKE = `
import { startFakeVllm } from '${root}test/fixtures/fake-vllm.ts';
const f = await startFakeVllm({ model: 'toy' });
process.stdout.write(JSON.stringify({ url: f.url }) + '\\n');
`;

/** The chunks of one streamed answer of fake-vllm, as the proxy asks for it (ids and logprobs on). */
async function record(): Promise<Buffer[]> {
  const fake = await child(FAKE);
  const agent = new Agent({ keepAlive: false });
  const body = JSON.stringify({
    model: 'toy',
    messages: [{ role: 'user', content: 'x'.repeat(1000) }],
    max_tokens: 2000,
    stream: true,
    return_token_ids: true,
    logprobs: true,
  });
  try {
    return await new Promise<Buffer[]>((resolve, reject) => {
      const req = request(
        `${fake.info.url}/chat/completions`,
        { method: 'POST', agent, headers: { 'content-type': 'application/json' } },
        (res) => {
          const bufs: Buffer[] = [];
          res.on('data', (b: Buffer) => bufs.push(b));
          res.on('end', () => resolve(bufs));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  } finally {
    agent.destroy();
    fake.proc.kill();
  }
}

const cpuUs = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

/** One stream through the relay; the µs it took, the chunks, and the µs of the record's assembly. */
function relayOnce(bufs: Buffer[], outputOf: () => Output, parsedOnly: boolean) {
  const output = outputOf();
  const open = output.open();
  const t0 = cpuUs();
  const relay = new StreamRelay({
    kind: 'chat',
    out: open,
    scan: !parsedOnly,
    conv: null,
    logprobEntries: output.logprobEntries,
    backendName: 'bench',
    elapsed: () => 0,
  });
  let bytes = 0;
  for (const b of bufs) {
    if (relay.read(b) !== null) throw new Error('relay failed');
    bytes += relay.take().length; // one write per read, as the proxy's per-turn flush does at best
  }
  if (relay.finish() !== null) throw new Error('relay failed');
  const t1 = cpuUs();
  const json = relay.asm.result();
  const tokens = tokensOf(json, 'chat');
  open.assembled(relay.asm, json);
  const t2 = cpuUs();
  if (!relay.sawDone || !tokens.response_ids) throw new Error('incomplete stream');
  return {
    relayUs: t1 - t0,
    endUs: t2 - t1,
    chunks: relay.asm.chunks,
    scanned: relay.scanned,
    bytes,
  };
}

export default async function main(): Promise<void> {
  const bufs = await record();
  const rounds = Number(process.env.BENCH_ROUNDS ?? 60);
  const messages = messagesTranslator.parse({
    model: 'toy',
    max_tokens: 2000,
    stream: true,
    messages: [{ role: 'user', content: 'hi' }],
  });
  const cases: [string, () => Output][] = [
    ['plain', () => nativeOutput({ model: 'toy', stream: true })],
    ['extras', () => nativeOutput({ model: 'toy', stream: true, logprobs: true, return_token_ids: true })],
    ['messages', () => translatedOutput(messagesTranslator, messages)],
  ];
  for (const [, outputOf] of cases) {
    // The same frames either way (the test suite checks it on arbitrary chunks; this is a smoke check).
    const a = relayOnce(bufs, outputOf, false);
    const b = relayOnce(bufs, outputOf, true);
    if (a.bytes !== b.bytes)
      throw new Error(`the two paths sent different frames (${a.bytes} vs ${b.bytes})`);
  }
  // Warm-up and rounds alternate the cases and the paths, so JIT state and heap growth (and drift)
  // hit all alike.
  const times = cases.map(() => ({ fast: [] as number[], parsed: [] as number[], end: [] as number[] }));
  const last = cases.map(() => ({ chunks: 0, scanned: 0 }));
  for (let i = 0; i < 30 + rounds; i++)
    for (const [k, [, outputOf]] of cases.entries()) {
      const f = relayOnce(bufs, outputOf, false);
      const p = relayOnce(bufs, outputOf, true);
      last[k] = f;
      if (i < 30) continue;
      times[k].fast.push(f.relayUs / f.chunks);
      times[k].parsed.push(p.relayUs / p.chunks);
      times[k].end.push(f.endUs);
    }
  for (const [k, [name]] of cases.entries()) {
    const { fast, parsed, end } = times[k];
    emit('proxy.stream_chunk', {
      case: name,
      chunks: last[k].chunks,
      scanned_share: round(last[k].scanned / last[k].chunks),
      reads: bufs.length,
      us_per_chunk: round(quantile(fast, 0.5), 2),
      parsed_us_per_chunk: round(quantile(parsed, 0.5), 2),
      speedup: round(quantile(parsed, 0.5) / quantile(fast, 0.5), 2),
      end_us_per_call: round(quantile(end, 0.5), 0),
      loadavg_1m: round(loadavg()[0], 2),
    });
  }
}
