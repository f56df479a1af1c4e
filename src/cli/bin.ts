import { runCli } from './main.js'

// Node's deprecation notices are for tether's developers, not the person at the terminal (grpc-js, for one,
// sends an IP address as the TLS server name, which Node warns about on every TLS connection to an IP).
process.noDeprecation = true
// A reader that stops reading (`tether ls | head`) ends the command quietly, as other programs do.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0)
  throw error
})
process.exitCode = await runCli(process.argv.slice(2))
