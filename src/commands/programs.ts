/**
 * Option tables of well-known programs, in the notation of options.ts. Two uses share them:
 * - what an option does (`:write`, `:run`, `:net`, …), so an allow rule does not silently cover a command
 *   that carries one (launch-options.ts);
 * - which spellings mean the same option (`-r|-R|--recursive`), so deny and ask rules see a command's
 *   options normalised (`rm -rf*` meets `rm --recursive --force`; see ../option-rules.ts).
 *
 * Tables list every option whose effect matters, its aliases, whether it takes a value (so the words after
 * it are read correctly), and the harmless options that share a prefix with a risky one (so an exact name
 * is not mistaken for an abbreviation of the risky one).
 */
import { type FoundOption, type OptionEffect, type OptionSpec, optionSpec, readArgs } from './options.js'

export interface ProgramOptions {
  /** Options of the program (before its subcommand, when it has subcommands). */
  readonly spec: OptionSpec
  /** The first operand is a subcommand; its options are the `common` table plus its own. */
  readonly subcommands?: {
    readonly specs: ReadonlyMap<string, OptionSpec>
    readonly common: OptionSpec
    /** Subcommands that are themselves an effect (`npm view` reaches the network). */
    readonly effects: ReadonlyMap<string, OptionEffect>
  }
  /** Operands `NAME=value` (make's variable overrides) have this effect. */
  readonly assignments?: OptionEffect
  /** Options end at the first operand (POSIX order) instead of anywhere (GNU order). */
  readonly posix?: boolean
}

const PROGRAMS = new Map<string, ProgramOptions>()

function program(
  names: string,
  table: string,
  extra: Omit<ProgramOptions, 'spec' | 'subcommands'> & {
    style?: 'gnu' | 'exact' | 'single-dash'
    subcommands?: {
      common?: string
      specs?: Record<string, string>
      effects?: Record<string, OptionEffect>
    }
  } = {},
): void {
  const style = extra.style ?? 'gnu'
  const subs = extra.subcommands
  const options: ProgramOptions = {
    spec: optionSpec(table, style),
    ...(extra.assignments ? { assignments: extra.assignments } : {}),
    ...(extra.posix ? { posix: true } : {}),
    ...(subs
      ? {
          subcommands: {
            common: optionSpec(subs.common ?? '', style),
            specs: new Map(
              Object.entries(subs.specs ?? {}).flatMap(([subNames, subTable]) =>
                subNames
                  .split(' ')
                  .map((sub) => [sub, optionSpec(`${subs.common ?? ''} ${subTable}`, style)]),
              ),
            ),
            effects: new Map(
              Object.entries(subs.effects ?? {}).flatMap(([subNames, effect]) =>
                subNames.split(' ').map((sub) => [sub, effect] as const),
              ),
            ),
          },
        }
      : {}),
  }
  for (const name of names.split(' ')) PROGRAMS.set(name, options)
}

/** The option table of a program by its case-folded basename. */
export function programOptions(name: string): ProgramOptions | undefined {
  return PROGRAMS.get(name)
}

/** A command line read with its program's table. */
export interface ParsedCommand {
  options: FoundOption[]
  /** Indexes of the operands (after the subcommand, when there is one). */
  operands: number[]
  sub: string | undefined
  /** Index of the subcommand, -1 without one. */
  subIndex: number
  subEffect: OptionEffect | undefined
}

/** Reads `argv` (program first) with a program's table: its options and subcommand's options, anywhere. */
export function parseCommand(argv: readonly string[], program: ProgramOptions): ParsedCommand {
  const subs = program.subcommands
  if (!hasOption(argv)) {
    // No word looks like an option (the usual `git status`, `cargo build`): operands only.
    let subIndex = -1
    if (subs) {
      subIndex = 1
      while (argv[subIndex] === '') subIndex++
      if (subIndex >= argv.length) subIndex = -1
    }
    const sub = subIndex === -1 ? undefined : argv[subIndex]
    return {
      options: [],
      operands: range(subIndex === -1 ? (subs ? argv.length : 1) : subIndex + 1, argv.length),
      sub,
      subIndex,
      subEffect: sub === undefined ? undefined : subs?.effects.get(sub),
    }
  }
  if (!subs) {
    const read = readArgs(argv, 1, program.spec, program.posix)
    const operands = program.posix ? range(read.end, argv.length) : read.operands
    return { options: read.options, operands, sub: undefined, subIndex: -1, subEffect: undefined }
  }
  // Empty words before the subcommand are skipped: the program would refuse them, and reading past them
  // is the generous reading deny rules want (`git '' push` is judged as `git push`).
  const options: FoundOption[] = []
  let subIndex = 1
  for (;;) {
    const global = readArgs(argv, subIndex, program.spec, true)
    options.push(...global.options)
    subIndex = global.end
    if (argv[subIndex] !== '') break
    subIndex++
  }
  const sub = argv[subIndex]
  if (sub === undefined) return { options, operands: [], sub, subIndex: -1, subEffect: undefined }
  const rest = readArgs(argv, subIndex + 1, subs.specs.get(sub) ?? subs.common)
  return {
    options: [...options, ...rest.options],
    operands: rest.operands,
    sub,
    subIndex,
    subEffect: subs.effects.get(sub),
  }
}

