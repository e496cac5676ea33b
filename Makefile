# kcar: make demo (set up, build, pack/list/verify/extract a sample, use a keychain), make test, make bench
# (bench-keychain; the benchmark binaries are a package of their own, Benchmarks/), make fixtures, make fuzz
# (libFuzzer targets, Fuzz/README.md).
# make install (PREFIX, DESTDIR), make uninstall. make interop: the Python SPEC readers over the fixtures.
# deps installs the Debian packages the build needs (make demo installs only these); test-deps adds what the tests
# and the SPEC interop check need (python3-nacl for the readers written from SPEC.md; man-db, groff-base, zsh and
# fish: the tests render the man page and load the completions; dbus-daemon, libsecret-tools, python3-secretstorage
# and gnome-keyring: the Secret Service tests run a private bus, secret-tool, a secretstorage client, and the
# reference server).
SHELL := /bin/bash
BUILD_PACKAGES := libsodium-dev zlib1g-dev libdeflate-dev libssl-dev libsystemd-dev pkg-config
APT_PACKAGES := $(BUILD_PACKAGES) python3-nacl man-db groff-base zsh fish dbus-daemon libsecret-tools python3-secretstorage gnome-keyring
KCAR = .build/release/kcar
# Every release build is scripts/swift-release, here and in scripts/bench (one set of flags, so no command relinks
# .build/release under another): the Swift runtime and libstdc++ linked in, so the binary needs no Swift toolchain
# (only glibc, libgcc_s, libsodium, zlib and libdeflate) and starts faster (no Swift or C++ libraries to load).
SWIFT_RELEASE = scripts/swift-release
# The benchmark binaries (kcar-bench, kcar-scale-bench, kcar-archive-bench, kcar-keychain-bench) are built in
# Benchmarks/, a package that depends on this one by path, into Benchmarks/.build: neither `make test` nor a
# package that depends on kcar compiles them. The scripts in scripts/bench build what they run.
BENCH_RELEASE = $(SWIFT_RELEASE) --package-path Benchmarks

# make install: the release binary, the man page kcar(1) and the bash, zsh and fish completions, the last three
# printed by the binary itself from its command table (kcar help --man, kcar completion SHELL), so they
# describe exactly the commands and options it accepts. `make && sudo make install` builds as you, installs as root.
PREFIX ?= /usr/local
DESTDIR ?=
BINDIR = $(DESTDIR)$(PREFIX)/bin
MAN1DIR = $(DESTDIR)$(PREFIX)/share/man/man1
BASHDIR = $(DESTDIR)$(PREFIX)/share/bash-completion/completions
ZSHDIR = $(DESTDIR)$(PREFIX)/share/zsh/site-functions
FISHDIR = $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
# kcar secret-service started on demand: a D-Bus activation file for org.freedesktop.secrets (under PREFIX=$HOME/.local
# or /usr/local it comes before gnome-keyring's /usr/share one) and a systemd user unit it hands activation to.
DBUSDIR = $(DESTDIR)$(PREFIX)/share/dbus-1/services
UNITDIR = $(DESTDIR)$(PREFIX)/lib/systemd/user

.PHONY: all deps test-deps install-packages build install uninstall demo test hostile consumer bench bench-keychain bench-scale bench-library bench-merge bench-secret-service fixtures fuzz clean docs

all: build

deps:
	@$(MAKE) --no-print-directory install-packages PACKAGES="$(BUILD_PACKAGES)"

test-deps:
	@$(MAKE) --no-print-directory install-packages PACKAGES="$(APT_PACKAGES)"

