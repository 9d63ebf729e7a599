// Quoting for the command lines the daemon shows or hands to others (a worker's, a Ray job's).

/** A word for a shell: quoted when it has anything but safe characters. */
export function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}
