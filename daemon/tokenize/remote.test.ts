// Tokenizer files fetched from a node: checked against the SHA-256 the node lists, kept by hash, and
// a file already kept is not asked for again.
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { type BackendResponse, registerTransport } from '../http';
import { MODEL_FILES_PATH } from '../protocol/node';
import { fetchModelFiles } from './remote';

const ROOT = 'ws://node.test:1';
const sha = (text: string) => createHash('sha256').update(text).digest('hex');
const files: Record<string, string> = {
  'tokenizer.json': JSON.stringify({ model: { type: 'BPE', vocab: {} } }),
  'tokenizer_config.json': JSON.stringify({ chat_template: '{{ messages }}' }),
};

/** A node that lists `files` and sends `sent` (default: the same), counting what it is asked. */
function fakeNode(sent: Record<string, string> = files): string[] {
  const asked: string[] = [];
  const answer = (status: number, text: string): BackendResponse => {
    const res = Readable.from([Buffer.from(text)]) as unknown as BackendResponse;
    Object.assign(res, { statusCode: status, headers: {}, complete: true });
    return res;
  };
  unregister = registerTransport(ROOT, {
    send: async (path) => {
      asked.push(path);
      const name = path.split('?')[0].slice(MODEL_FILES_PATH.length + 1);
      if (!name) {
        const listed = Object.entries(files).map(([n, t]) => ({ name: n, size: t.length, sha256: sha(t) }));
        return answer(200, JSON.stringify({ model: 'm', files: listed }));
      }
      return answer(200, sent[name]);
    },
  });
  return asked;
}
let unregister = () => {};
afterEach(() => unregister());

describe('fetchModelFiles', () => {
  it('keeps each file by its hash and asks only for the manifest once they are kept', async () => {
    const cache = mkdtempSync(join(tmpdir(), 'harness-rl-model-files-'));
    const asked = fakeNode();
    const first = await fetchModelFiles(ROOT, 'm', cache);
    expect(first?.files.config).toEqual({ chat_template: '{{ messages }}' });
    expect(readdirSync(cache).sort()).toEqual(Object.values(files).map(sha).sort());
    expect(asked).toHaveLength(3);
    const again = await fetchModelFiles(ROOT, 'm', cache);
    expect(again?.hash).toBe(first?.hash);
    expect(asked).toHaveLength(4);
  });

  it('refuses a file whose bytes are not the ones the node listed, and keeps nothing of it', async () => {
    const cache = mkdtempSync(join(tmpdir(), 'harness-rl-model-files-'));
    fakeNode({ ...files, 'tokenizer.json': '{"changed": true}' });
    await expect(fetchModelFiles(ROOT, 'm', cache)).rejects.toThrow(/tokenizer.json: its SHA-256 is not/);
    expect(readdirSync(cache)).not.toContain(sha(files['tokenizer.json']));
  });

  it('past its byte budget the cache drops the files used longest ago, never those of the model fetched', async () => {
    const cache = mkdtempSync(join(tmpdir(), 'harness-rl-model-files-'));
    // Another model's file, kept earlier.
    writeFileSync(join(cache, sha('other')), 'other');
    utimesSync(join(cache, sha('other')), new Date(0), new Date(0));
    fakeNode();
    await fetchModelFiles(ROOT, 'm', cache, 1);
    expect(readdirSync(cache).sort()).toEqual(Object.values(files).map(sha).sort());
  });
});
