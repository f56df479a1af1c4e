import { runCli } from './main.js'

// Node's deprecation notices are for tether's developers, not the person at the terminal (grpc-js, for one,
// sends an IP address as the TLS server name, which Node warns about on every TLS connection to an IP).
process.noDeprecation = true
process.exitCode = await runCli(process.argv.slice(2))
