/** A URL slug: lowercase words of letters and digits joined by single dashes. */
export function slugify(title) {
  return title.trim().split(' ').join('-');
}
