/** `tether inbox` (the approvals inbox and run viewer) and `tether inbox token` (per-user access tokens). */
import { join } from 'node:path'
import type { Command } from 'commander'
import type { Access } from '../../inbox/index.js'
import { colour, print } from '../context.js'
import { CliError } from '../errors.js'
import { mcpEndpoint } from './mcp.js'

interface InboxCliOptions {
  host: string
  port?: string
  access: string
  tokens?: string
  identityHeader?: string
  temporalUi?: string
}

async function tokensFile(given: string | undefined): Promise<string> {
  const { stateDir } = await import('../connect.js')
  return given ?? join(stateDir(), 'inbox-tokens')
}

export function registerInbox(program: Command): void {
  const inbox = program
    .command('inbox')
    .description(
      'Serve the approvals inbox and run viewer (a web page) until Ctrl-C: what waits for an answer, with ' +
        'its context; answers signed in the browser; runs, live. `tether dev` serves it too.',
    )
    .option('--host <address>', 'the address to listen on; anything but loopback needs --access', '127.0.0.1')
    .option('--port <n>', 'the port (default 7280)')
    .option(
      '--access <mode>',
      "who may open it: local (loopback only, with the stack's token in the link it prints), tokens (per-user tokens) or header (an identity header set by an authenticating proxy)",
      'local',
    )
    .option(
      '--tokens <file>',
      'with --access tokens: the tokens file (default: inbox-tokens in the state folder)',
    )
    .option(
      '--identity-header <name>',
      'with --access header: the header your proxy sets to the signed-in name, e.g. X-Forwarded-User',
    )
    .option('--temporal-ui <url>', "the Temporal UI, for links to runs (default: tether dev's, if running)")
    .action(async (options: InboxCliOptions) => {
      const { accessProblem, INBOX_PORT, InboxError, startInbox } = await import('../../inbox/index.js')
      const { devStack, withAudit, withTemporal } = await import('../connect.js')
      const access = await accessFrom(options)
      // Before anything is opened: an inbox others could reach without an access mode never starts.
      const problem = accessProblem(options.host, access.mode)
      if (problem) throw new CliError(problem)
      const port = Number(options.port ?? INBOX_PORT)
      if (!Number.isInteger(port) || port < 0 || port > 65_535) {
        throw new CliError(`--port must be a port number from 0 to 65535, not ${options.port}`)
      }
      await withTemporal((client, target) =>
        withAudit(async (audit) => {
          let served: Awaited<ReturnType<typeof startInbox>>
          try {
            served = await startInbox({
              audit,
              client,
              namespace: target.namespace,
              host: options.host,
              port,
              access,
              temporalUi: options.temporalUi ?? devStack()?.uiUrl,
              log: (line) => process.stderr.write(`${line}\n`),
              mcp: await mcpEndpoint(client, audit, target.taskQueue),
            })
          } catch (error) {
            if (error instanceof InboxError) throw new CliError(error.message)
            throw error
          }
          print(`${colour.bold('tether inbox')} at ${served.url} (${accessText(access)}); Ctrl-C stops it`)
          if (access.mode === 'local') print(`  open ${served.loginUrl}`)
          await new Promise<void>((resolve) => {
            process.once('SIGINT', resolve)
            process.once('SIGTERM', resolve)
          })
          await served.close()
        }),
      )
    })

  inbox
    .command('token')
    .description(
      'Make an access token for NAME (for `tether inbox --access tokens`) and print its login link.',
    )
    .argument('<name>', 'the person, as the policy names them as an approver')
    .option('--tokens <file>', 'the tokens file (default: inbox-tokens in the state folder)')
    .option(
      '--url <url>',
      "where the inbox is reached, for the link (default: TETHER_INBOX_URL, else your profile's inbox_url, else http://127.0.0.1:7280)",
    )
    .action(async (name: string, options: { tokens?: string; url?: string }) => {
      const { addToken, INBOX_PORT, InboxError } = await import('../../inbox/index.js')
      const { userSettings } = await import('../connect.js')
      const file = await tokensFile(options.tokens)
      const url = options.url ?? userSettings().inboxUrl ?? `http://127.0.0.1:${INBOX_PORT}`
      let token: string
      try {
        token = addToken(file, name)
      } catch (error) {
        if (error instanceof InboxError) throw new CliError(error.message)
        throw error
      }
      print(`added a token for ${name} to ${file} (mode 0600)`)
      print(`login link (give it to ${name} only): ${url.replace(/\/$/, '')}/login?token=${token}`)
    })
}

async function accessFrom(options: InboxCliOptions): Promise<Access> {
  const { InboxError, localToken, readTokens } = await import('../../inbox/index.js')
  const { stateDir } = await import('../connect.js')
  const tokens = await tokensFile(options.tokens)
  try {
    switch (options.access) {
      case 'local':
        return { mode: 'local', token: localToken(stateDir()) }
      case 'tokens':
        return { mode: 'tokens', names: readTokens(tokens) }
      case 'header':
        if (!options.identityHeader || !/^[A-Za-z0-9-]+$/.test(options.identityHeader)) {
          throw new CliError('--access header needs --identity-header NAME (the header your proxy sets)')
        }
        return { mode: 'header', header: options.identityHeader }
      default:
        throw new CliError(`--access must be local, tokens or header, not ${options.access}`)
    }
  } catch (error) {
    if (error instanceof InboxError) throw new CliError(error.message)
    throw error
  }
}

function accessText(access: Access): string {
  switch (access.mode) {
    case 'local':
      return "loopback only, with this stack's token"
    case 'tokens':
      return `per-user tokens, ${access.names.size} listed`
    case 'header':
      return `signed-in name from the ${access.header} header`
  }
}
