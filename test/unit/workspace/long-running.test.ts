import { writeFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { longRunningCommand } from '../../../src/workspace/index.js'
import { sandbox } from './fixture.js'

async function workspaceWithScripts(scripts: Record<string, string>, files: Record<string, string> = {}) {
  const box = await sandbox()
  await box.files({ 'package.json': JSON.stringify({ name: 'fixture', scripts }), ...files })
  return box.root
}

describe('longRunningCommand: direct commands', () => {
  it.each([
    [['tsc', '-w'], '`tsc -w` watches for changes and never exits', '`tsc`'],
    [['tsc', '--watch', '-p', '.'], '`tsc --watch -p .` watches for changes and never exits', '`tsc -p .`'],
    [['vitest', 'watch'], '`vitest watch` watches for changes and never exits', '`vitest run`'],
    [['vitest', '--watch'], '`vitest --watch` watches for changes and never exits', '`vitest run`'],
    [['vitest', 'run', '-w'], '`vitest run -w` watches for changes and never exits', '`vitest run`'],
    [['jest', '--watchAll'], '`jest --watchAll` watches for changes and never exits', '`jest --ci`'],
    [['jest', '--watch', 'src'], '`jest --watch src` watches for changes and never exits', '`jest --ci src`'],
    [['nodemon', 'app.js'], '`nodemon app.js` watches for changes and never exits', '`node app.js`'],
    [
      ['node', '--watch', 'app.js'],
      '`node --watch app.js` watches for changes and never exits',
      '`node app.js`',
    ],
    [['vite'], '`vite` starts a server that runs until it is stopped', '`vite build`'],
    [['next', 'dev'], '`next dev` starts a server that runs until it is stopped', '`next build`'],
    [['webpack', 'serve'], '`webpack serve` starts a server that runs until it is stopped', '`webpack`'],
    [
      ['cargo', 'watch', '-x', 'test'],
      '`cargo watch -x test` watches for changes and never exits',
      '`cargo test`',
    ],
    [['tail', '-f', 'app.log'], '`tail -f app.log` follows its output and never exits', '`tail app.log`'],
    [['rails', 's'], '`rails s` starts a server that runs until it is stopped', '`bin/rails test`'],
    [
      ['react-scripts', 'test'],
      '`react-scripts test` watches for changes and never exits',
      '`react-scripts test --watchAll=false`',
    ],
    [['ping', 'example.com'], '`ping example.com` pings until it is stopped', '`ping -c 3 example.com`'],
    [
      ['journalctl', '-fu', 'nginx'],
      '`journalctl -fu nginx` follows its output and never exits',
      '`journalctl -u nginx`',
    ],
    [['tail', '-n5F', 'a.log'], '`tail -n5F a.log` follows its output and never exits', '`tail -n5 a.log`'],
    [
      ['docker', 'compose', 'logs', '-f', 'web'],
      '`docker compose logs -f web` follows its output and never exits',
      '`docker compose logs web`',
    ],
    [
      ['node', 'node_modules/vite/bin/vite.js'],
      '`node node_modules/vite/bin/vite.js` → `vite` starts a server that runs until it is stopped',
      '`npx vite build`',
    ],
  ])('%j is refused', async (argv, reason, alternative) => {
    const box = await sandbox()
    expect(longRunningCommand(box.root, argv)).toEqual({ reason, alternative })
  })

  it.each([
    [['python3', '-m', 'http.server', '8000']],
    [['flask', 'run']],
    [['uvicorn', 'app:app']],
    [['python', 'manage.py', 'runserver']],
    [['serve', 'dist']],
    [['docker', 'compose', 'up']],
    [['sleep', 'infinity']],
    [['yes']],
    [['vim', 'a.txt']],
  ])('%j is refused with advice', async (argv) => {
    const box = await sandbox()
    const verdict = longRunningCommand(box.root, argv)
    expect(verdict?.reason).toMatch(/starts a server|never wakes up|prints forever|interactive/)
    expect(verdict?.alternative.length).toBeGreaterThan(10)
  })

  it.each([
    [['vitest']],
    [['vitest', 'run']],
    [['tsc', '--noEmit']],
    [['jest', '-w', '2']],
    [['vite', 'build']],
    [['vite', '--help']],
    [['tail', '-n', '50', 'app.log']],
    [['sleep', '5']],
    [['git', 'commit', '-m', '--watch']],
    [['grep', '-w', 'word', 'file']],
    [['docker', 'compose', 'up', '--detach']],
    [['ping', '-c', '1', 'example.com']],
    [['cargo', 'test']],
    [['timeout', '30', 'vite']],
  ])('%j is not refused', async (argv) => {
    const box = await sandbox()
    expect(longRunningCommand(box.root, argv)).toBeUndefined()
  })

  it('sees through wrappers and keeps the runner in the alternative', async () => {
    const box = await sandbox()
    expect(longRunningCommand(box.root, ['npx', '--yes', 'vitest', '--watch'])).toEqual({
      reason: '`npx --yes vitest --watch` → `vitest --watch` watches for changes and never exits',
      alternative: '`npx vitest run`',
    })
    expect(longRunningCommand(box.root, ['env', 'PORT=3000', 'nice', '-n', '5', 'next', 'dev'])?.reason).toBe(
      '`env PORT=3000 nice -n 5 next dev` → `next dev` starts a server that runs until it is stopped',
    )
    expect(longRunningCommand(box.root, ['pnpm', 'exec', 'tsc', '-w'])?.alternative).toBe('`pnpm exec tsc`')
    expect(longRunningCommand(box.root, ['uv', 'run', 'uvicorn', 'app:app'])?.reason).toMatch(
      /^`uv run uvicorn/,
    )
    expect(longRunningCommand(box.root, ['sh', '-c', 'npm run build && vite'])?.reason).toBe(
      '`sh -c "npm run build && vite"` → `vite` starts a server that runs until it is stopped',
    )
    expect(
      longRunningCommand(box.root, ['bash', '-c', 'while true; do date; sleep 1; done'])?.reason,
    ).toMatch(/`while true` is an endless loop/)
    expect(
      longRunningCommand(box.root, ['bash', '-c', 'while true; do test -f done && break; done']),
    ).toBeUndefined()
  })
})

describe('longRunningCommand: the policy says what a command runs', () => {
  it.each([
    [['stdbuf', '-oL', 'tail', '-f', 'app.log'], '`tail -f app.log`'],
    [['env', '-S', 'vite --port 3000'], '`vite --port 3000`'],
    [['setarch', 'x86_64', 'next', 'dev'], '`next dev`'],
    [['sudo', '-u', 'web', 'uvicorn', 'app:app'], '`uvicorn app:app`'],
    [['bash', '-c', 'bash <<< "npm run build && vite"'], '`vite`'],
    [['sh', '-c', 'echo ok | sh -c "tsc --watch"'], '`tsc --watch`'],
    [['xvfb-run', '-a', 'webpack', 'serve'], '`webpack serve`'],
    [['dotenv', '-e', '.env.test', '--', 'jest', '--watch'], '`jest --watch`'],
    [['cross-env-shell', 'PORT=1', 'vite'], '`vite`'],
    [['bash', '-c', '{ vite; }'], '`vite`'],
  ])('%j runs %s, which is refused', async (argv, command) => {
    const box = await sandbox()
    expect(longRunningCommand(box.root, argv)?.reason).toContain(`${command} `)
  })

  it('agrees with the policy about what is bounded or not run at all', async () => {
    const box = await sandbox()
    expect(longRunningCommand(box.root, ['timeout', '--signal=KILL', '30', 'vite'])).toBeUndefined()
    expect(longRunningCommand(box.root, ['gtimeout', '30', 'sh', '-c', 'tail -f x'])).toBeUndefined()
    expect(longRunningCommand(box.root, ['command', '-v', 'vite'])).toBeUndefined()
    expect(longRunningCommand(box.root, ['bash', '-c', "echo 'vite --watch'"])).toBeUndefined()
  })
})

describe('longRunningCommand: package scripts', () => {
  it('follows `npm run dev` through package.json to the server it starts', async () => {
    const root = await workspaceWithScripts({ dev: 'vite --port 3000' })
    expect(longRunningCommand(root, ['npm', 'run', 'dev'])).toEqual({
      reason:
        '`npm run dev` runs the package script "dev" (`vite --port 3000`) → `vite --port 3000` starts a server that runs until it is stopped',
      alternative: '`npx vite build`',
    })
  })

  it('spells the alternative for the package manager that ran the script', async () => {
    const root = await workspaceWithScripts({ 'test:watch': 'vitest --watch', watch: 'jest --watchAll' })
    expect(longRunningCommand(root, ['pnpm', 'test:watch'])?.alternative).toBe('`pnpm exec vitest run`')
    expect(longRunningCommand(root, ['yarn', 'run', 'watch'])?.alternative).toBe('`yarn jest --ci`')
    expect(longRunningCommand(root, ['bun', 'run', 'watch'])?.alternative).toBe('`bunx jest --ci`')
  })

  it('follows scripts that run other scripts, a few levels deep', async () => {
    const root = await workspaceWithScripts({
      serve: 'npm run dev',
      dev: 'npm run build && npm run build:watch',
      build: 'tsc -p .',
      'build:watch': 'npm run build -- --watch',
    })
    expect(longRunningCommand(root, ['npm', 'run', 'serve'])).toEqual({
      reason: [
        '`npm run serve` runs the package script "serve" (`npm run dev`)',
        '`npm run dev` runs the package script "dev" (`npm run build && npm run build:watch`)',
        '`npm run build:watch` runs the package script "build:watch" (`npm run build -- --watch`)',
        '`npm run build -- --watch` runs the package script "build" (`tsc -p .`)',
        '`tsc -p . --watch` watches for changes and never exits',
      ].join(' → '),
      alternative: '`npx tsc -p .`',
    })
  })

  it('passes arguments after -- to the script: `npm test -- --watch`', async () => {
    const root = await workspaceWithScripts({ test: 'vitest' })
    expect(longRunningCommand(root, ['npm', 'test'])).toBeUndefined()
    expect(longRunningCommand(root, ['npm', 'test', '--', '--watch'])?.alternative).toBe('`npx vitest run`')
    expect(longRunningCommand(root, ['pnpm', 'test', '--watch'])?.alternative).toBe('`pnpm exec vitest run`')
  })

  it('refuses scripts named like servers and watchers even when their text is not recognised', async () => {
    const root = await workspaceWithScripts({ start: 'node index.js', build: 'node build.js' })
    expect(longRunningCommand(root, ['npm', 'start'])).toEqual({
      reason:
        '`npm start` runs the package script "start" (`node index.js`); projects give that name to commands that keep running (servers, watchers)',
      alternative: 'if it exits by itself, run its command directly: `node index.js`',
    })
    expect(longRunningCommand(root, ['npm', 'run', 'build'])).toBeUndefined()
  })

  it('knows `npm start` runs `node server.js` when there is no start script', async () => {
    const withServer = await workspaceWithScripts({}, { 'server.js': '' })
    expect(longRunningCommand(withServer, ['npm', 'start'])?.reason).toMatch(/runs `node server.js`/)
    const without = await workspaceWithScripts({})
    expect(longRunningCommand(without, ['npm', 'start'])).toBeUndefined()
  })

  it('checks the pre-script, concurrently, npm-run-all and shell scripts the package runs', async () => {
    const root = await workspaceWithScripts(
      {
        predeploy: 'tsc -w',
        deploy: 'echo deploying',
        all: 'concurrently "npm:lint" "npm:watch:*"',
        lint: 'biome check .',
        'watch:css': 'sass --watch src:dist',
        checks: 'run-s lint build',
        build: 'tsc',
        boot: 'sh scripts/boot.sh',
      },
      { 'scripts/boot.sh': '#!/bin/sh\nset -e\nnpm run build\nnodemon dist/index.js\n' },
    )
    expect(longRunningCommand(root, ['npm', 'run', 'deploy'])?.reason).toMatch(
      /script "predeploy" \(`tsc -w`\)/,
    )
    expect(longRunningCommand(root, ['npm', 'run', 'all'])?.reason).toMatch(/`sass --watch src:dist` watches/)
    expect(longRunningCommand(root, ['npm', 'run', 'checks'])).toBeUndefined()
    expect(longRunningCommand(root, ['npm', 'run', 'boot'])?.reason).toMatch(
      /runs scripts\/boot.sh → `nodemon dist\/index.js` watches/,
    )
  })

  it('reads the package.json of --prefix, and judges by name where the package cannot be told', async () => {
    const box = await sandbox()
    await box.files({ 'web/package.json': JSON.stringify({ scripts: { dev: 'vite' } }) })
    expect(longRunningCommand(box.root, ['npm', '--prefix', 'web', 'run', 'dev'])?.alternative).toBe(
      '`npx vite build`',
    )
    expect(longRunningCommand(box.root, ['npm', '-w', 'web', 'run', 'dev'])?.reason).toMatch(
      /script named "dev" in a package tether could not read/,
    )
    expect(longRunningCommand(box.root, ['npm', '-w', 'web', 'run', 'lint'])).toBeUndefined()
  })

  it('stops following a script that runs itself', async () => {
    const root = await workspaceWithScripts({ again: 'npm run again' })
    expect(longRunningCommand(root, ['npm', 'run', 'again'])).toBeUndefined()
  })

  it('does not follow a package.json symlinked from outside the workspace', async () => {
    const box = await sandbox()
    await writeFile(`${box.outside}/package.json`, JSON.stringify({ scripts: { check: 'vite' } }))
    await box.link('package.json', `${box.outside}/package.json`)
    expect(longRunningCommand(box.root, ['npm', 'run', 'check'])).toBeUndefined()
  })
})