function hasOption(argv: readonly string[]): boolean {
  for (let i = 1; i < argv.length; i++) {
    const word = argv[i]!
    if (word.length > 1 && word.charCodeAt(0) === 45) return true
  }
  return false
}

function range(from: number, to: number): number[] {
  const out: number[] = []
  for (let i = from; i < to; i++) out.push(i)
  return out
}

// ---- files and directories

program(
  'rm',
  '-f|--force -i -I --interactive[=] --one-file-system --no-preserve-root --preserve-root[=] ' +
    '-r|-R|--recursive -d|--dir -v|--verbose --help --version',
)
program(
  'cp',
  '-a|--archive --attributes-only --backup[=] -b --copy-contents -d -f|--force -i|--interactive -H ' +
    '-l|--link -L|--dereference -n|--no-clobber -P|--no-dereference -p --preserve[=] --no-preserve= --parents ' +
    '-r|-R|--recursive --reflink[=] --remove-destination --sparse= --strip-trailing-slashes ' +
    '-s|--symbolic-link -S|--suffix= -t|--target-directory= -T|--no-target-directory -u|--update[=] ' +
    '-v|--verbose -x|--one-file-system -Z --context[=] --debug --keep-directory-symlink',
)
program(
  'mv',
  '-b|--backup[=] -f|--force -i|--interactive -n|--no-clobber --strip-trailing-slashes -S|--suffix= ' +
    '-t|--target-directory= -T|--no-target-directory -u|--update[=] -v|--verbose -Z|--context --exchange ' +
    '--no-copy --debug',
)
program(
  'ln',
  '-b|--backup[=] -d|-F|--directory -f|--force -i|--interactive -L|--logical -n|--no-dereference ' +
    '-P|--physical -r|--relative -s|--symbolic -S|--suffix= -t|--target-directory= ' +
    '-T|--no-target-directory -v|--verbose',
)
program(
  'chmod',
  '-c|--changes -f|--silent|--quiet -v|--verbose --no-preserve-root --preserve-root --reference= ' +
    '-R|--recursive',
)
program(
  'chown chgrp',
  '-c|--changes -f|--silent|--quiet -v|--verbose --dereference -h|--no-dereference --from= ' +
    '--no-preserve-root --preserve-root --reference= -R|--recursive -H -L -P',
)
program('rmdir', '--ignore-fail-on-non-empty -p|--parents -v|--verbose')
program(
  'shred',
  '-f|--force -n|--iterations= --random-source=:read -s|--size= -u:delete --remove[=]:delete -v|--verbose ' +
    '-x|--exact -z|--zero',
)

// ---- text tools

