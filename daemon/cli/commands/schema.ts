import { z } from 'zod';
import { ConfigFile } from '../../protocol/config';

export function configJsonSchema(): unknown {
  return z.toJSONSchema(ConfigFile, { io: 'input', unrepresentable: 'any' });
}

export async function run(): Promise<number> {
  process.stdout.write(`${JSON.stringify(configJsonSchema(), null, 2)}\n`);
  return 0;
}