install-packages:
	@missing=""; for p in $(PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq $$missing; \
		else echo "missing:$$missing (run as root or: sudo apt-get install$$missing)"; exit 1; fi; fi

build: deps
	$(SWIFT_RELEASE) --product kcar
	$(SWIFT_RELEASE) --product kcar-secret-service

# Everything is generated into a temporary folder first, so a failing generator installs nothing.
install: build
	@set -e; t=$$(mktemp -d); trap 'rm -rf "$$t"' EXIT; \
	$(KCAR) help --man > "$$t/kcar.1"; \
	for s in bash zsh fish; do $(KCAR) completion $$s > "$$t/$$s"; done; \
	printf '[D-BUS Service]\nName=org.freedesktop.secrets\nExec=$(PREFIX)/bin/kcar secret-service\nSystemdService=kcar-secret-service.service\n' > "$$t/dbus"; \
	printf '[Unit]\nDescription=kcar Secret Service (org.freedesktop.secrets from the kcar keychain)\n\n[Service]\nType=dbus\nBusName=org.freedesktop.secrets\nExecStart=$(PREFIX)/bin/kcar secret-service\n' > "$$t/unit"; \
	install -d "$(BINDIR)" "$(MAN1DIR)" "$(BASHDIR)" "$(ZSHDIR)" "$(FISHDIR)" "$(DBUSDIR)" "$(UNITDIR)"; \
	install -m 0755 $(KCAR) "$(BINDIR)/kcar"; \
	install -m 0755 $(KCAR)-secret-service "$(BINDIR)/kcar-secret-service"; \
	ln -sf kcar "$(BINDIR)/git-credential-kcar"; ln -sf kcar "$(BINDIR)/docker-credential-kcar"; \
	install -m 0644 "$$t/kcar.1" "$(MAN1DIR)/kcar.1"; \
	install -m 0644 "$$t/bash" "$(BASHDIR)/kcar"; \
	install -m 0644 "$$t/zsh" "$(ZSHDIR)/_kcar"; \
	install -m 0644 "$$t/fish" "$(FISHDIR)/kcar.fish"; \
	install -m 0644 "$$t/dbus" "$(DBUSDIR)/org.freedesktop.secrets.service"; \
	install -m 0644 "$$t/unit" "$(UNITDIR)/kcar-secret-service.service"; \
	echo "installed $(BINDIR)/kcar (and git-credential-kcar, docker-credential-kcar, kcar-secret-service), $(MAN1DIR)/kcar.1, the bash, zsh and fish completions, and kcar secret-service's D-Bus activation file and systemd user unit"

uninstall:
	rm -f "$(BINDIR)/kcar" "$(BINDIR)/kcar-secret-service" "$(BINDIR)/git-credential-kcar" "$(BINDIR)/docker-credential-kcar" "$(MAN1DIR)/kcar.1" "$(BASHDIR)/kcar" "$(ZSHDIR)/_kcar" "$(FISHDIR)/kcar.fish" "$(DBUSDIR)/org.freedesktop.secrets.service" "$(UNITDIR)/kcar-secret-service.service"

demo: build
	@set -e; d=$$(mktemp -d); trap 'rm -rf "$$d"' EXIT; cd "$$d"; k="$(CURDIR)/$(KCAR)"; \
	mkdir -p sample/github.com/tokens sample/db.internal; \
	printf 'ghp_example_token\n' > sample/github.com/tokens/ci; \
	printf '{"user":"app","password":"s3cret"}\n' > sample/db.internal/credentials.json; \
	head -c 300000 /dev/urandom > sample/db.internal/backup.key; \
	export HOME="$$d/home" XDG_STATE_HOME="$$d/state" KCAR_KEYCHAIN="$$d/keychain"; \
	echo "# in $$d, with HOME=\$$PWD/home (the demo's keychain and state stay there, removed at the end)"; \
	run() { echo "+ kcar $$*"; "$$k" "$$@"; }; \
	run keygen demo.key; \
	run pack demo.kcv sample --key-file demo.key; \
	run list demo.kcv --key-file demo.key; \
	run verify demo.kcv --key-file demo.key; \
	run extract demo.kcv -C out --key-file demo.key; \
	diff -r sample out && echo "extracted tree is identical to the sample"; \
	run info demo.kcv --key-file demo.key; \
	run init; \
	echo "+ printf ghp_example | kcar add --group com.example.shared --service github.com --account ci --attr team=ops"; \
	printf ghp_example | "$$k" add --group com.example.shared --service github.com --account ci --attr team=ops; \
	run find --attr team=ops; \
	run get --service github.com --account ci; echo; \
	run groups

# The Python readers in scripts/interop were written from SPEC.md alone (Part 1, Part 2, and Part 4:
# kcar2_reader.py over Fixtures/vault-v2): they must read every fixture too. `make interop` runs only them.
.PHONY: interop
interop: test-deps
	/usr/bin/python3 scripts/interop/check_fixtures.py --quiet
	/usr/bin/python3 scripts/interop/check_fixtures_v2.py --quiet
	/usr/bin/python3 scripts/interop/check_archives.py --quiet

# The code's layout is swift-format's, configured in .swift-format (4 spaces, 120 columns): `make format`
# rewrites it, `make lint` (the first step of `make test`, so of CI) fails on any difference. Examples/PortedApp
# is left as ported (the seeds' and libraries' code with only its imports changed).
FORMATTED = Package.swift Sources Tests Fuzz Benchmarks/Package.swift Benchmarks/Sources Examples/LibraryConsumer
.PHONY: format lint
format:
	swift format format --in-place --parallel --recursive $(FORMATTED)
lint:
	swift format lint --strict --parallel --recursive $(FORMATTED)

# Only XCTest runs (no Swift Testing suites), so the last line CI reads is XCTest's count.
test: test-deps
	$(MAKE) lint
	$(MAKE) interop
	$(MAKE) hostile
	$(MAKE) ported
	$(MAKE) consumer
	$(MAKE) docs
	swift build --build-tests
	swift test --skip-build --disable-swift-testing

# Builds the example package in folder $(1) (a package of its own that depends on kcar by path, built in its own
# .build) and runs $(2), a list of `run PRODUCT [ARGUMENTS]`, in one empty environment (env -i: a new HOME and
# PATH, nothing else), each command echoed.
run-example = set -e; cd $(1); swift build; h=$$(mktemp -d); trap 'rm -rf "$$h"' EXIT; \
	bin="$$(swift build --show-bin-path)"; \
	run() { echo "+ env -i HOME=$$h PATH=... $$*"; p="$$1"; shift; env -i HOME="$$h" PATH="$$PATH" "$$bin/$$p" "$$@"; }; \
	$(2)

# The app ported from iOS (Examples/PortedApp): the seeds, Apple's samples and KeychainAccess's, Valet's and
# keychain-swift's calls with only their imports changed (kcar's library modules built again: about 2-3 minutes
# of a cold build on 2 cores), run twice, as two launches of the app.
.PHONY: ported
ported: test-deps
	@$(call run-example,Examples/PortedApp,run ported-app; run ported-app again)

# A program that uses the codec library through its public API only (Examples/LibraryConsumer): keys from
# files, a new vault, a deploy's commit with dates stamped and keys refused or replaced, lookups by key and by
# indexed attribute, 64 tasks on one SharedVault, errors, history, merge, upgrade. It names the first step that
# does not do what the documentation says.
.PHONY: consumer
consumer: test-deps
	@$(call run-example,Examples/LibraryConsumer,run library-consumer)

# Crafted hostile inputs (each at most 20 MB) handed to every command as a whole process: each must be refused
# or processed within 512 MiB peak RSS and 10 s of CPU, with a documented exit code (Sources/kcar-hostile): 120
# cases of issue 9 and later, and 158 of version 2 vaults made with the key (v2/, issue 21 point 8).
# HOSTILE_ARGS, e.g. --only plist/ -v, or --keep DIR to keep the crafted files.
hostile: test-deps
	$(SWIFT_RELEASE) --product kcar && $(SWIFT_RELEASE) --product kcar-hostile
	.build/release/kcar-hostile $(HOSTILE_ARGS)

fixtures:
	swift run kcar-fixtures .

# Fixtures/certs from Debian's ca-certificates, their expected fields taken with OpenSSL (SPEC.md §K3.1).
.PHONY: cert-fixtures
cert-fixtures:
	scripts/certs/make_fixtures.sh

# The peers (pigz, age, 7z), hyperfine and GNU time come from Debian's packages; installed when root.
BENCH_PACKAGES := pigz age p7zip-full hyperfine time
# The list rate's vault sizes; each part writes its figures to .build/bench/, and table.py prints issue 24's
# table from them at the end (each figure with its peer of the same run and the target).
LIST_BENCH_SIZES ?= 100000
bench: deps
	@missing=""; for p in $(BENCH_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ] && [ "$$(id -u)" = 0 ]; then apt-get install -y -qq $$missing; fi
	$(SWIFT_RELEASE) --product kcar
	$(BENCH_RELEASE)
	rm -rf .build/bench && mkdir -p .build/bench
	bash scripts/bench/bench.sh --levels --json $(CURDIR)/.build/bench/archive.json $(BENCH_ARGS)
	$(MAKE) bench-keychain KEYCHAIN_BENCH_ARGS="$(KEYCHAIN_BENCH_ARGS) --json $(CURDIR)/.build/bench/keychain.json"
	bash scripts/bench/stream-bench.sh --sizes "$(LIST_BENCH_SIZES)" --json $(CURDIR)/.build/bench/list.json
	$(MAKE) bench-secret-service SECRET_BENCH_ARGS="$(SECRET_BENCH_ARGS) --json $(CURDIR)/.build/bench/secret-service.json"
	python3 scripts/bench/table.py .build/bench/*.json

# Issue 10's table: a v1 vault, a v2 (paged) vault and SQLite at 1k, 10k, 100k items (SCALE_ARGS=--million adds 1M),
# in process; then the same through the kcar binary on a keychain group (import, get, find, add) against sqlite3;
# then the streaming commands (list, verify, extract --items, git textconv) on v2 vaults of 10k, 100k and 1M items,
# wall time and peak RSS (STREAM_ARGS, e.g. --sizes "10000 100000" --runs 5, or --kcar PATH for another build).
bench-scale: deps
	bash scripts/bench/scale-bench.sh $(SCALE_ARGS)
	bash scripts/bench/keychain-scale.sh $(SCALE_ARGS)
	bash scripts/bench/stream-bench.sh $(STREAM_ARGS)

# Issue 26's lookup: one item by service and account through the library (in process, and as a process) against
# `kcar get` and sqlite3, on a keychain group of 50,000 and of 1,000,000 items (the import takes minutes).
bench-library: deps
	bash scripts/bench/keychain-scale.sh --sizes "50000 1000000" $(LIBRARY_BENCH_ARGS)

# Issue 11's merge: `kcar merge` of two 10,000-item copies with 100 changes each side against the manual path
# (age -d, git merge-file, age -r), and `kcar git textconv`, as whole processes (hyperfine, age installed when
# root). MERGE_BENCH_ARGS, e.g. --items 100000 --runs 11.
bench-merge: deps
	bash scripts/bench/merge-bench.sh $(MERGE_BENCH_ARGS)

# The keychain against keepassxc-cli and a SQLite table (scripts/bench/keychain-bench.sh installs keepassxc,
# sqlite3 and hyperfine when root). KEYCHAIN_BENCH_ARGS, e.g. --runs 60 --keep.
bench-keychain: deps
	bash scripts/bench/keychain-bench.sh $(KEYCHAIN_BENCH_ARGS)

# Issue 25's figures: store and lookup of one secret through secret-tool, kcar secret-service against
# gnome-keyring-daemon on private buses in one run, and a lookup among N items (SECRET_BENCH_ARGS, e.g. --items 2000).
bench-secret-service: test-deps
	bash scripts/bench/secret-service-bench.sh $(SECRET_BENCH_ARGS)

# libFuzzer targets, built apart from SwiftPM into .build-fuzz/ and run FUZZ_SECONDS each (under nice -n 19).
# FUZZ_TARGET: header, index, record, archive, plist, cli or all. Fuzz/README.md says how to run for hours.
FUZZ_SECONDS ?= 60
FUZZ_TARGET ?= all
# DocC for the three library products, offline: symbol graphs from a build of KcarKeychain (which builds the
# other two) in a folder of its own (.build/docs-build, so the normal build is not redone), then `docc convert`
# of each Sources/M/M.docc catalog with its module's graphs, warnings as errors. Archives in
# .build/docs/M.doccarchive (`docc preview` or any static server). Fails when a public symbol of a library has
# no doc comment (scripts/docs/undocumented.py, which lists them). Run by `make test`.
DOCS_MODULES = VaultFormat KeyedArchive KcarKeychain
docs: deps
	swift build --scratch-path .build/docs-build --target KcarKeychain \
		-Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc $(CURDIR)/.build/docs-build/graphs
	set -e; for m in $(DOCS_MODULES); do \
		rm -rf .build/docs-build/graphs-$$m .build/docs/$$m.doccarchive; mkdir -p .build/docs-build/graphs-$$m .build/docs; \
		cp .build/docs-build/graphs/$$m.symbols.json .build/docs-build/graphs-$$m/; \
		cp .build/docs-build/graphs/$$m@*.symbols.json .build/docs-build/graphs-$$m/ 2>/dev/null || true; \
		docc convert Sources/$$m/$$m.docc --additional-symbol-graph-dir .build/docs-build/graphs-$$m \
			--fallback-display-name $$m --fallback-bundle-identifier org.kcar.$$m \
			--output-path .build/docs/$$m.doccarchive --warnings-as-errors; \
	done
	@set -e; u=.build/docs-build/undocumented.txt; for m in $(DOCS_MODULES); do \
	if python3 scripts/docs/undocumented.py .build/docs-build/graphs $$m > $$u; then tail -1 $$u; \
	else cat $$u; echo "document every public symbol of $$m"; exit 1; fi; done
	@echo "documentation: $(foreach m,$(DOCS_MODULES),.build/docs/$(m).doccarchive)"

fuzz: deps
	bash scripts/fuzz/run.sh $(FUZZ_TARGET) $(FUZZ_SECONDS)

clean:
	rm -rf .build .build-fuzz $(PORTED)/.build Benchmarks/.build
