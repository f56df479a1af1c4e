/** The parts of the `mvdan-sh` package (mvdan/sh compiled by GopherJS) the reference-parser tests use. */
declare module 'mvdan-sh' {
  interface ShellNode {
    readonly [field: string]: unknown
  }
  const sh: {
    syntax: {
      NewParser(): { Parse(source: string, name: string): ShellNode }
      Walk(node: ShellNode, visit: (node: ShellNode | null) => boolean): void
      NodeType(node: ShellNode): string
    }
  }
  export default sh
}
