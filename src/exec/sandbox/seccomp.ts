/**
 * The sandbox's system-call filter: a classic BPF program, built here (it is a small table), that bwrap
 * installs with `--seccomp FD` before it starts the command. It refuses what would let a command grow a
 * new kernel surface or step around the sandbox: new namespaces, mounts, keyrings, eBPF, perf, userfaultfd,
 * io_uring, looking into other processes, loading kernels and modules. Everything else is allowed; the
 * namespaces, the read-only root and the dropped capabilities do the rest.
 *
 * A call made through another ABI than the worker's own (32-bit x86 by `int 0x80`, the x32 ABI, AArch32)
 * has other numbers, so it cannot be judged by this table: the process is killed instead.
 */
import { existsSync, renameSync, writeFileSync } from 'node:fs'
import { endianness } from 'node:os'
import { join } from 'node:path'
import { socketRoot } from '../sockets.js'
import { OFF_HINT, SandboxUnavailableError } from './errors.js'

const EPERM = 1
const ENOSYS = 38

// Classic BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h).
const LD_W_ABS = 0x20
const JEQ_K = 0x15
const JGE_K = 0x35
const JSET_K = 0x45
const RET_K = 0x06
const RET_ALLOW = 0x7fff0000
const RET_ERRNO = 0x00050000
const RET_KILL_PROCESS = 0x80000000

// Offsets into struct seccomp_data: the call's number, the ABI it came through, its first argument's low word.
const NR = 0
const ARCH = 4
const ARG0_LOW = 16

/** clone/unshare flags that make a namespace: NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWTIME. */
const CLONE_NEW_ANY =
  0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x80
/** On x86-64, a call number with this bit set is an x32-ABI call. */
const X32_SYSCALL_BIT = 0x40000000

/** A call's number on x86-64 and on arm64 (arch/x86/entry/syscalls/syscall_64.tbl; the generic table). */
type Numbers = readonly [x64: number, arm64: number]

/** Refused with EPERM, whatever the arguments. */
const REFUSED: ReadonlyArray<Numbers> = [
  [308, 268], // setns: joining another namespace
  [165, 40], // mount: changing the mounts the sandbox is made of
  [166, 39], // umount2: uncovering what a mount hides
  [155, 41], // pivot_root: swapping the root the sandbox built
  [428, 428], // open_tree: the new mount API, copying a mount
  [429, 429], // move_mount: attaching one
  [430, 430], // fsopen: making a file system
  [431, 431], // fsconfig: configuring it
  [432, 432], // fsmount: turning it into a mount
  [433, 433], // fspick: reconfiguring a mounted file system
  [442, 442], // mount_setattr: making a read-only mount writable
  [467, 467], // open_tree_attr: copying a mount with new attributes
  [250, 219], // keyctl: kernel keyrings are not namespaced, so another run's keys are there
  [248, 217], // add_key: the same keyrings
  [249, 218], // request_key: the same keyrings, and it can start a helper on the host
  [321, 280], // bpf: programs that run inside the kernel
  [298, 241], // perf_event_open: kernel profiling, a large and leaky surface
  [323, 282], // userfaultfd: stalls the kernel mid-copy, a staple of exploits
  [425, 425], // io_uring_setup: io_uring runs the calls it queues where this filter never sees them
  [426, 426], // io_uring_enter
  [427, 427], // io_uring_register
  [101, 117], // ptrace: controlling another process (and stepping around its filter)
  [310, 270], // process_vm_readv: reading another process's memory
  [311, 271], // process_vm_writev: writing it
  [438, 438], // pidfd_getfd: taking another process's open files
  [312, 272], // kcmp: comparing another process's kernel objects
  [246, 104], // kexec_load: loading a new kernel
  [320, 294], // kexec_file_load: the same, from a file
  [175, 105], // init_module: loading kernel code
  [313, 273], // finit_module: the same, from a file
  [176, 106], // delete_module: unloading kernel code
  [304, 265], // open_by_handle_at: opening a file by handle, past every path check
  [103, 116], // syslog: the kernel log holds kernel addresses
]
/** Refused only with a namespace flag: plain clone is how every process starts, plain unshare is harmless. */
const NAMESPACING: ReadonlyArray<Numbers> = [
  [56, 220], // clone
  [272, 97], // unshare
]
/** clone3: its flags sit in memory, where a filter cannot look; ENOSYS, so libc falls back to clone. */
const CLONE3: Numbers = [435, 435]

