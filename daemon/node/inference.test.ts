// The inference role keeps the newest --keep-weights received copies of a run's weights on disk (full
// weights are GiBs a version), here with the reference engine as its backend.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeWeights, sendWeightFiles } from '../cluster/weights';
import { type ReferenceEngine, startReferenceEngine } from '../engine';
import type { NodeMessage } from '../protocol/node';
import { InferenceRole } from './inference';

let dir: string;
let source: ReferenceEngine;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'harness-rl-inference-'));
  source = await startReferenceEngine({ dataDir: join(dir, 'source'), resume: false });
  await source.checkpoint();
});
afterAll(async () => {
  await source.close();
  await rm(dir, { recursive: true, force: true });
});

describe('received weights on an inference node', () => {
  it('are pruned to the newest --keep-weights versions of the run once a new one is loaded', async () => {
    const role = new InferenceRole({
      dataDir: join(dir, 'node'),
      engine: 'reference',
      keepWeights: 2,
      log: () => {},
    });
    await role.start();
    const replies: NodeMessage[] = [];
    const peer = { closed: false, send: async (h: NodeMessage) => void replies.push(h) };
    const files = await describeWeights(source.checkpointDir, 0, 'reference', ['v0.json', 'v0.bin']);
    try {
      for (const version of [1, 2, 3]) {
        // Not on this node's filesystem: the node loads the copy it received.
        const weights = { ...files, version, path: join(dir, 'on-the-trainer-machine') };
        const id = `w${version}`;
        await sendWeightFiles(
          async (header, payload) => role.handle({ header, payload: Buffer.from(payload) }, peer),
          id,
          weights,
          source.checkpointDir,
        );
        role.handle(
          {
            header: {
              t: 'weights_load',
              id,
              key: `run_a:${version}`,
              run_id: 'run_a',
              model: 'reference',
              weights,
            },
            payload: Buffer.alloc(0),
          },
          peer,
        );
        const deadline = Date.now() + 20_000;
        while (!replies.some((r) => 'id' in r && r.id === id) && Date.now() < deadline)
          await new Promise((r) => setTimeout(r, 20));
        expect(replies.find((r) => 'id' in r && r.id === id)).toMatchObject({ t: 'weights_loaded', version });
      }
      expect((await readdir(join(dir, 'node', 'weights', 'run_a'))).sort()).toEqual(['v2', 'v3']);
      expect(role.health().versions).toEqual({ run_a: 3 });
    } finally {
      await role.close();
    }
  }, 60_000);
});
