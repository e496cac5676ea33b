#if canImport(Glibc)
import Glibc
#endif
import KcarCLI

exit(CLI.main(Array(CommandLine.arguments.dropFirst()), program: CommandLine.arguments.first ?? "kcar"))