program(
  'sed gsed',
  '-n|--quiet|--silent --debug -e|--expression=:code -f|--file=:source --follow-symlinks ' +
    '-i|--in-place[=]:write -l|--line-length= --posix -E|-r|--regexp-extended -s|--separate --sandbox ' +
    '-u|--unbuffered -z|--null-data --help --version',
)
program(
  'awk gawk',
  '-f|--file=:source -v|--assign= -F|--field-separator= -b|--characters-as-bytes -c|--traditional ' +
    '-C|--copyright -d|--dump-variables[=]:write -D|--debug[=] -e|--source=:code -E|--exec=:source ' +
    '-g|--gen-pot -h|--help -i|--include=:source -I|--trace -l|--load=:source -L|--lint[=] -M|--bignum ' +
    '-N|--use-lc-numeric -n|--non-decimal-data -o|--pretty-print[=]:write -O|--optimize ' +
    '-p|--profile[=]:write -P|--posix -r|--re-interval -s|--no-optimize -S|--sandbox -t|--lint-old ' +
    '-V|--version',
)
program(
  'sort',
  '-b|--ignore-leading-blanks -d|--dictionary-order -f|--ignore-case -g|--general-numeric-sort ' +
    '-i|--ignore-nonprinting -M|--month-sort -h|--human-numeric-sort -n|--numeric-sort -R|--random-sort ' +
    '--random-source=:read -r|--reverse --sort= -V|--version-sort --batch-size= -c|--check[=] -C ' +
    '--compress-program=:run --debug --files0-from=:read -k|--key= -m|--merge -o|--output=:write ' +
    '-s|--stable -S|--buffer-size= -t|--field-separator= -T|--temporary-directory= --parallel= ' +
    '-u|--unique -z|--zero-terminated --help --version',
)
const GREP =
  '-E|--extended-regexp -F|--fixed-strings -G|--basic-regexp -P|--perl-regexp -e|--regexp= -f|--file=:read ' +
  '-i|--ignore-case --no-ignore-case -v|--invert-match -w|--word-regexp -x|--line-regexp -y -c|--count ' +
  '--color[=] --colour[=] -L|--files-without-match -l|--files-with-matches -m|--max-count= ' +
  '-o|--only-matching -q|--quiet|--silent -s|--no-messages -b|--byte-offset -H|--with-filename ' +
  '-h|--no-filename --label= -n|--line-number --line-buffered -T|--initial-tab -Z|--null ' +
  '-A|--after-context= -B|--before-context= -C|--context= --group-separator= --no-group-separator ' +
  '-a|--text --binary-files= -D|--devices= -d|--directories= --exclude= --exclude-from=:read ' +
  '--exclude-dir= --include= -r|--recursive -R|--dereference-recursive -U|--binary -z|--null-data ' +
  '--help -V|--version --pre=:run --pre-glob='
program('grep egrep fgrep', GREP)
program(
  'rg',
  '-e|--regexp= -f|--file=:read -g|--glob= --iglob= -t|--type= -T|--type-not= --type-add= -m|--max-count= ' +
    '-A|--after-context= -B|--before-context= -C|--context= -j|--threads= -M|--max-columns= ' +
    '--max-depth|--maxdepth|-d= --max-filesize= --ignore-file=:read --pre=:run --pre-glob= ' +
    '--hostname-bin=:run -z|--search-zip:exec --engine= -E|--encoding= --sort= --sortr= --path-separator= ' +
    '--colors= --color= -r|--replace= --field-context-separator= --field-match-separator= ' +
    '--context-separator= --dfa-size-limit= --regex-size-limit= -u|--unrestricted --hidden ' +
    '--no-ignore -L|--follow -i|--ignore-case -S|--smart-case -s|--case-sensitive -n|--line-number ' +
    '-N|--no-line-number -l|--files-with-matches --files -c|--count -v|--invert-match -w|--word-regexp ' +
    '-x|--line-regexp -F|--fixed-strings -o|--only-matching -q|--quiet --json -p|--pretty ' +
    '-H|--with-filename -I|--no-filename -a|--text -U|--multiline --heading --no-heading --trim',
)
program(
  'diff',
  '-q|--brief -s|--report-identical-files -c -C|--context[=] -u -U|--unified[=] -e|--ed -n|--rcs ' +
    '-y|--side-by-side -W|--width= --left-column --suppress-common-lines -p|--show-c-function ' +
    '-F|--show-function-line= --label= --expand-tabs -t -T|--initial-tab --tabsize= --suppress-blank-empty ' +
    '-l|--paginate:exec -r|--recursive --no-dereference -N|--new-file --unidirectional-new-file ' +
    '--ignore-file-name-case --no-ignore-file-name-case -x|--exclude= -X|--exclude-from=:read ' +
    '-S|--starting-file= --from-file= --to-file= -i|--ignore-case -E|--ignore-tab-expansion ' +
    '-Z|--ignore-trailing-space -b|--ignore-space-change -w|--ignore-all-space -B|--ignore-blank-lines ' +
    '-I|--ignore-matching-lines= -a|--text --strip-trailing-cr -D|--ifdef= --line-format= ' +
    '--old-line-format= --new-line-format= --unchanged-line-format= --old-group-format= ' +
    '--new-group-format= --changed-group-format= --unchanged-group-format= -d|--minimal ' +
    '--horizon-lines= --speed-large-files --color[=] --palette= --normal --help -v|--version ' +
    '--diff-program=:run --to-program=:run',
)
program(
  'diff3',
  '-A|--show-all -e|--ed -E|--show-overlap -x|--overlap-only -X -3|--easy-only -i -m|--merge -a|--text ' +
    '--strip-trailing-cr -T|--initial-tab --diff-program=:run -L|--label=',
)
program(
  'sdiff',
  '-o|--output=:write -i|--ignore-case -E|--ignore-tab-expansion -Z|--ignore-trailing-space ' +
    '-b|--ignore-space-change -W|--ignore-all-space -B|--ignore-blank-lines -I|--ignore-matching-lines= ' +
    '--strip-trailing-cr -a|--text -w|--width= -l|--left-column -s|--suppress-common-lines -t|--expand-tabs ' +
    '--tabsize= -d|--minimal --speed-large-files --diff-program=:run',
)
program(
  'date',
  '-d|--date= --debug -f|--file=:read -I|--iso-8601[=] --resolution -R|--rfc-email --rfc-3339= ' +
    '-r|--reference= -s|--set=:config -u|--utc|--universal --help --version',
)
program('tree', '-o=:write -L= -P= -I= --filelimit= --timefmt= --charset= -H= -T= --fromfile')
program('xxd', '-r|-revert:write -o= -c|-cols= -g|-groupsize= -l|-len= -s|-seek= -n|-name=', {
  style: 'exact',
})
program('base64 gbase64', '-d|--decode -i|--ignore-garbage -w|--wrap= -o|--output=:write -b|--break=')
program('file', '-C|--compile:write -m|--magic-file= -f|--files-from=:read -F|--separator= -P|--parameter=')
program(
  'fd fdfind',
  '-x|--exec=:exec -X|--exec-batch=:exec -e|--extension= -t|--type= -E|--exclude= -d|--max-depth=',
)
program(
  'jq',
  '--arg= --argjson= --slurpfile=:read --rawfile=:read --args --jsonargs -L= -f|--from-file=:read',
  {
    style: 'exact',
  },
)

