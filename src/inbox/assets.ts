/**
 * The inbox's one script, built from `browser/app.ts` and the pure modules it shares with the server and
 * the CLI (the statement an approver signs, the digest of an action, deadlines, how text is shown). A
 * build (`npm run build`) writes it to `dist/inbox-app.js`; run from the sources, it is bundled at start
 * with esbuild (a development dependency), in well under a second.
 */
import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { InboxError } from './errors.js'

const here = fileURLToPath(import.meta.url)
/** Next to the compiled server: dist/src/inbox/assets.js → dist/inbox-app.js. */
const PREBUILT = fileURLToPath(new URL('../../inbox-app.js', import.meta.url))
const SOURCE = fileURLToPath(new URL('./browser/app.ts', import.meta.url))

/** Bundles the browser script from `entry` (the build script passes the source path). */
export async function bundleBrowserScript(entry: string = SOURCE): Promise<string> {
  let esbuild: typeof import('esbuild')
  try {
    esbuild = await import('esbuild')
  } catch {
    throw new InboxError(
      "the inbox's browser script is not built and esbuild is not installed; run `npm run build` in tether's checkout",
    )
  }
  const result = await esbuild.build({
    entryPoints: [entry],
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: 'chrome110',
    minify: true,
    legalComments: 'none',
    write: false,
  })
  return result.outputFiles[0]?.text ?? ''
}

let script: Promise<string> | undefined

/** The script to serve: the prebuilt one in a build, else bundled from the sources (once). */
export function browserScript(): Promise<string> {
  script ??=
    !here.endsWith('.ts') && existsSync(PREBUILT) ? readFile(PREBUILT, 'utf8') : bundleBrowserScript()
  return script
}
