// Option parsing shared by the CLI commands that print their usage the same way (demo, worker).
import { type ParseArgsConfig, parseArgs } from 'node:util';

type Options = NonNullable<ParseArgsConfig['options']>;
/** The values parseArgs gives for `options` in strict mode. */
export type CommandValues<O extends Options> = ReturnType<
  typeof parseArgs<{ args: string[]; options: O; strict: true }>
>['values'];

/**
 * parseArgs (strict, no positionals) with the usual exits: a bad option prints its message and the usage
 * to stderr (exit code 2); --help / -h (declare `help` in `options`) prints the usage (exit code 0).
 * Returns the parsed values, or the exit code to return.
 */
export function parseCommandArgs<const O extends Options>(
  args: string[],
  options: O,
  usage: string,
): CommandValues<O> | number {
  let values: CommandValues<O>;
  try {
    ({ values } = parseArgs({ args, options, strict: true }));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n${usage}`);
    return 2;
  }
  if ((values as { help?: boolean }).help) {
    process.stdout.write(usage);
    return 0;
  }
  return values;
}
