import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { NodeMessage } from '../protocol/node';
import { TrainerRole } from './trainer';

const fixture = resolve(__dirname, '../../test/fixtures/unreadable-trainer.ts');

describe('TrainerRole with a trainer process', () => {
  it('answers a request with the error the process could not tie to a request (id "-") instead of waiting forever', async () => {
    const role = new TrainerRole({
      dataDir: '/nonexistent',
      trainerCmd: `${process.execPath} --import tsx ${fixture}`,
      log: () => {},
    });
    await role.start();
    try {
      const replies: NodeMessage[] = [];
      role.handle(
        {
          header: {
            t: 'open',
            id: 'o1',
            run: { run_id: 'run_x', model: { name: 'm' }, seed: 0 },
          },
          payload: Buffer.alloc(0),
        },
        {
          closed: false,
          send: async (header) => {
            replies.push(header);
          },
        },
      );
      const deadline = Date.now() + 20_000;
      while (replies.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(replies).toEqual([
        { t: 'error', id: 'o1', message: 'stdin: frame of 9 bytes exceeds the limit' },
      ]);
    } finally {
      await role.close();
    }
  }, 30_000);
});
