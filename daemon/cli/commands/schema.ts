import { z } from 'zod';
import { ConfigFile } from '../../protocol/config';
import { NodeMessage } from '../../protocol/node';
import {
  ClaimBody,
  Claimed,
  FinishBody,
  HeartbeatBody,
  HeartbeatReply,
  OutputBody,
} from '../../protocol/worker';

export function configJsonSchema(): unknown {
  return z.toJSONSchema(ConfigFile, { io: 'input', unrepresentable: 'any' });
}

/** The node protocol's frame headers, for the Python trainer (validated on its side). */
export function nodeProtocolJsonSchema(): unknown {
  return z.toJSONSchema(NodeMessage, { io: 'input', unrepresentable: 'any' });
}

/**
 * The worker protocol (claim / heartbeat / output / finish), for the Python worker of workers/python:
 * what it sends as the daemon reads it, what it gets as the daemon writes it.
 */
export function workerProtocolJsonSchema(): unknown {
  const sent = { ClaimBody, HeartbeatBody, OutputBody, FinishBody };
  const got = { Claimed, HeartbeatReply };
  const each = (schemas: Record<string, z.ZodType>, io: 'input' | 'output') =>
    Object.fromEntries(
      Object.entries(schemas).map(([name, s]) => [name, z.toJSONSchema(s, { io, unrepresentable: 'any' })]),
    );
  return { ...each(sent, 'input'), ...each(got, 'output') };
}

export async function run(argv: string[] = []): Promise<number> {
  const schema = argv.includes('--node')
    ? nodeProtocolJsonSchema()
    : argv.includes('--worker')
      ? workerProtocolJsonSchema()
      : configJsonSchema();
  process.stdout.write(`${JSON.stringify(schema, null, 2)}\n`);
  return 0;
}
