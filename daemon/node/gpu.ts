// GPU memory and utilisation from nvidia-smi, where it exists (cached: health is reported every few seconds).
import { execFileSync } from 'node:child_process';
import type { NodeHealth } from '../protocol/node';

type Gpu = NodeHealth['gpus'][number];
let cached: { at: number; gpus: Gpu[] } | null = null;
let missing = false;

export function gpuHealth(): Gpu[] {
  if (missing) return [];
  if (cached && Date.now() - cached.at < 2000) return cached.gpus;
  try {
    const out = execFileSync(
      'nvidia-smi',
      ['--query-gpu=index,name,memory.used,memory.total,utilization.gpu', '--format=csv,noheader,nounits'],
      { encoding: 'utf8', timeout: 2000, stdio: ['ignore', 'pipe', 'ignore'] },
    );
    const gpus = out
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((line) => {
        const [index, name, used, total, util] = line.split(',').map((s) => s.trim());
        return {
          index: Number(index),
          name,
          memory_used_mb: Number(used),
          memory_total_mb: Number(total),
          utilization: Number(util),
        };
      });
    cached = { at: Date.now(), gpus };
    return gpus;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') missing = true;
    return [];
  }
}
