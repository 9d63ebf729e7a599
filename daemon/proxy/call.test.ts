// A call ends once: whichever of answer, fail, cancel or a stream's complete comes first is recorded and
// reaches the harness; every later ending is refused (a real HTTP server and a real SQLite store).
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { DaemonContext } from '../context';
import { DaemonConfig } from '../protocol/config';
import { openStore } from '../store/open';
import type { Store } from '../store/store';
import { Call } from './call';
import { ProxyError } from './errors';
import { Recorder } from './recorder';

let store: Store | undefined;
let server: Server | undefined;
let dir = '';
afterEach(async () => {
  await store?.close();
  store = undefined;
  server?.close();
  server = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** One request to a server whose handler ends its call with `end`; what the client got, and the records. */
async function oneCall(end: (call: Call) => Promise<void>) {
  dir = mkdtempSync(join(tmpdir(), 'harness-rl-call-'));
  const s = await openStore('sqlite', dir);
  store = s;
  const rollout = await s.createRollout({ kind: 'standalone', input: 'x' });
  const ctx: DaemonContext = {
    store: s,
    config: DaemonConfig.parse({}),
    token: 't',
    dataDir: dir,
    baseUrl: () => '',
    log: () => {},
  };
  const recorder = new Recorder(s);
  let done!: Promise<void>;
  server = createServer((req, res: ServerResponse) => {
    req.resume();
    const call = new Call({
      ctx,
      recorder,
      res,
      wire: 'chat',
      errorWire: 'openai',
      scope: {
        rolloutId: rollout.id,
        rollout,
        attemptId: null,
        recording: null,
        upstream: null,
        runConfig: null,
      },
      request: { model: 'm', messages: [] },
      t0: performance.now(),
      tags: [],
    });
    done = end(call);
  });
  await new Promise<void>((r) => server?.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  const answer = await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body: '{}' });
  const text = await answer.text();
  await done;
  return { status: answer.status, text, records: await s.listLlmCalls(rollout.id) };
}

describe('a call ends once', () => {
  it('an answered call refuses a later failure: one ok record, and the harness gets the answer', async () => {
    const refused: boolean[] = [];
    const got = await oneCall(async (call) => {
      refused.push(!(await call.answer(200, { 'content-type': 'application/json' }, '{"ok":1}', {})));
      refused.push(!(await call.fail(new ProxyError(502, 'too late'))));
      refused.push(!call.cancel({}));
    });
    expect(refused).toEqual([false, true, true]);
    expect(got.status).toBe(200);
    expect(got.text).toBe('{"ok":1}');
    expect(got.records.map((r) => r.status)).toEqual(['ok']);
  });

  it('a failed call refuses a later answer: one error record, and the harness gets the error', async () => {
    let second = true;
    const got = await oneCall(async (call) => {
      await call.fail(new ProxyError(503, 'no backend'));
      second = await call.answer(200, {}, 'late', {});
    });
    expect(second).toBe(false);
    expect(got.status).toBe(503);
    expect(got.records.map((r) => [r.status, r.error])).toEqual([['error', 'no backend']]);
  });

  it('a completed stream refuses a second completion and a failure: the record is written once', async () => {
    const results: boolean[] = [];
    const got = await oneCall(async (call) => {
      call.openStream(200, { 'content-type': 'text/event-stream' });
      call.write('data: 1\n\n');
      const first = call.complete(
        () => ({ finish_reason: 'stop' }),
        () => 'data: [DONE]\n\n',
      );
      results.push(
        await call.complete(
          () => ({ status: 'error' }),
          () => 'data: again\n\n',
        ),
      );
      results.push(await call.fail(new ProxyError(502, 'late')));
      results.push(await first);
    });
    expect(results).toEqual([false, false, true]);
    expect(got.text).toBe('data: 1\n\ndata: [DONE]\n\n');
    expect(got.records.map((r) => [r.status, r.finish_reason])).toEqual([['ok', 'stop']]);
  });
});
