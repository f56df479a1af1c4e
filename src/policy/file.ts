/**
 * Policy files (JSON or YAML). The only part of src/policy that does I/O: it reaches `fs` through
 * `process.getBuiltinModule` rather than an import, so the pure core (and the module's index) still loads in
 * a Temporal workflow bundle, where there is no file system and node modules cannot be imported.
 */
import { parseDocument, parse as parseYaml } from 'yaml'
import { formatCount, overLimit } from '../present/index.js'
import { PolicyError } from './errors.js'
import { POLICY_LIMITS } from './limits.js'
import { Policy } from './policy.js'

/** Reads, parses and validates a policy file; every error names the file (and the field, when it is one). */
export async function loadPolicyFile(path: string): Promise<Policy> {
  return parsePolicyText(readPolicyFile(path, 'policy file'), path)
}

/**
 * The text of a policy file (`what`: "policy file", "floor file"), read only when it is a regular file within
 * the size limit — checked on the open file, before anything is read, so `/dev/zero`, a pipe or a file of
 * gigabytes is refused at once. Throws PolicyError with one line naming the file.
 */
export function readPolicyFile(path: string, what: string): string {
  const fs = globalThis.process?.getBuiltinModule?.('node:fs')
  const fail = (message: string): never => {
    throw new PolicyError(`${path}: ${message}`, undefined, path)
  }
  if (!fs) return fail(`a ${what} can only be read under Node.js (20.16 or later)`)
  let fd: number
  try {
    // Non-blocking, so opening a pipe does not wait for a writer.
    fd = fs.openSync(path, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    return fail(
      `cannot read the ${what} (${code === 'ENOENT' ? 'no such file' : (code ?? String(error))}); check the path`,
    )
  }
  try {
    const stat = fs.fstatSync(fd)
    if (stat.isDirectory()) return fail(`cannot read the ${what} (it is a directory); check the path`)
    if (!stat.isFile())
      return fail(`the ${what} is not a regular file (a device, a pipe or a socket); point at a file`)
    const limit = POLICY_LIMITS.fileBytes
    if (stat.size > limit) {
      return fail(`the ${what} has ${overLimit(stat.size, 'bytes', limit, 'policy file')} bytes`)
    }
    // One byte more than the limit: a file that grew since it was checked is still caught.
    const buffer = new Uint8Array(limit + 1)
    let length = 0
    for (;;) {
      const read = fs.readSync(fd, buffer, length, buffer.length - length, null)
      if (read === 0) break
      length += read
      if (length > limit)
        return fail(
          `the ${what} grew past the policy file limit of ${formatCount(limit)} bytes as it was read`,
        )
    }
    return new TextDecoder('utf-8', { ignoreBOM: true }).decode(buffer.subarray(0, length))
  } finally {
    fs.closeSync(fd)
  }
}

/** Parses policy text as JSON (`.json`, or text starting with `{`) or YAML, then validates it. */
export function parsePolicyText(source: string, name: string): Policy {
  // A byte-order mark some editors put first says only that the text is Unicode: it is not part of it.
  const text = source.startsWith('\uFEFF') ? source.slice(1) : source
  const json = /\.json$/i.test(name) || (!/\.ya?ml$/i.test(name) && text.trimStart().startsWith('{'))
  let data: unknown
  try {
    data = json ? parseJson(text) : parseYaml(text)
  } catch (error) {
    // Whole: a YAML error ends with the lines around the mistake and a caret under it.
    const detail = (error instanceof Error ? error.message : String(error)).trimEnd()
    throw new PolicyError(`${name}: not valid ${json ? 'JSON' : 'YAML'}: ${detail}`, undefined, name)
  }
  return Policy.fromSpec(data, name)
}

/**
 * JSON.parse, refusing a key given twice in one object (JSON.parse would keep the last silently, so a
 * second `defaults` or `layers` could quietly replace the first). YAML refuses duplicates already.
 */
function parseJson(text: string): unknown {
  const data: unknown = JSON.parse(text)
  const duplicate = parseDocument(text, { uniqueKeys: true, schema: 'json' }).errors.find(
    (error) => error.code === 'DUPLICATE_KEY',
  )
  if (duplicate) throw new Error(`a key appears twice in one object: ${duplicate.message}`)
  return data
}
