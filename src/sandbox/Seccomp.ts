/**
 * The seccomp filter of a sandboxed command (classic BPF, as bubblewrap's `--seccomp FD`
 * loads it). Pure: the program's bytes.
 *
 * A network namespace cuts off the network and abstract unix sockets, but not unix sockets
 * bound to paths: the file system is readable, so a command could still talk to the Docker
 * daemon, an ssh or gpg agent, or a D-Bus bus wherever their sockets are. The filter makes
 * `socket(AF_UNIX, …)` and `socket(AF_VSOCK, …)` (a virtual machine's host) fail with EPERM,
 * and `io_uring_setup` too (io_uring can make sockets without the `socket` call).
 * `socketpair` stays allowed (pipes between processes of the command). The compat ABIs
 * cannot be inspected the same way (i386 `socketcall` takes a pointer): there `socketcall` is
 * refused whole, as is every x32 call.
 */

type Arch = "x64" | "arm64"

const AF_UNIX = 1
const AF_VSOCK = 40
const EPERM = 1

const RET_ALLOW = 0x7fff0000
const RET_ERRNO = 0x00050000

// BPF opcodes.
const LD_W_ABS = 0x20
const JEQ_K = 0x15
const JGE_K = 0x35
const RET_K = 0x06

const OFFSET_NR = 0
const OFFSET_ARCH = 4
const OFFSET_ARG0 = 16

interface Abi {
  readonly arch: number
  readonly socket: number
  readonly ioUringSetup: number
  /** `socketcall` (the compat ABIs multiplex socket calls through it). */
  readonly socketcall?: number | undefined
  /** Numbers at or above this are refused (x32 on x86-64). */
  readonly refuseFrom?: number | undefined
}

const ABIS: Record<Arch, { readonly native: Abi; readonly compat: Abi }> = {
  x64: {
    native: { arch: 0xc000003e, socket: 41, ioUringSetup: 425, refuseFrom: 0x40000000 },
    compat: { arch: 0x40000003, socket: 359, ioUringSetup: 425, socketcall: 102 }
  },
  arm64: {
    native: { arch: 0xc00000b7, socket: 198, ioUringSetup: 425 },
    compat: { arch: 0x40000028, socket: 281, ioUringSetup: 425, socketcall: 102 }
  }
}

type Insn =
  | { readonly op: "ld"; readonly offset: number }
  | { readonly op: "jeq" | "jge"; readonly k: number; readonly yes: string; readonly no: string }
  | { readonly op: "ret"; readonly k: number }
  | { readonly op: "label"; readonly name: string }

/** The checks of one ABI, ending in a return. */
const abiChecks = (abi: Abi, tag: string): Array<Insn> => {
  const insns: Array<Insn> = [{ op: "ld", offset: OFFSET_NR }]
  if (abi.refuseFrom !== undefined) insns.push({ op: "jge", k: abi.refuseFrom, yes: "deny", no: `${tag}1` }, { op: "label", name: `${tag}1` })
  insns.push({ op: "jeq", k: abi.ioUringSetup, yes: "deny", no: `${tag}2` }, { op: "label", name: `${tag}2` })
  if (abi.socketcall !== undefined) insns.push({ op: "jeq", k: abi.socketcall, yes: "deny", no: `${tag}3` }, { op: "label", name: `${tag}3` })
  insns.push(
    { op: "jeq", k: abi.socket, yes: `${tag}socket`, no: "allow" },
    { op: "label", name: `${tag}socket` },
    { op: "ld", offset: OFFSET_ARG0 },
    { op: "jeq", k: AF_UNIX, yes: "deny", no: `${tag}4` },
    { op: "label", name: `${tag}4` },
    { op: "jeq", k: AF_VSOCK, yes: "deny", no: "allow" }
  )
  return insns
}

/** Resolves labels into relative jumps and encodes `struct sock_filter` (little-endian). */
const assemble = (insns: ReadonlyArray<Insn>): Uint8Array => {
  const code = insns.filter((insn) => insn.op !== "label")
  const at = new Map<string, number>()
  let index = 0
  for (const insn of insns) {
    if (insn.op === "label") at.set(insn.name, index)
    else index++
  }
  const bytes = new Uint8Array(code.length * 8)
  const view = new DataView(bytes.buffer)
  code.forEach((insn, i) => {
    const jump = (label: string) => {
      const target = at.get(label)
      const offset = target === undefined ? -1 : target - i - 1
      if (offset < 0 || offset > 255) throw new Error(`seccomp: bad jump to ${label}`)
      return offset
    }
    let op = 0
    let jt = 0
    let jf = 0
    let k = 0
    switch (insn.op) {
      case "ld":
        op = LD_W_ABS
        k = insn.offset
        break
      case "jeq":
      case "jge":
        op = insn.op === "jeq" ? JEQ_K : JGE_K
        k = insn.k
        jt = jump(insn.yes)
        jf = jump(insn.no)
        break
      case "ret":
        op = RET_K
        k = insn.k
        break
      default: {
        const never: never = insn
        throw new Error(`seccomp: unknown instruction ${JSON.stringify(never)}`)
      }
    }
    view.setUint16(i * 8, op, true)
    view.setUint8(i * 8 + 2, jt)
    view.setUint8(i * 8 + 3, jf)
    view.setUint32(i * 8 + 4, k >>> 0, true)
  })
  return bytes
}

/** The filter for this machine's architecture, or undefined where none is written (then unix sockets stay open). */
export const program = (arch: string): Uint8Array | undefined => {
  if (arch !== "x64" && arch !== "arm64") return undefined
  const { native, compat } = ABIS[arch]
  return assemble([
    { op: "ld", offset: OFFSET_ARCH },
    { op: "jeq", k: native.arch, yes: "native", no: "other" },
    { op: "label", name: "native" },
    ...abiChecks(native, "n"),
    { op: "label", name: "other" },
    { op: "jeq", k: compat.arch, yes: "compat", no: "allow" },
    { op: "label", name: "compat" },
    ...abiChecks(compat, "c"),
    { op: "label", name: "allow" },
    { op: "ret", k: RET_ALLOW },
    { op: "label", name: "deny" },
    { op: "ret", k: RET_ERRNO | EPERM }
  ])
}
