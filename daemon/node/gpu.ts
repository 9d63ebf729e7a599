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

/** `--gpus 0,1` → [0, 1] (throws on anything else). */
export function parseGpus(value: string): number[] {
  const gpus = value.split(',').map((s) => s.trim());
  if (gpus.length === 0 || gpus.some((g) => !/^\d+$/.test(g)))
    throw new Error(`--gpus ${value}: expected GPU indexes like 0 or 0,1`);
  return [...new Set(gpus.map(Number))];
}

/** A process on a GPU, from `nvidia-smi --query-compute-apps` (empty where nvidia-smi is missing). */
export interface GpuProcess {
  pid: number;
  name: string;
  usedMb: number;
  gpu: number;
}

export function gpuProcesses(): GpuProcess[] {
  try {
    const run = (args: string[]) =>
      execFileSync('nvidia-smi', [...args, '--format=csv,noheader,nounits'], {
        encoding: 'utf8',
        timeout: 5000,
        stdio: ['ignore', 'pipe', 'ignore'],
      });
    const indexOf = new Map<string, number>();
    for (const line of run(['--query-gpu=index,uuid']).trim().split('\n').filter(Boolean)) {
      const [index, uuid] = line.split(',').map((s) => s.trim());
      indexOf.set(uuid, Number(index));
    }
    return run(['--query-compute-apps=gpu_uuid,pid,process_name,used_memory'])
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((line) => {
        const [uuid, pid, name, used] = line.split(',').map((s) => s.trim());
        return { gpu: indexOf.get(uuid) ?? -1, pid: Number(pid), name, usedMb: Number(used) };
      });
  } catch {
    return [];
  }
}
