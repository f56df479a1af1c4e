/**
 * Policy files (JSON or YAML). The only part of src/policy that does I/O: it reaches `fs` through
 * `process.getBuiltinModule` rather than an import, so the pure core (and the module's index) still loads in
 * a Temporal workflow bundle, where there is no file system and node modules cannot be imported.
 */
import { parseDocument, parse as parseYaml } from 'yaml'
import { PolicyError } from './errors.js'
import { Policy } from './policy.js'

/** Reads, parses and validates a policy file; every error names the file (and the field, when it is one). */
export async function loadPolicyFile(path: string): Promise<Policy> {
  const fs = globalThis.process?.getBuiltinModule?.('node:fs/promises')
  if (!fs)
    throw new PolicyError(
      `${path}: policy files can only be read under Node.js (20.16 or later)`,
      undefined,
      path,
    )
  let text: string
  try {
    text = await fs.readFile(path, 'utf8')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    const why =
      code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : (code ?? String(error))
    throw new PolicyError(`${path}: cannot read the policy file (${why}); check the path`, undefined, path)
  }
  return parsePolicyText(text, path)
}

/** Parses policy text as JSON (`.json`, or text starting with `{`) or YAML, then validates it. */
export function parsePolicyText(text: string, name: string): Policy {
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