const ARCHES = {
  // AUDIT_ARCH_X86_64, AUDIT_ARCH_AARCH64 (linux/audit.h)
  x64: 0xc000003e,
  arm64: 0xc00000b7,
} as const
export type FilterArch = keyof typeof ARCHES

/** The architecture this worker runs on, if the filter knows its table; else one line saying it does not. */
export function filterArch(arch: string = process.arch): FilterArch {
  if (arch === 'x64' || arch === 'arm64') return arch
  throw new SandboxUnavailableError(
    `the sandbox's system-call filter knows x86-64 and arm64, and this worker runs on ${arch}; ` +
      `run workers on one of those, ${OFF_HINT}`,
  )
}

interface Instruction {
  code: number
  /** Jump targets by label (resolved to offsets when the program is assembled). */
  jt?: string
  jf?: string
  k: number
}

/** The filter for `arch`, as the bytes of a `struct sock_filter` array (what bwrap's `--seccomp` reads). */
export function seccompFilter(arch: FilterArch): Buffer {
  const column = arch === 'x64' ? 0 : 1
  const program: Array<Instruction | { label: string }> = [
    { code: LD_W_ABS, k: ARCH },
    { code: JEQ_K, k: ARCHES[arch], jf: 'kill' },
    { code: LD_W_ABS, k: NR },
  ]
  if (arch === 'x64') program.push({ code: JGE_K, k: X32_SYSCALL_BIT, jt: 'kill' })
  for (const numbers of REFUSED) program.push({ code: JEQ_K, k: numbers[column], jt: 'eperm' })
  for (const numbers of NAMESPACING) program.push({ code: JEQ_K, k: numbers[column], jt: 'flags' })
  program.push(
    { code: JEQ_K, k: CLONE3[column], jt: 'enosys' },
    { code: RET_K, k: RET_ALLOW },
    { label: 'flags' },
    { code: LD_W_ABS, k: ARG0_LOW },
    { code: JSET_K, k: CLONE_NEW_ANY, jt: 'eperm' },
    { code: RET_K, k: RET_ALLOW },
    { label: 'eperm' },
    { code: RET_K, k: RET_ERRNO | EPERM },
    { label: 'enosys' },
    { code: RET_K, k: RET_ERRNO | ENOSYS },
    { label: 'kill' },
    { code: RET_K, k: RET_KILL_PROCESS },
  )
  return assemble(program)
}

function assemble(program: Array<Instruction | { label: string }>): Buffer {
  const at = new Map<string, number>()
  const instructions: Instruction[] = []
  for (const item of program) {
    if ('label' in item) at.set(item.label, instructions.length)
    else instructions.push(item)
  }
  const buffer = Buffer.alloc(instructions.length * 8)
  const little = endianness() === 'LE'
  instructions.forEach((instruction, index) => {
    // A jump counts from the instruction after it; "no label" falls through (offset 0).
    const offset = (label: string | undefined) => {
      if (label === undefined) return 0
      const target = at.get(label)
      const jump = target === undefined ? -1 : target - index - 1
      if (jump < 0 || jump > 255) throw new Error(`seccomp filter: jump to ${label} out of range`)
      return jump
    }
    const base = index * 8
    if (little) buffer.writeUInt16LE(instruction.code, base)
    else buffer.writeUInt16BE(instruction.code, base)
    buffer.writeUInt8(offset(instruction.jt), base + 2)
    buffer.writeUInt8(offset(instruction.jf), base + 3)
    if (little) buffer.writeUInt32LE(instruction.k >>> 0, base + 4)
    else buffer.writeUInt32BE(instruction.k >>> 0, base + 4)
  })
  return buffer
}

/**
 * The filter for this worker's architecture, in a file the launch shell opens for bwrap (a descriptor
 * bwrap reads and closes, so the command never holds it). It lives in the process's private folder for
 * tether's sockets, which goes when the process goes; written again if something removed it.
 */
export function seccompFilterFile(): string {
  const path = join(socketRoot(), 'seccomp.bpf')
  if (!existsSync(path)) {
    writeFileSync(`${path}.new`, seccompFilter(filterArch()), { mode: 0o444 })
    renameSync(`${path}.new`, path)
  }
  return path
}
