// The floor of a recording proxy built from the daemon's own pieces, for bench/proxy-floor.ts: node:http
// in, the daemon's HTTP client (daemon/http.ts) out, the request parsed and the proxy's keys appended
// to its text, the answer scanned (answer-scan.ts), its record fields built, the harness's answer
// stripped and serialised; with RECORD=on the call is stored through the proxy's Recorder in a real
// SQLite store, its request, backend request and answer as their texts. No scope, bridge, policy,
// pool or per-call state: what a proxy that keeps the tokens cannot avoid. Bundled like the daemon;
// prints {url, key} on its first line.
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseJsonBody } from '../../daemon/api/body';
import { readText, sendWhole } from '../../daemon/http';
import type { NewLlmCall } from '../../daemon/protocol/entities';
import { parseChatAnswer } from '../../daemon/proxy/answer-scan';
import { backendBody, backendText } from '../../daemon/proxy/dispatch';
import type { Json } from '../../daemon/proxy/json';
import { nativeOutput } from '../../daemon/proxy/output';
import { answerFields } from '../../daemon/proxy/record-fields';
import { Recorder } from '../../daemon/proxy/recorder';
import { JsonText } from '../../daemon/store/json-text';
import { openStore } from '../../daemon/store/open';

const record = process.env.RECORD === 'on';
const store = await openStore('sqlite', mkdtempSync(join(tmpdir(), 'harness-rl-bench-floor-')));
const rollout = await store.createRollout({ kind: 'standalone' });
const attempt = await store.startAttempt(rollout.id, 'bench');
const recorder = new Recorder(store);
const backend = `${process.env.BACKEND}/chat/completions`;

async function call(raw: string, t0: number): Promise<string> {
  const body = (parseJsonBody(raw) as { value: Json }).value;
  const sent = backendBody(body, 'chat', true);
  const payload = backendText(raw, body, sent) ?? JSON.stringify(sent);
  const text = await readText(await sendWhole(backend, { body: payload, timeoutMs: 60_000 }));
  const json = parseChatAnswer(text) as Json;
  const answered = answerFields(json, 'chat', 'backend', true);
  const out = nativeOutput(body).finish(json);
  const answer = JSON.stringify(out);
  if (record) {
    const ms = performance.now() - t0;
    const fields: Partial<NewLlmCall> = {
      rollout_id: rollout.id,
      attempt_id: attempt.id,
      recording_id: null,
      wire_api: 'chat',
      stream: false,
      request: new JsonText(raw, body),
      backend_request: new JsonText(payload, sent),
      response: new JsonText(answer, out),
      bridge: null,
      sampling: null,
      model: String(body.model),
      model_version: null,
      backend: process.env.BACKEND ?? null,
      error: null,
      http_status: 200,
      tags: [],
      queue_ms: 0,
      ttft_ms: ms,
      total_ms: ms,
    };
    await recorder.record(Object.assign(fields, answered.fields) as NewLlmCall);
  }
  return answer;
}

const server = createServer((req, res) => {
  const parts: Buffer[] = [];
  req.on('data', (c: Buffer) => parts.push(c));
  req.on('end', () => {
    const raw = (parts.length === 1 ? parts[0] : Buffer.concat(parts)).toString('utf8');
    call(raw, performance.now()).then(
      (answer) => {
        res.writeHead(200, {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(answer),
        });
        res.end(answer);
      },
      (e) => {
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(String(e));
      },
    );
  });
});
// The client's sockets idle while the other targets are measured (node's 5 s limit would reset them).
server.keepAliveTimeout = 60_000;
process.on('SIGINT', () => store.close().finally(() => process.exit(0)));
server.listen(0, '127.0.0.1', () => {
  const a = server.address() as { port: number };
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${a.port}/v1`, key: 'floor' })}\n`);
});