// ---- archives, transfers, remote shells

program(
  'tar bsdtar gtar',
  '-A|--catenate|--concatenate -c|--create -d|--diff|--compare --delete -r|--append -t|--list ' +
    '--test-label -u|--update -x|--extract|--get --check-device --no-check-device -g|--listed-incremental= ' +
    '-G|--incremental --hole-detection= --ignore-failed-read --level= -n|--seek --no-seek ' +
    '--occurrence[=] --restrict --sparse-version= -S|--sparse -k|--keep-old-files --keep-newer-files ' +
    '--keep-directory-symlink --no-overwrite-dir --one-top-level[=] --overwrite --overwrite-dir ' +
    '--recursive-unlink --remove-files:delete --skip-old-files -U|--unlink-first -W|--verify ' +
    '--ignore-command-error --no-ignore-command-error -O|--to-stdout --to-command=:sh ' +
    '--atime-preserve[=] --delay-directory-restore --no-delay-directory-restore --group= --group-map= ' +
    '--mode= --mtime= -m|--touch --no-same-owner --no-same-permissions --numeric-owner --owner= ' +
    '--owner-map= -p|--preserve-permissions|--same-permissions --same-owner -s|--preserve-order|--same-order ' +
    '--sort= --acls --no-acls --selinux --no-selinux --xattrs --no-xattrs --xattrs-exclude= ' +
    '--xattrs-include= -f|--file= --force-local -F|--info-script|--new-volume-script=:sh -L|--tape-length= ' +
    '-M|--multi-volume --rmt-command=:run --rsh-command=:run --volno-file=:write -b|--blocking-factor= ' +
    '-B|--read-full-records -i|--ignore-zeros --record-size= -H|--format= --old-archive|--portability ' +
    '--pax-option= --posix -V|--label= -a|--auto-compress -I|--use-compress-program=:sh -j|--bzip2 ' +
    '-J|--xz --lzip --lzma --lzop --no-auto-compress -z|--gzip|--gunzip|--ungzip -Z|--compress|--uncompress ' +
    '--zstd --add-file= --backup[=] -C|--directory= --exclude= --exclude-backups --exclude-caches ' +
    '--exclude-caches-all --exclude-caches-under --exclude-ignore= --exclude-ignore-recursive= ' +
    '--exclude-tag= --exclude-tag-all= --exclude-tag-under= --exclude-vcs --exclude-vcs-ignores ' +
    '-h|--dereference --hard-dereference -K|--starting-file= --newer-mtime= --no-null --no-recursion ' +
    '--no-unquote --no-verbatim-files-from --null -N|--newer|--after-date= --one-file-system ' +
    '-P|--absolute-names:write --recursion --suffix= -T|--files-from= --unquote --verbatim-files-from ' +
    '-X|--exclude-from= --strip-components= --transform|--xform= --anchored --ignore-case ' +
    '--no-anchored --no-ignore-case --no-wildcards --no-wildcards-match-slash --wildcards ' +
    '--wildcards-match-slash --checkpoint[=] --checkpoint-action=:sh --full-time --index-file=:write ' +
    '-l|--check-links --no-quote-chars= --quote-chars= --quoting-style= -R|--block-number ' +
    '--show-defaults --show-omitted-dirs --show-snapshot-field-ranges --show-transformed-names ' +
    '--show-stored-names --totals[=] --utc -v|--verbose --warning= -w|--interactive|--confirmation ' +
    '-o --help --usage --version',
)
program(
  'rsync',
  '-e|--rsh=:sh --rsync-path=:sh --delete:delete --delete-before:delete --delete-during:delete ' +
    '--delete-delay:delete --delete-after:delete --delete-excluded:delete --delete-missing-args:delete ' +
    '--del:delete --remove-source-files:delete --log-file=:write --write-batch=:write --only-write-batch=:write ' +
    '--read-batch=:read --files-from=:read --exclude-from=:read --include-from=:read --password-file=:read ' +
    '--filter|-f= --exclude= --include= --temp-dir|-T= --partial-dir= --backup-dir= --compare-dest= ' +
    '--copy-dest= --link-dest= --chmod= --chown= --usermap= --groupmap= --timeout= --contimeout= ' +
    '--port= --address= --sockopts= --outbuf= --block-size|-B= --max-size= --min-size= --max-delete= ' +
    '--modify-window= --suffix= --out-format= --log-file-format= --bwlimit= --checksum-choice= ' +
    '--compress-choice= --compress-level= --skip-compress= --iconv= --protocol= --checksum-seed= ' +
    '-M|--remote-option= --info= --debug= --stop-after= --stop-at= --config= -a|--archive -r|--recursive ' +
    '-v|--verbose -z|--compress -n|--dry-run -u|--update -P -h|--human-readable -q|--quiet',
)
const SSH_OPTIONS =
  '-4 -6 -A -a -C -f -G -g -K -k -M -N -n -q -s -T -t -V -v -X -x -Y -y -B= -b= -c= -D= -E= -e= -F=:source ' +
  '-I= -i= -J= -L= -l= -m= -O= -o= -p= -Q= -R= -S= -W= -w='
