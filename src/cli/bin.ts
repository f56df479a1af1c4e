import { runProcess } from './main.js'

await runProcess(process.argv.slice(2))
