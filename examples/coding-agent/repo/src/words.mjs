/** How many words (runs of non-space characters) `text` has. */
export function countWords(text) {
  return text.split(' ').length;
}
