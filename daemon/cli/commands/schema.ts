import { z } from 'zod';
import { ConfigFile } from '../../protocol/config';
import { NodeMessage } from '../../protocol/node';

export function configJsonSchema(): unknown {
  return z.toJSONSchema(ConfigFile, { io: 'input', unrepresentable: 'any' });
}

/** The node protocol's frame headers, for the Python trainer (validated on its side). */
export function nodeProtocolJsonSchema(): unknown {
  return z.toJSONSchema(NodeMessage, { io: 'input', unrepresentable: 'any' });
}

export async function run(argv: string[] = []): Promise<number> {
  const schema = argv.includes('--node') ? nodeProtocolJsonSchema() : configJsonSchema();
  process.stdout.write(`${JSON.stringify(schema, null, 2)}\n`);
  return 0;
}