program('ssh', SSH_OPTIONS, { style: 'exact', posix: true })
program(
  'scp sftp',
  '-3 -4 -6 -A -B -C -p -q -R -r -T -v -O -s -c= -D= -F=:source -i= -J= -l= -o= -P= -S=:run -X=',
  { style: 'exact' },
)
program(
  'zip',
  '-TT|--unzip-command=:sh -T|--test -O|--output-file=:write -b|--temp-path= -x|--exclude= -i|--include= ' +
    '-t|--from-date= -tt|--before-date= -n|--suffixes= -P|--password= -Z|--compression-method= -s|--split-size= ' +
    '-sb|--split-bell -m|--move:delete -d|--delete:delete -ds= -dg -dd -db -dc -du -dv -la -lf= -li -lu -sp ' +
    '-UN= -ws -ic -nw -e -r -q -v -u -f -FS',
  { style: 'single-dash' },
)
program(
  'man',
  '-P|--pager=:sh -H|--html[=]:sh -C|--config-file=:source -M|--manpath= -L|--locale= -S|-s= -E= -R=',
)
program(
  'script',
  '-c|--command=:sh -E|--echo= -I|--log-in=:write -O|--log-out=:write -B|--log-io=:write -T|--log-timing=:write -m|--logging-format= -a|--append -e|--return -f|--flush -q|--quiet',
)

// ---- build tools

