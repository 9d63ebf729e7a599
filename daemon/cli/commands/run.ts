// Placeholder until its owner lands it.
export async function run(_argv: string[]): Promise<number> {
  throw new Error('the "run" command is not implemented yet');
}
