/** `tether rewind`, `tether diff`, `tether checkout` and `tether snapshots`: the workspace as state, by step. */
import type { Command } from 'commander'
import { runLinkLines } from '../../present/index.js'
import type { RunLinks } from '../../snapshots/catalog.js'

export function registerSnapshots(program: Command): void {
  program
    .command('rewind')
    .description(
      "Start a new run linked to RUN from step N's workspace tree and transcript, under RUN's policy (or a stricter one).",
    )
    .argument('<run>', 'the run to go back in (its id, or the start of one no other run id starts with)')
    .requiredOption(
      '--to-step <n>',
      'the step whose end the new run starts from (0: the workspace as RUN found it)',
    )
    .option('--policy <file>', "a policy file stacked on RUN's own policy: it can only make it stricter")
    .option('--id <run-id>', 'the new run id (default: run-<time>-<random>)')
    .option('--json', 'print the new run id as JSON')
    .action((...args: Parameters<typeof import('../snapshot-actions.js').rewind>) =>
      import('../snapshot-actions.js').then((actions) => actions.rewind(...args)),
    )

  program
    .command('diff')
    .description("What changed in a run's workspace between two steps' trees.")
    .argument('<run>', 'the run id, or the start of one no other run id starts with')
    .requiredOption('--from <step>', 'the earlier step (0: the workspace as the run found it)')
    .requiredOption('--to <step>', 'the later step')
    .option('-p, --patch', "each changed text file's lines, as a unified diff (from the snapshot store)")
    .option('--json', 'print JSON')
    .action((...args: Parameters<typeof import('../snapshot-actions.js').diff>) =>
      import('../snapshot-actions.js').then((actions) => actions.diff(...args)),
    )

  program
    .command('checkout')
    .description(
      "Lay out a run's workspace tree at a step (its last by default) in a new folder, from the snapshot store, its hash checked; warns of git files in it that would make git run a program.",
    )
    .argument('<run>', 'the run id, or the start of one no other run id starts with')
    .requiredOption('--into <dir>', 'the folder to lay it out in: a new one, or an empty one')
    .option(
      '--step <n>',
      "the step whose tree (0: the workspace as the run found it; default: the run's last)",
    )
    .option('--json', 'print what was laid out as JSON')
    .action((...args: Parameters<typeof import('../snapshot-actions.js').checkout>) =>
      import('../snapshot-actions.js').then((actions) => actions.checkout(...args)),
    )

  const snapshots = program
    .command('snapshots')
    .description(
      "A run's workspace snapshots, one per step that could change it; `gc` collects what retention lets go.",
    )
    .argument('[run]', 'the run id, or the start of one no other run id starts with')
    .option('--json', 'print JSON')
    .action((...args: Parameters<typeof import('../snapshot-actions.js').list>) =>
      import('../snapshot-actions.js').then((actions) => actions.list(...args)),
    )
  snapshots
    .command('gc')
    .description(
      'Collect snapshot objects no retained run references (runs ended more than the retention ago).',
    )
    .option('--dry-run', 'say what would be collected; delete nothing')
    .option('--json', 'print JSON')
    .action((...args: Parameters<typeof import('../snapshot-actions.js').gc>) =>
      import('../snapshot-actions.js').then((actions) => actions.gc(...args)),
    )
}

/**
 * The lines `tether show` adds about a run's links: what it was rewound from, what from it, and the branch
 * its verified tree became.
 */
export function linkLines(links: RunLinks): string[] {
  return runLinkLines(links).map((line) => `${line.before}${line.name}${line.after}`)
}