program(
  'make gmake',
  '-b -m -B|--always-make -C|--directory=:config -d --debug[=] -e|--environment-overrides:config ' +
    '-E|--eval=:code -f|--file|--makefile=:source -h|--help -i|--ignore-errors -I|--include-dir=:config ' +
    '-j|--jobs[=] --jobserver-style= -k|--keep-going -l|--load-average[=] -L|--check-symlink-times ' +
    '-n|--just-print|--dry-run|--recon -o|--old-file|--assume-old= -O|--output-sync[=] ' +
    '-p|--print-data-base -q|--question -r|--no-builtin-rules -R|--no-builtin-variables --shuffle[=] ' +
    '-s|--silent|--quiet --no-silent -S|--no-keep-going|--stop -t|--touch:write --trace -v|--version ' +
    '-w|--print-directory --no-print-directory -W|--what-if|--new-file|--assume-new= ' +
    '--warn-undefined-variables',
  { assignments: 'config' },
)
const GO_BUILD =
  '-a -n -p= -race -msan -asan -cover -coverpkg= -covermode= -v -work -x -asmflags= -buildmode= -buildvcs= ' +
  '-compiler= -gccgoflags= -gcflags= -installsuffix= -ldflags= -linkshared -mod= -modcacherw -modfile=:config ' +
  '-overlay=:config -pgo= -pkgdir= -tags= -trimpath -toolexec=:sh -C=:config -o=:write -exec=:sh -json'
program('go', '-C=:config', {
  style: 'single-dash',
  posix: true,
  subcommands: {
    common: GO_BUILD,
    specs: {
      test:
        '-c -args -bench= -benchmem -benchtime= -blockprofile=:write -blockprofilerate= -count= ' +
        '-coverprofile=:write -cpu= -cpuprofile=:write -failfast -fullpath -fuzz= -fuzzcachedir= ' +
        '-fuzzminimizetime= -fuzztime= -list= -memprofile=:write -memprofilerate= -mutexprofile=:write ' +
        '-mutexprofilefraction= -outputdir=:write -parallel= -run= -short -shuffle= -skip= -timeout= ' +
        '-trace=:write -vet=',
      vet: '-vettool=:run',
      env: '-w:config -u:config',
    },
    effects: {
      run: 'exec',
      generate: 'exec',
      tool: 'exec',
      get: 'net',
      install: 'net',
      mod: 'net',
      work: 'config',
    },
  },
})
const CARGO =
  '--config=:config -Z=:config -C=:config --manifest-path=:config --target-dir=:config --lockfile-path=:config ' +
  '--registry=:net --index=:net -v|--verbose -q|--quiet --color= --locked --offline --frozen ' +
  '-j|--jobs= -p|--package= -F|--features= --all-features --no-default-features -r|--release --profile= ' +
  '--target= --bin= --example= --test= --bench= --lib --workspace --all --exclude= --message-format= ' +
  '--timings[=] --no-run --no-fail-fast --doc --tests --benches --examples --bins --all-targets ' +
  '--keep-going --list --explain='
program('cargo', CARGO, {
  style: 'exact',
  subcommands: {
    common: CARGO,
    effects: {
      'install publish login owner yank search fetch update add': 'net',
      'run r': 'exec',
    },
  },
})
program(
  'pytest py.test',
  '-p=:source --basetemp=:delete -c|--config-file=:config --rootdir=:config --confcutdir=:config ' +
    '-o|--override-ini=:config --junitxml|--junit-xml=:write --junit-prefix= --log-file=:write ' +
    '--resultlog|--result-log=:write --debug[=]:write --pdbcls=:source --pyargs --import-mode= --pdb --trace ' +
    '-k= -m= -x|--exitfirst --maxfail= -q|--quiet -v|--verbose -s --capture= --tb= -r= ' +
    '-W|--pythonwarnings= --lf|--last-failed --ff|--failed-first --nf|--new-first --sw|--stepwise ' +
    '--co|--collect-only --durations= --durations-min= --ignore= --ignore-glob= --deselect= --cache-clear ' +
    '--runxfail --setup-show --setup-only --setup-plan --fixtures --markers --strict-markers --strict-config ' +
    '-n|--numprocesses= --dist= --disable-warnings -l|--showlocals --no-header --no-summary --noconftest ' +
    '--log-level= --log-cli-level= --log-format= --log-date-format= --log-file-level= --color= --timeout= ' +
    '--doctest-modules --doctest-glob= -h|--help --version -V --cov[=] --cov-report= --cov-config=:config',
)
const NPM_COMMON =
  '--script-shell=:run --shell=:run --prefix|-C=:config --registry=:net --userconfig=:config ' +
  '--globalconfig=:config -g|--global:config --location= --node-options=:config --editor=:run ' +
  '--browser=:run --git=:run --call|-c=:sh --cache=:config --workspace|-w= --workspaces|-ws ' +
  '--include-workspace-root --if-present --ignore-scripts --silent|-s --loglevel= --json -d -dd -ddd ' +
  '--dry-run --force|-f --yes|-y --omit= --include= --save-dev|-D --save|-S --no-save --legacy-peer-deps ' +
  '--production --foreground-scripts --package|-p= --long|-l --parseable --depth= --all|-a ' +
  '--version|-v --help|-h --usage --offline --prefer-offline --no-audit --no-fund --no-progress ' +
  '--color= --unicode --ci'
