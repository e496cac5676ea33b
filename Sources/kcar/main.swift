import KcarCLI

#if canImport(Glibc)
    import Glibc
#endif

exit(CLI.main(Array(CommandLine.arguments.dropFirst()), program: CommandLine.arguments.first ?? "kcar"))
