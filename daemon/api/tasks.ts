// A run's tasks: read the JSONL file its config names, then split train/validation with a seeded shuffle.
import { readFile } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import type { RunConfig } from '../protocol/config';
import type { Task } from '../protocol/entities';
import { shuffled } from '../random';
import { ApiError } from './errors';

const FIELD = 'config.tasks.file';

/** Parse JSONL text into task inputs; a bad line is a 400 naming its line number. */
export function parseTasks(text: string, file: string): unknown[] {
  const inputs: unknown[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (!line) continue;
    try {
      inputs.push(JSON.parse(line));
    } catch (err) {
      throw new ApiError(
        400,
        'invalid_tasks',
        `${file} line ${i + 1} is not JSON: ${(err as Error).message}`,
        FIELD,
      );
    }
  }
  return inputs;
}

/**
 * The first `limit` tasks of the file, shuffled with `shuffle_seed`; the first `validation_fraction` of
 * them validate, the next `test_fraction` are held out (test).
 */
export function splitTasks(
  inputs: unknown[],
  tasks: RunConfig['tasks'],
): { input: unknown; split: Task['split'] }[] {
  const taken = tasks.limit ? inputs.slice(0, tasks.limit) : inputs;
  const order = shuffled(taken, tasks.shuffle_seed);
  const validation = Math.round(order.length * tasks.validation_fraction);
  const test = validation + Math.round(order.length * (tasks.test_fraction ?? 0));
  return order.map((input, i) => ({
    input,
    split: i < validation ? 'validation' : i < test ? 'test' : 'train',
  }));
}

export async function readTasks(
  config: RunConfig,
  baseDir: string | undefined,
): Promise<{ input: unknown; split: Task['split'] }[]> {
  const file = isAbsolute(config.tasks.file)
    ? config.tasks.file
    : resolve(baseDir ?? process.cwd(), config.tasks.file);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ApiError(
      400,
      'invalid_tasks',
      `cannot read the tasks file ${file}: ${code === 'ENOENT' ? 'no such file' : (err as Error).message}`,
      FIELD,
    );
  }
  const inputs = parseTasks(text, file);
  if (inputs.length === 0)
    throw new ApiError(400, 'invalid_tasks', `the tasks file ${file} has no tasks`, FIELD);
  return splitTasks(inputs, config.tasks);
}