program('npm', NPM_COMMON, {
  posix: true,
  subcommands: {
    common: NPM_COMMON,
    effects: {
      'view info show v outdated search s se find ping audit doctor whoami login logout adduser add-user publish unpublish deprecate dist-tag star stars unstar owner access token team org hook profile repo docs home bugs issues install i in ins inst insta instal isnt isnta isntal isntall add ci clean-install install-clean ic install-test it install-ci-test cit update up upgrade udpate':
        'net',
      'edit explore': 'exec',
      'config c set': 'config',
    },
  },
})

const GIT_DIFF_OUTPUT = '--output=:write --ext-diff:exec --no-ext-diff --textconv:exec --no-textconv --text'
program(
  'git',
  '-c|--config=:config --config-env=:config --exec-path[=]:config --git-dir=:config --work-tree=:config ' +
    '--namespace= -C= --super-prefix= --list-cmds= --attr-source= -p|--paginate:exec -P|--no-pager ' +
    '--no-replace-objects --bare --literal-pathspecs --glob-pathspecs --noglob-pathspecs --icase-pathspecs ' +
    '--no-optional-locks --no-lazy-fetch --html-path --man-path --info-path --version --help',
  {
    posix: true,
    subcommands: {
      common: `${GIT_DIFF_OUTPUT} --filters:exec --upload-pack=:sh --receive-pack=:sh --exec=:sh --template=:config --remote[=]:net`,
      specs: {
        'diff log show whatchanged diff-tree diff-index diff-files range-diff':
          '-O=:read --output-indicator-new= --output-indicator-old= --output-indicator-context=',
        'format-patch': '-o|--output-directory=:write',
        rebase:
          '-x|--exec=:sh -i|--interactive:exec -s|--strategy= -X|--strategy-option= --onto= -S|--gpg-sign[=] ' +
          '-C= --empty= --root --autosquash --autostash --update-refs -f|--force-rebase --no-ff',
        'difftool mergetool':
          '-x|--extcmd=:sh -t|--tool=:exec -y|--no-prompt -g|--gui -d|--dir-diff --tool-help',
        grep:
          '-O|--open-files-in-pager[=]:exec -e= -f=:read --max-depth= -m|--max-count= -A|--after-context= ' +
          '-B|--before-context= -C|--context= --threads= --untracked --no-index --recurse-submodules ' +
          '-i|--ignore-case -n|--line-number -l|--files-with-matches -c|--count -w|--word-regexp -v|--invert-match',
        clone:
          '-c|--config=:config -u|--upload-pack=:sh -o|--origin= -b|--branch= -j|--jobs= --reference= --depth= ' +
          '--separate-git-dir=:config --filter= --server-option=',
        'ls-remote': '-u|--upload-pack=:sh -o|--server-option=',
        fetch: '-u|--update-head-ok -o|--server-option= -j|--jobs= --depth= -f|--force -p|--prune',
        pull: '-o|--server-option= -j|--jobs= --depth= -f|--force -s|--strategy= -X|--strategy-option=',
        push:
          '-f|--force --force-with-lease[=] --force-if-includes --all|--branches --prune --mirror -n|--dry-run ' +
          '--porcelain -d|--delete --tags --follow-tags --no-follow-tags --signed[=] --atomic --no-atomic ' +
          '-o|--push-option= --repo= -u|--set-upstream --thin --no-thin -q|--quiet -v|--verbose --progress ' +
          '--recurse-submodules= --verify --no-verify -4|--ipv4 -6|--ipv6',
        archive: '-o|--output=:write --prefix= --format= --add-file=:read -l|--list -v|--verbose',
        reset:
          '--soft --mixed --hard --merge --keep -q|--quiet --recurse-submodules[=] --no-recurse-submodules ' +
          '-p|--patch -N|--intent-to-add --pathspec-from-file=:read --pathspec-file-nul',
        clean: '-d -f|--force -i|--interactive -n|--dry-run -q|--quiet -e|--exclude= -x -X',
        'checkout switch':
          '-q|--quiet --progress -f|--force --ours --theirs -b= -B= -c|--create= -C|--force-create= ' +
          '-t|--track[=] --no-track --guess --no-guess -l --detach --orphan= --ignore-skip-worktree-bits ' +
          '-m|--merge --conflict= -p|--patch --ignore-other-worktrees --overwrite-ignore ' +
          '--recurse-submodules[=] --pathspec-from-file=:read --overlay --no-overlay --discard-changes',
        restore:
          '-s|--source= -p|--patch -W|--worktree -S|--staged -q|--quiet --progress --ours --theirs ' +
          '-m|--merge --conflict= --ignore-unmerged --ignore-skip-worktree-bits --recurse-submodules[=] ' +
          '--overlay --no-overlay --pathspec-from-file=:read',
        branch:
          '-d|--delete:delete -D:delete -f|--force:write -m|--move:write -M:write -c|--copy:write -C:write -l|--list ' +
          '-a|--all -r|--remotes -v|--verbose -q|--quiet --show-current -t|--track[=]:config --no-track:config ' +
          '-u|--set-upstream-to=:config --unset-upstream:config ' +
          '--edit-description:exec --contains[=] --no-contains[=] --merged[=] --no-merged[=] --sort= ' +
          '--points-at= --format= --color[=] --column[=] --abbrev[=] -i|--ignore-case --create-reflog',
        tag:
          '-a|--annotate:write -s|--sign:write -u|--local-user=:write -f|--force:write -d|--delete:delete ' +
          '-v|--verify -n[=] -l|--list --sort= --contains[=] --no-contains[=] --merged[=] --no-merged[=] ' +
          '--points-at= -m|--message=:write -F|--file=:write -e|--edit:exec --cleanup= --create-reflog --format= ' +
          '--color[=] -i|--ignore-case',
        commit:
          '-a|--all -p|--patch -C|--reuse-message= -c|--reedit-message=:exec --fixup= --squash= --reset-author ' +
          '--short --branch --porcelain --long -z|--null -F|--file=:read --author= --date= -m|--message= ' +
          '-t|--template=:read -s|--signoff -n|--no-verify --verify --allow-empty --allow-empty-message ' +
          '--cleanup= -e|--edit:exec --no-edit --amend --no-post-rewrite -i|--include -o|--only ' +
          '--pathspec-from-file=:read -u|--untracked-files[=] -v|--verbose -q|--quiet --dry-run --status ' +
          '--no-status -S|--gpg-sign[=] --no-gpg-sign --trailer=',
        merge:
          '-s|--strategy= -X|--strategy-option= -m= -F|--file=:read -e|--edit:exec --no-edit --ff --no-ff ' +
          '--ff-only --squash --no-squash --commit --no-commit -S|--gpg-sign[=] --abort --continue --quit ' +
          '--allow-unrelated-histories --no-verify -q|--quiet -v|--verbose',
        stash:
          '-p|--patch -k|--keep-index --no-keep-index -S|--staged -u|--include-untracked -a|--all ' +
          '-q|--quiet -m|--message= --pathspec-from-file=:read',
        'send-email': '--sendmail-cmd=:sh --smtp-server=:run --to-cmd=:sh --cc-cmd=:sh --header-cmd=:sh',
        'submodule bisect filter-branch config': '',
      },
      effects: {
        'fetch pull push clone ls-remote send-email request-pull': 'net',
        'difftool mergetool': 'exec',
      },
    },
  },
)

program(
  'hostname',
  '-F|--file=:config -b|--boot:config -a|--alias -A|--all-fqdns -d|--domain -f|--fqdn|--long ' +
    '-i|--ip-address -I|--all-ip-addresses -s|--short -y|--yp|--nis -n|--node -V|--version -h|--help',
)
program('nc netcat', '-e=:run -c=:sh -l:net -p= -s= -w= -q= -x= -X= -i= -O= -T= -V= -M= -m= -P= -I=')
program(
  'ncat',
  '-e|--exec=:run -c|--sh-exec=:sh --lua-exec=:source -l|--listen:net -p|--source-port= -s|--source= ' +
    '-w|--wait= -i|--idle-timeout= -o|--output=:write -x|--hex-dump=:write --proxy= --proxy-type= -m|--max-conns=',
)
program(
  'split',
  '--filter=:sh -a|--suffix-length= --additional-suffix= -b|--bytes= -C|--line-bytes= -d ' +
    '--numeric-suffixes[=] -x --hex-suffixes[=] -e|--elide-empty-files -l|--lines= -n|--number= ' +
    '-t|--separator= -u|--unbuffered --verbose',
)
