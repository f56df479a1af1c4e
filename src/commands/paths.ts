/** Path spellings: one lexical normal form, so `src/../secrets/x`, `secrets//x` and `./secrets/x` are one path. */

/** Lexical normalisation: no `//`, no `.` segments, `..` resolved where it can be. */
export function normalisePath(path: string): string {
  const absolute = path.startsWith('/')
  const out: string[] = []
  for (const segment of path.split('/')) {
    if (segment === '' || segment === '.') continue
    if (segment === '..' && out.length > 0 && out[out.length - 1] !== '..') out.pop()
    else if (segment === '..' && absolute) continue
    else out.push(segment)
  }
  const joined = out.join('/')
  return absolute ? `/${joined}` : joined || '.'
}
